//! Console sessions: what a browser holds instead of a credential.
//!
//! Signing in with an operator credential (or a Google ID token) opens a session: a token
//! `hcs_<workspace>/<secret>` that the console keeps in an HttpOnly cookie, and a CSRF token
//! that the page sends back as `X-CSRF-Token` with every state-changing request. The store
//! keeps, at `console_sessions/{digest}`, only the SHA-256 digest of the session token (as the
//! document id), who it is for, its CSRF token, and when it ends.
//!
//! A session is checked on every request, like a credential: it ends when it expires
//! ([`LIFETIME`] after sign-in), when it is closed (sign-out deletes its record), and — for a
//! session opened with a credential — as soon as that credential is revoked or rotated: the
//! session records the credential's digest and holds only while the operator's record is
//! active with that digest.

use chrono::{DateTime, TimeDelta, Utc};
use harmonia_contracts::ids::{DocId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use harmonia_store::{Collection, Write, WriteOp, encode};
use serde::{Deserialize, Serialize};
use sha2::Digest as _;
use subtle::ConstantTimeEq as _;

use crate::credential::{is_secret, new_secret};
use crate::operators::{OPERATORS, OperatorRecord};
use crate::{Identity, Role};

/// The console sessions of a workspace, one document per open session.
pub const SESSIONS: Collection = Collection::new("console_sessions");

/// Every session token starts with this.
pub const PREFIX: &str = "hcs_";

/// How long a session lasts after sign-in.
pub const LIFETIME: TimeDelta = TimeDelta::hours(12);

/// What a session stands on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Basis {
    /// An operator credential, by the digest its record held at sign-in.
    Credential {
        /// The credential's SHA-256 digest.
        digest: String,
    },
    /// A Google ID token (its principal is mapped by configuration).
    Google,
}

/// A session's stored record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionRecord {
    /// Who signed in.
    pub operator: harmonia_contracts::ids::OperatorId,
    /// Their role at sign-in (a credential session reads the current one).
    pub role: Role,
    /// What it stands on.
    pub basis: Basis,
    /// The CSRF token state-changing requests carry.
    pub csrf: String,
    /// When it was opened.
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub created_at: DateTime<Utc>,
    /// When it ends.
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub expires_at: DateTime<Utc>,
}

/// An open session: its token (for the cookie, shown once) and its CSRF token.
#[derive(Clone, PartialEq, Eq)]
pub struct Opened {
    /// The session token: the cookie's value. Never log it.
    pub token: String,
    /// The CSRF token.
    pub csrf: String,
    /// When it ends.
    pub expires_at: DateTime<Utc>,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opened").field("expires_at", &self.expires_at).finish_non_exhaustive()
    }
}

/// A session that authenticated: who, and the CSRF token its requests must carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    /// Who.
    pub identity: Identity,
    /// The session's CSRF token.
    pub csrf: String,
}

impl Session {
    /// Whether `given` is this session's CSRF token (compared in constant time).
    pub fn csrf_matches(&self, given: &str) -> bool {
        bool::from(self.csrf.as_bytes().ct_eq(given.as_bytes()))
    }
}

fn digest_id(token: &str) -> Result<DocId, Error> {
    hex::encode(sha2::Sha256::digest(token.as_bytes())).parse()
}

/// The workspace a session token names, when it is one.
fn workspace_of(token: &str) -> Option<WorkspaceId> {
    let (workspace, secret) = token.strip_prefix(PREFIX)?.split_once('/')?;
    is_secret(secret).then(|| workspace.parse().ok()).flatten()
}

/// Open a session for `who`, standing on `basis`, at `now`.
pub async fn open(
    store: &dyn harmonia_store::Store,
    who: &Identity,
    basis: Basis,
    now: DateTime<Utc>,
) -> Result<Opened, Error> {
    let token = format!("{PREFIX}{}/{}", who.workspace, new_secret());
    let record = SessionRecord {
        operator: who.operator.clone(),
        role: who.role,
        basis,
        csrf: new_secret(),
        created_at: now,
        expires_at: now + LIFETIME,
    };
    let write = Write { collection: SESSIONS, id: digest_id(&token)?, op: WriteOp::Create(encode(&record)?) };
    store.commit(&who.workspace, vec![write]).await?;
    Ok(Opened { token, csrf: record.csrf, expires_at: record.expires_at })
}

/// The session `token` opened, at `now`: `unauthenticated` when it is not a session token,
/// is unknown, closed or expired, or stands on a credential that is no longer its operator's
/// current one; `store_unavailable` when the store cannot be read.
pub async fn authenticate(
    store: &dyn harmonia_store::Store,
    token: &str,
    now: DateTime<Utc>,
) -> Result<Session, Error> {
    let refused = || Error::from_code(Code::Unauthenticated);
    let workspace = workspace_of(token).ok_or_else(refused)?;
    let Some(doc) = store.get(&workspace, SESSIONS, &digest_id(token)?).await.map_err(Error::from)? else {
        return Err(refused());
    };
    let session: SessionRecord = doc.decode().map_err(Error::from)?;
    if now >= session.expires_at {
        return Err(refused());
    }
    let role = match &session.basis {
        Basis::Google => session.role,
        Basis::Credential { digest } => {
            let id: DocId = session.operator.as_str().parse()?;
            let Some(doc) = store.get(&workspace, OPERATORS, &id).await.map_err(Error::from)? else {
                return Err(refused());
            };
            let record: OperatorRecord = doc.decode().map_err(Error::from)?;
            if !record.is_active() || !bool::from(record.digest.as_bytes().ct_eq(digest.as_bytes())) {
                return Err(refused());
            }
            record.role
        }
    };
    Ok(Session { identity: Identity { operator: session.operator, workspace, role }, csrf: session.csrf })
}

/// Close the session `token` opened (idempotent): it never authenticates again.
pub async fn close(store: &dyn harmonia_store::Store, token: &str) -> Result<(), Error> {
    let workspace = workspace_of(token).ok_or_else(|| Error::from_code(Code::Unauthenticated))?;
    let write = Write { collection: SESSIONS, id: digest_id(token)?, op: WriteOp::Delete { expected_version: None } };
    store.commit(&workspace, vec![write]).await.map_err(Error::from)
}

#[cfg(test)]
mod tests;
