//! A tool call's reads, every one scoped to the caller's workspace. A read is made once: the
//! call's deadline and the contract's one retry belong to the tool call as a whole.

use harmonia_contracts::Code;
use harmonia_contracts::domain::{Workspace, WorkspaceConfig, WorkspaceVersion};
use harmonia_contracts::ids::{DocId, JobId, WorkspaceId};
use harmonia_pipeline::records::{TREND_SIGNALS, WORKSPACE_VERSIONS, WORKSPACES, doc_id};
use harmonia_pipeline::workspace::version_id;
use harmonia_store::{Collection, MAX_QUERY_LIMIT, Query, Store, decode_each, scan, scan_all};
use serde::de::DeserializeOwned;

use super::outcome::Fail;

/// What one tool call may read: the store, as the caller's workspace.
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
        match self.store.get(self.ws, WORKSPACES, &doc_id(self.ws)).await? {
            Some(doc) => doc.decode().map_err(|_| Fail::unavailable(false)),
            None => Err(Fail::code(Code::Authorization, "The caller is not allowed to read this workspace.")),
        }
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
        match self.store.get(self.ws, collection, id).await? {
            Some(doc) => doc.decode().map(Some).map_err(|_| Fail::unavailable(false)),
            None => Ok(None),
        }
    }

    /// Every decodable document of `collection` in the caller's workspace.
    pub(crate) async fn every<T: DeserializeOwned>(&self, collection: Collection) -> Result<Vec<T>, Fail> {
        every(self.store, self.ws, collection).await
    }

    /// Every decodable document of `collection` in the caller's workspace whose `job` field is
    /// `job`.
    pub(crate) async fn of_job<T: DeserializeOwned>(
        &self,
        collection: Collection,
        job: &JobId,
    ) -> Result<Vec<T>, Fail> {
        let query = Query::all(MAX_QUERY_LIMIT).filter("job", job.to_string())?;
        Ok(decode_each(collection, &scan(self.store, self.ws, collection, query).await?))
    }

    /// Every decodable trend signal the caller's workspace imported.
    pub(crate) async fn trend_signals<T: DeserializeOwned>(&self) -> Result<Vec<T>, Fail> {
        every(self.store, self.ws, TREND_SIGNALS).await
    }
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
