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

/// Where sessions live while an invocation runs.
pub const SESSIONS: Collection = Collection::new("agent_sessions");

/// One session event: who produced it and what it hands over.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionEvent {
    /// The role that produced it.
    pub author: Role,
    /// Output keys and their values.
    pub state_delta: BTreeMap<String, Value>,
}

/// What a session is kept for: the user, the job and the role (inside the workspace that
/// stores it).
///
/// It is stored nested under `key`, not as top-level fields: a store indexes a document's
/// top-level `job` to follow one job's documents, and nothing looks a session up by job (it
/// lives for one invocation), so leaving sessions out of that index spares each invocation
/// two index writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionKey {
    /// Who the invocation runs for.
    pub user: OperatorId,
    /// The job it works on.
    pub job: JobId,
    /// The role invoked.
    pub role: Role,
}

/// A read-only copy of a stored session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    key: SessionKey,
    events: Vec<SessionEvent>,
    created_at: DateTime<Utc>,
}

impl Session {
    /// The events so far.
    pub fn events(&self) -> &[SessionEvent] {
        &self.events
    }

    /// The merged state: later deltas win.
    pub fn state(&self) -> BTreeMap<String, Value> {
        let mut state = BTreeMap::new();
        for e in &self.events {
            state.extend(e.state_delta.clone());
        }
        state
    }

    /// The role invoked.
    pub fn role(&self) -> Role {
        self.key.role
    }

    /// The user, job and role it is kept for.
    pub fn key(&self) -> &SessionKey {
        &self.key
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
    let key = SessionKey { user: user.clone(), job: job.clone(), role };
    let session = Session { key, events: Vec::new(), created_at: Utc::now() };
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

/// Append an event to the open session; returns the read-only session with it.
///
/// The event is not written on its own: the invocation's next commit deletes the session (with
/// its activity record), and what the event hands over becomes durable as the stage's accepted
/// output, so a write here would only be deleted again with nothing reading it in between.
pub fn append(open: &mut Open, event: SessionEvent) -> Session {
    open.session.events.push(event);
    open.session.clone()
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

    /// An open session is stored (the record a crashed invocation leaves) with its key nested:
    /// it reads back whole, and a query following its job does not find it.
    #[tokio::test]
    async fn an_open_session_is_stored_under_its_key_and_not_followed_by_job() {
        use harmonia_store::{MAX_QUERY_LIMIT, Query};
        let dir = harmonia_testkit::temp_dir();
        let store = harmonia_store_sqlite::SqliteStore::open(dir.path().join("s.sqlite")).expect("store");
        let (ws, user, job): (WorkspaceId, OperatorId, JobId) =
            ("ws-1".parse().expect("ws"), "pipeline".parse().expect("user"), "job-1".parse().expect("job"));
        let open = open(&store, &ws, &user, &job, Role::Nimi, "00f067aa0ba902b7").await.expect("open");
        let stored = store.get(&ws, SESSIONS, open.id()).await.expect("get").expect("stored");
        let session: Session = stored.decode().expect("a session");
        assert_eq!(session.key(), &SessionKey { user, job: job.clone(), role: Role::Nimi });
        assert!(session.events().is_empty());
        let by_job = Query::all(MAX_QUERY_LIMIT).filter("job", job.to_string()).expect("query");
        assert!(store.query(&ws, SESSIONS, &by_job).await.expect("query").is_empty());
        assert_eq!(store.query(&ws, SESSIONS, &Query::all(10)).await.expect("query").len(), 1);
    }
}
