//! Workspace configuration versions: every change is a new immutable
//! `workspace_versions/{version:06}` document, and the head record `workspaces/{ws}` names the
//! current one. A job records the version it started with ([`Job::workspace_version`]) and every
//! stage reads that one ([`version_of_job`]), so a change made while a job runs never reaches it.
//!
//! The CLI, `harmonia --cloud` and the operator API's `/v1/workspace` call these functions;
//! [`WorkspaceConfig::from_toml`] / [`WorkspaceConfig::from_value`] check a file first, so an
//! invalid one never reaches the store.

use chrono::Utc;
use harmonia_contracts::domain::{Job, Workspace, WorkspaceConfig, WorkspaceVersion, content_hash};
use harmonia_contracts::ids::{DocId, OperatorId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use harmonia_store::{Store, Tx, encode, run_transaction};

use crate::records::{WORKSPACE_VERSIONS, WORKSPACES, doc_id};

/// The document id of a version: the number zero-padded to six digits, so ids sort by version.
pub fn version_id(version: u32) -> DocId {
    doc_id(format!("{version:06}"))
}

/// What [`update`] did.
#[derive(Clone, Debug, PartialEq)]
pub enum Updated {
    /// The configuration differed: this new version is current.
    Changed(WorkspaceVersion),
    /// The configuration is the current one already: nothing was stored.
    Unchanged(WorkspaceVersion),
}

fn not_configured(workspace: &WorkspaceId) -> Error {
    Error::new(
        Code::WorkspaceNotConfigured,
        format!("The workspace `{workspace}` has no configuration yet; run `harmonia workspace init FILE` first."),
    )
}

/// Configure a new workspace: version 1 and its head record, in one transaction. A workspace
/// that already has a configuration is refused with `workspace_exists` (use [`update`]).
pub async fn init(
    store: &dyn Store,
    workspace: &WorkspaceId,
    config: WorkspaceConfig,
    by: &OperatorId,
) -> Result<WorkspaceVersion, Error> {
    let now = Utc::now();
    let version = WorkspaceVersion {
        workspace: workspace.clone(),
        version: 1,
        content_hash: content_hash(&config),
        config,
        created_at: now,
        created_by: by.clone(),
    };
    let head = Workspace { id: workspace.clone(), version: 1, created_at: now, updated_at: now };
    let (v, h) = (&encode(&version)?, &encode(&head)?);
    let created = run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
        let mut tx = Tx::begin(store, workspace);
        if tx.get(WORKSPACES, &doc_id(workspace)).await?.is_some() {
            return Ok(false);
        }
        tx.put(WORKSPACES, &doc_id(workspace), h.clone());
        tx.put(WORKSPACE_VERSIONS, &version_id(1), v.clone());
        tx.commit().await.map(|()| true)
    })
    .await?;
    if !created {
        return Err(Error::new(
            Code::WorkspaceExists,
            format!("The workspace `{workspace}` is already configured; use `harmonia workspace update FILE`."),
        ));
    }
    // The job watch looks at it from now on; should this fail, its first step registers it.
    if let Err(e) = crate::step::watch::register(store, workspace).await {
        tracing::warn!(workspace = %workspace, code = e.code.as_str(), "the job watch could not register the workspace; its first step does");
    }
    Ok(version)
}

/// Make `config` the workspace's next version, unless it equals the current one (then nothing
/// is stored). The version and the head move together in one transaction, so two concurrent
/// updates get two different numbers.
pub async fn update(
    store: &dyn Store,
    workspace: &WorkspaceId,
    config: WorkspaceConfig,
    by: &OperatorId,
) -> Result<Updated, Error> {
    let hash = content_hash(&config);
    let (config, hash) = (&config, &hash);
    let outcome = run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
        let mut tx = Tx::begin(store, workspace);
        let Some(doc) = tx.get(WORKSPACES, &doc_id(workspace)).await? else { return Ok(None) };
        let mut head: Workspace = doc.decode()?;
        let current: WorkspaceVersion = match tx.get(WORKSPACE_VERSIONS, &version_id(head.version)).await? {
            Some(doc) => doc.decode()?,
            None => return Err(harmonia_store::Error::Corrupt),
        };
        if &current.content_hash == hash {
            return Ok(Some(Updated::Unchanged(current)));
        }
        let now = Utc::now();
        let next = WorkspaceVersion {
            workspace: workspace.clone(),
            version: head.version + 1,
            config: config.clone(),
            content_hash: hash.clone(),
            created_at: now,
            created_by: by.clone(),
        };
        head.version = next.version;
        head.updated_at = now;
        tx.put(WORKSPACES, &doc_id(workspace), encode(&head)?);
        tx.put(WORKSPACE_VERSIONS, &version_id(next.version), encode(&next)?);
        tx.commit().await.map(|()| Some(Updated::Changed(next)))
    })
    .await?;
    outcome.ok_or_else(|| not_configured(workspace))
}

/// The workspace's current version; `workspace_not_configured` when it has none.
pub async fn current(store: &dyn Store, workspace: &WorkspaceId) -> Result<WorkspaceVersion, Error> {
    let head: Workspace = store
        .get(workspace, WORKSPACES, &doc_id(workspace))
        .await?
        .ok_or_else(|| not_configured(workspace))?
        .decode()?;
    version(store, workspace, head.version).await
}

/// One version of the workspace's configuration.
pub async fn version(store: &dyn Store, workspace: &WorkspaceId, version: u32) -> Result<WorkspaceVersion, Error> {
    store
        .get(workspace, WORKSPACE_VERSIONS, &version_id(version))
        .await?
        .ok_or_else(|| Error::new(Code::NotFound, format!("The workspace has no configuration version {version}.")))?
        .decode()
        .map_err(Error::from)
}

/// The version `job` recorded when it was created: what every stage of the job reads.
pub async fn version_of_job(store: &dyn Store, job: &Job) -> Result<WorkspaceVersion, Error> {
    version(store, &job.workspace, job.workspace_version).await
}

#[cfg(test)]
mod tests;
