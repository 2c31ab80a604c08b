//! Managed sessions, stored through the storage interface (SQLite or Firestore).
//!
//! A session is keyed by (workspace, user, job, role), holds the events of one invocation with
//! their `state_delta`s, and is deleted after success or failure. It is stored when the
//! invocation opens it (the record a crashed invocation leaves behind) and deleted in the
//! commit that records the invocation's activity; its events live in the open session. Callers only ever get a
//! [`Session`] value — a read-only copy — so session state cannot advance the workflow.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use harmonia_contracts::Role;
use harmonia_contracts::ids::{DocId, JobId, OperatorId, WorkspaceId};
use harmonia_store::{Collection, Store, Write, WriteOp, encode, update};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Digest;

/// Where sessions live while an invocation runs: short-lived documents, each deleted by the
/// invocation that wrote it.
pub const SESSIONS: Collection = Collection::short_lived("agent_sessions");

/// One session event: who produced it and what it hands over.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionEvent {
    /// The role that produced it.
    pub author: Role,
    /// Output keys and their values.
    pub state_delta: BTreeMap<String, Value>,
}

/// A read-only copy of a stored session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    user: OperatorId,
    job: JobId,
    role: Role,
    events: Vec<SessionEvent>,
    created_at: DateTime<Utc>,
}

impl Session {
    /// The events so far.
    pub fn events(&self) -> &[SessionEvent] {
        &self.events
    }

    /// The role invoked.
    pub fn role(&self) -> Role {
        self.role
    }
}

/// The id of the session for (user, job, role) inside a workspace; `invocation` (the
/// invocation's span id) keeps two concurrent invocations of the same role apart.
pub fn session_id(user: &OperatorId, job: &JobId, role: Role, invocation: &str) -> DocId {
    let digest = sha2::Sha256::digest(format!("{user}\n{job}\n{role}\n{invocation}").as_bytes());
    DocId::stable(&format!("sess-{}", &hex::encode(digest)[..40]))
}

/// A session while its invocation runs: where it is stored and what it holds (its events so
/// far, kept here, so nothing is read back).
#[derive(Debug)]
pub struct Open {
    id: DocId,
    session: Session,
}

impl Open {
    /// The session's document id.
    pub fn id(&self) -> &DocId {
        &self.id
    }
}

/// Open a fresh session (a stale one left by a crashed invocation is replaced).
pub async fn open(
    store: &dyn Store,
    workspace: &WorkspaceId,
    user: &OperatorId,
    job: &JobId,
    role: Role,
    invocation: &str,
) -> Result<Open, harmonia_store::Error> {
    let id = session_id(user, job, role, invocation);
    let session = Session { user: user.clone(), job: job.clone(), role, events: Vec::new(), created_at: Utc::now() };
    let data = encode(&session)?;
    let create = Write { collection: SESSIONS, id: id.clone(), op: WriteOp::Create(data.clone()) };
    match store.commit(workspace, vec![create]).await {
        Ok(()) => Ok(Open { id, session }),
        Err(harmonia_store::Error::AlreadyExists) => {
            let stale = store.get(workspace, SESSIONS, &id).await?.ok_or(harmonia_store::Error::Conflict)?;
            update(store, workspace, SESSIONS, &id, data, stale.version).await?;
            Ok(Open { id, session })
        }
        Err(e) => Err(e),
    }
}

/// Append an event to the open session.
///
/// The event is not written on its own: the invocation's next commit deletes the session (with
/// its activity record), and what the event hands over becomes durable as the stage's accepted
/// output, so a write here would only be deleted again with nothing reading it in between.
pub fn append(open: &mut Open, event: SessionEvent) {
    open.session.events.push(event);
}

/// The write that deletes the session (idempotent), to commit with the invocation's activity
/// records.
pub fn delete(open: &Open) -> Write {
    Write { collection: SESSIONS, id: open.id.clone(), op: WriteOp::Delete { expected_version: None } }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_id_is_a_stable_digest_of_user_job_role_and_invocation() {
        let (user, job): (OperatorId, JobId) =
            ("pipeline".parse().expect("user"), "j".repeat(128).parse().expect("job"));
        let id = session_id(&user, &job, Role::Nimi, "00f067aa0ba902b7");
        assert_eq!(id, session_id(&user, &job, Role::Nimi, "00f067aa0ba902b7"));
        assert!(id.as_str().starts_with("sess-") && id.as_str().len() == 45, "{id}");
        assert_ne!(id, session_id(&user, &job, Role::Dara, "00f067aa0ba902b7"));
    }

    /// An open session is stored (the record a crashed invocation leaves) and reads back whole,
    /// a short-lived document.
    #[tokio::test]
    async fn an_open_session_is_stored_until_its_invocation_deletes_it() {
        let dir = harmonia_testkit::temp_dir();
        let store = harmonia_store_sqlite::SqliteStore::open(dir.path().join("s.sqlite")).expect("store");
        let (ws, user, job): (WorkspaceId, OperatorId, JobId) =
            ("ws-1".parse().expect("ws"), "pipeline".parse().expect("user"), "job-1".parse().expect("job"));
        let open = open(&store, &ws, &user, &job, Role::Nimi, "00f067aa0ba902b7").await.expect("open");
        assert!(SESSIONS.is_short_lived());
        let stored = store.get(&ws, SESSIONS, open.id()).await.expect("get").expect("stored");
        let session: Session = stored.decode().expect("a session");
        assert_eq!((&session.user, &session.job, session.role()), (&user, &job, Role::Nimi));
        assert!(session.events().is_empty());
        store.commit(&ws, vec![delete(&open)]).await.expect("delete");
        assert!(store.get(&ws, SESSIONS, open.id()).await.expect("get").is_none());
    }
}
