//! A tool call's reads: each under the deadline of what it reads, with the contract's one
//! retry of a transient failure, and every workspace read scoped to the caller's workspace.

use std::future::Future;
use std::time::Duration;

use harmonia_contracts::Code;
use harmonia_contracts::domain::{Workspace, WorkspaceConfig, WorkspaceVersion};
use harmonia_contracts::ids::{DocId, WorkspaceId};
use harmonia_pipeline::records::{TREND_SIGNALS, WORKSPACE_VERSIONS, WORKSPACES, doc_id};
use harmonia_pipeline::workspace::version_id;
use harmonia_store::{Collection, Store, decode_each, scan_all};
use serde::de::DeserializeOwned;

use super::outcome::Fail;
use super::{TREND_TIMEOUT, WORKSPACE_TIMEOUT};

/// What one tool call may read: the store, as the caller's workspace. The deadline follows
/// what is read (the trend signals or the workspace's own records), so a tool
/// states only which reads it makes.
#[derive(Clone, Copy)]
pub(crate) struct Reads<'a> {
    store: &'a dyn Store,
    ws: &'a WorkspaceId,
}

impl<'a> Reads<'a> {
    pub(crate) fn new(store: &'a dyn Store, ws: &'a WorkspaceId) -> Self {
        Self { store, ws }
    }

    /// The caller's workspace record; a caller without one may not read anything.
    pub(crate) async fn workspace(&self) -> Result<Workspace, Fail> {
        read(WORKSPACE_TIMEOUT, || async {
            match self.store.get(self.ws, WORKSPACES, &doc_id(self.ws)).await? {
                Some(doc) => doc.decode().map_err(|_| Fail::unavailable(false)),
                None => Err(Fail::code(Code::Authorization, "The caller is not allowed to read this workspace.")),
            }
        })
        .await
    }

    /// The caller's workspace's current configuration (the feed shows its goals).
    pub(crate) async fn config(&self) -> Result<WorkspaceConfig, Fail> {
        let head = self.workspace().await?;
        match self.get::<WorkspaceVersion>(WORKSPACE_VERSIONS, &version_id(head.version)).await? {
            Some(version) => Ok(version.config),
            // The head names a version that is not there: stored state is broken, not absent.
            None => Err(Fail::unavailable(false)),
        }
    }

    /// One document of `collection` in the caller's workspace, if it exists there.
    pub(crate) async fn get<T: DeserializeOwned>(&self, collection: Collection, id: &DocId) -> Result<Option<T>, Fail> {
        read(WORKSPACE_TIMEOUT, || async {
            match self.store.get(self.ws, collection, id).await? {
                Some(doc) => doc.decode().map(Some).map_err(|_| Fail::unavailable(false)),
                None => Ok(None),
            }
        })
        .await
    }

    /// Every decodable document of `collection` in the caller's workspace.
    pub(crate) async fn every<T: DeserializeOwned>(&self, collection: Collection) -> Result<Vec<T>, Fail> {
        read(WORKSPACE_TIMEOUT, || every(self.store, self.ws, collection)).await
    }

    /// Every decodable trend signal the caller's workspace imported, under the trend deadline.
    pub(crate) async fn trend_signals<T: DeserializeOwned>(&self) -> Result<Vec<T>, Fail> {
        read(TREND_TIMEOUT, || every(self.store, self.ws, TREND_SIGNALS)).await
    }
}

/// Run `read` under `deadline`; a transient failure or a timeout is retried once.
///
/// This stays one explicit second call rather than a backoff policy: the tool contract fixes
/// exactly one immediate retry, and Nova's validator checks retries against that count.
async fn read<T, F, Fut>(deadline: Duration, mut read: F) -> Result<T, Fail>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Fail>>,
{
    match attempt(deadline, read()).await {
        Err(failed) if failed.0.retryable => attempt(deadline, read()).await,
        done => done,
    }
}

async fn attempt<T>(deadline: Duration, read: impl Future<Output = Result<T, Fail>>) -> Result<T, Fail> {
    tokio::time::timeout(deadline, read).await.map_err(|_elapsed| Fail::unavailable(true))?
}

/// Every decodable document of `collection` in `ws`, page by page so that none is cut off; an
/// undecodable one is logged and counted by [`decode_each`], and the rest still answer.
async fn every<T: DeserializeOwned>(
    store: &dyn Store,
    ws: &WorkspaceId,
    collection: Collection,
) -> Result<Vec<T>, Fail> {
    let docs = scan_all(store, ws, collection).await?;
    Ok(decode_each(collection, &docs))
}
