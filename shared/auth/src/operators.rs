//! Operator records in the store: one per operator name in each workspace, at
//! `operators/{name}`, holding the role and the digest of the current credential, never the
//! credential. Every function reads the same records, so a revocation takes effect on the
//! next request everywhere.
//!
//! - [`add`] issues a credential for a new name, or for a name whose record is revoked (its
//!   old credential stays dead: the digest is replaced); an active name is `already_exists`.
//! - [`rotate`] replaces the credential of an active operator in one write, keeping its role
//!   (the way to renew the last admin's credential, which cannot be revoked).
//! - [`revoke`] marks a record revoked; revoking the workspace's last active admin is
//!   `last_admin`. Two admins revoking each other at once cannot both succeed: each revocation
//!   commits only if another active admin it read is unchanged.
//! - [`list`] gives every record as an [`OperatorSummary`], which has no digest.
//! - [`authenticate`] is one direct read of the record the credential names.

use chrono::{DateTime, Utc};
use harmonia_contracts::ids::{DocId, OperatorId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use harmonia_store::{Collection, DEFAULT_ATTEMPTS, MAX_QUERY_LIMIT, Query, Store, Tx, run_transaction};
use serde::{Deserialize, Serialize};

use crate::{Credential, Identity, Role};

/// The operator records of a workspace, one document per operator name.
pub const OPERATORS: Collection = Collection::new("operators");

/// When and by whom a credential was revoked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Revocation {
    /// When.
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub at: DateTime<Utc>,
    /// Who revoked it.
    pub by: OperatorId,
}

/// An operator's stored record. `digest` is the SHA-256 of the current credential; the
/// credential itself is never stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorRecord {
    /// The operator's name (also the document id).
    pub operator: OperatorId,
    /// What the operator may do.
    pub role: Role,
    /// Lowercase hex SHA-256 of the current credential.
    pub digest: String,
    /// When the current credential was issued.
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub created_at: DateTime<Utc>,
    /// Who issued it (an admin's name, or `cli` for the command line).
    pub created_by: OperatorId,
    /// Set once the credential is revoked; it then never authenticates again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked: Option<Revocation>,
}

impl OperatorRecord {
    /// Whether the credential still authenticates.
    pub fn is_active(&self) -> bool {
        self.revoked.is_none()
    }

    /// What may be shown about the record: everything but the digest.
    pub fn summary(&self) -> OperatorSummary {
        OperatorSummary {
            operator: self.operator.clone(),
            role: self.role,
            status: if self.is_active() { Status::Active } else { Status::Revoked },
            created_at: self.created_at,
            created_by: self.created_by.clone(),
            revoked_at: self.revoked.as_ref().map(|r| r.at),
            revoked_by: self.revoked.as_ref().map(|r| r.by.clone()),
        }
    }
}

/// Whether a credential still authenticates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// It does.
    Active,
    /// It was revoked and never will again.
    Revoked,
}

impl Status {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Revoked => "revoked",
        }
    }
}

/// An operator as the API and the command line show it: never the digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorSummary {
    /// The operator's name.
    pub operator: OperatorId,
    /// Its role.
    pub role: Role,
    /// Active or revoked.
    pub status: Status,
    /// When its current credential was issued.
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub created_at: DateTime<Utc>,
    /// Who issued it.
    pub created_by: OperatorId,
    /// When it was revoked, if it was.
    #[serde(default, with = "harmonia_contracts::time::rfc3339_option", skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<DateTime<Utc>>,
    /// Who revoked it, if anyone did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_by: Option<OperatorId>,
}

/// A credential just issued: the only time its text exists outside its holder.
/// `Debug` never shows the credential.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Issued {
    /// The operator's name.
    pub operator: OperatorId,
    /// Its role.
    pub role: Role,
    /// The workspace the credential belongs to.
    pub workspace: WorkspaceId,
    /// The credential, `hop_<workspace>/<operator>/<secret>`.
    pub credential: String,
    /// When it was issued.
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub created_at: DateTime<Utc>,
}

impl std::fmt::Debug for Issued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issued")
            .field("operator", &self.operator)
            .field("role", &self.role)
            .field("workspace", &self.workspace)
            .field("created_at", &self.created_at)
            .finish_non_exhaustive()
    }
}

fn doc_id(operator: &OperatorId) -> Result<DocId, Error> {
    // Operator ids and document ids share one grammar, so this never fails in practice; the
    // parse keeps that an explicit, typed assumption.
    operator.as_str().parse()
}

fn no_active(operator: &OperatorId) -> Error {
    Error::new(Code::NotFound, format!("No active operator named {operator} exists in this workspace."))
}

/// The record at `id` in the transaction, decoded.
async fn read(tx: &mut Tx<'_>, id: &DocId) -> Result<Option<OperatorRecord>, harmonia_store::Error> {
    tx.get(OPERATORS, id).await?.map(|d| d.decode()).transpose()
}

/// Run `attempt` as a transaction that either commits or refuses with a typed error (which
/// commits nothing); conflicts are retried from fresh reads.
async fn transact<T, F, Fut>(attempt: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Result<T, Error>, harmonia_store::Error>>,
{
    run_transaction(DEFAULT_ATTEMPTS, attempt).await.map_err(Error::from)?
}

/// Issue a credential for a new operator `name` with `role`, created by `by`. A revoked name
/// may be reused (its record is replaced, so its old credential stays dead); an active name is
/// `already_exists`.
pub async fn add(
    store: &dyn Store,
    workspace: &WorkspaceId,
    name: &OperatorId,
    role: Role,
    by: &OperatorId,
) -> Result<Issued, Error> {
    let issued = reissue(store, workspace, name, |current| match current.filter(OperatorRecord::is_active) {
        Some(_) => Err(Error::new(
            Code::AlreadyExists,
            format!("An active operator named {name} already exists in this workspace; revoke it first or choose another name."),
        )),
        None => Ok(issue(workspace, name, role, by)),
    })
    .await?;
    tracing::info!(event = "operator_added", workspace = %workspace, operator = %name, role = role.as_str(), "operator credential issued");
    Ok(issued)
}

/// Replace the credential of the active operator `name` (its role unchanged): the old one
/// stops authenticating in the same write that stores the new one's digest.
pub async fn rotate(
    store: &dyn Store,
    workspace: &WorkspaceId,
    name: &OperatorId,
    by: &OperatorId,
) -> Result<Issued, Error> {
    let issued = reissue(store, workspace, name, |current| match current.filter(OperatorRecord::is_active) {
        Some(current) => Ok(issue(workspace, name, current.role, by)),
        None => Err(no_active(name)),
    })
    .await?;
    tracing::info!(event = "operator_rotated", workspace = %workspace, operator = %name, "operator credential replaced");
    Ok(issued)
}

/// Store a new credential's record for `name` in one transaction: `decide` is given the record
/// stored now, if any, and answers the credential and its record (from [`issue`]), or a
/// refusal, which writes nothing. A lost race runs `decide` again on a fresh read.
async fn reissue(
    store: &dyn Store,
    workspace: &WorkspaceId,
    name: &OperatorId,
    decide: impl Fn(Option<OperatorRecord>) -> Result<(Issued, OperatorRecord), Error>,
) -> Result<Issued, Error> {
    let (id, decide) = (&doc_id(name)?, &decide);
    transact(|| async move {
        let mut tx = Tx::begin(store, workspace);
        let (issued, record) = match decide(read(&mut tx, id).await?) {
            Ok(decided) => decided,
            Err(refused) => return Ok(Err(refused)),
        };
        tx.put(OPERATORS, id, harmonia_store::encode(&record)?);
        tx.commit().await?;
        Ok(Ok(issued))
    })
    .await
}

/// A fresh credential for `name` and the record that stores its digest.
fn issue(workspace: &WorkspaceId, name: &OperatorId, role: Role, by: &OperatorId) -> (Issued, OperatorRecord) {
    let credential = Credential::generate(workspace.clone(), name.clone());
    let now = Utc::now();
    let record = OperatorRecord {
        operator: name.clone(),
        role,
        digest: credential.digest(),
        created_at: now,
        created_by: by.clone(),
        revoked: None,
    };
    let issued = Issued {
        operator: name.clone(),
        role,
        workspace: workspace.clone(),
        credential: credential.expose(),
        created_at: now,
    };
    (issued, record)
}

/// Revoke the active operator `name`: its credential stops authenticating on the next request
/// in every function. Unknown or already revoked names are `not_found`; the workspace's last
/// active admin is `last_admin`.
pub async fn revoke(
    store: &dyn Store,
    workspace: &WorkspaceId,
    name: &OperatorId,
    by: &OperatorId,
) -> Result<OperatorSummary, Error> {
    let id = &doc_id(name)?;
    let revoked = transact(|| async move {
        let mut tx = Tx::begin(store, workspace);
        let Some(mut record) = read(&mut tx, id).await?.filter(OperatorRecord::is_active) else {
            return Ok(Err(no_active(name)));
        };
        if record.role == Role::Admin && !another_active_admin(store, &mut tx, name).await? {
            return Ok(Err(Error::new(
                Code::LastAdmin,
                format!("{name} is the workspace's last active admin; add another admin before revoking it."),
            )));
        }
        record.revoked = Some(Revocation { at: Utc::now(), by: by.clone() });
        tx.put(OPERATORS, id, harmonia_store::encode(&record)?);
        tx.commit().await?;
        Ok(Ok(record.summary()))
    })
    .await?;
    tracing::info!(event = "operator_revoked", workspace = %workspace, operator = %name, "operator credential revoked");
    Ok(revoked)
}

/// Whether an active admin other than `name` exists. The one found is read through `tx`, so
/// the revocation commits only if that admin is still unchanged (still active) at commit time.
async fn another_active_admin(
    store: &dyn Store,
    tx: &mut Tx<'_>,
    name: &OperatorId,
) -> Result<bool, harmonia_store::Error> {
    let query = Query::all(MAX_QUERY_LIMIT).filter("role", Role::Admin.as_str())?;
    let admins = harmonia_store::scan(store, tx.workspace(), OPERATORS, query).await?;
    for doc in admins {
        let admin: OperatorRecord = doc.decode()?;
        if &admin.operator == name || !admin.is_active() {
            continue;
        }
        // Re-read inside the transaction: the scan's copy is not part of the read set.
        if read(tx, &doc.id).await?.is_some_and(|r| r.is_active()) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Every operator of the workspace, by name, without digests.
pub async fn list(store: &dyn Store, workspace: &WorkspaceId) -> Result<Vec<OperatorSummary>, Error> {
    let docs = harmonia_store::scan_all(store, workspace, OPERATORS).await.map_err(Error::from)?;
    // A record that does not decode is an error, not a row left out: an operator list that
    // silently omits someone could hide an active credential.
    let mut records: Vec<OperatorRecord> =
        docs.iter().map(|d| d.decode().map_err(Error::from)).collect::<Result<_, _>>()?;
    records.sort_by(|a, b| a.operator.cmp(&b.operator));
    Ok(records.iter().map(OperatorRecord::summary).collect())
}

/// The identity `credential` proves: one direct read of the record it names, which must be
/// active and hold the credential's digest. Anything else is `unauthenticated`, with no hint
/// of which check failed.
pub async fn authenticate(store: &dyn Store, credential: &Credential) -> Result<Identity, Error> {
    let refused = || Error::from_code(Code::Unauthenticated);
    let Ok(id) = doc_id(credential.operator()) else { return Err(refused()) };
    let Some(doc) = store.get(credential.workspace(), OPERATORS, &id).await.map_err(Error::from)? else {
        return Err(refused());
    };
    let record: OperatorRecord = doc.decode().map_err(Error::from)?;
    if !record.is_active() || !credential.matches(&record.digest) {
        tracing::debug!(event = "credential_refused", active = record.is_active(), "operator credential refused");
        return Err(refused());
    }
    Ok(Identity { operator: record.operator, workspace: credential.workspace().clone(), role: record.role })
}

#[cfg(test)]
mod tests;
