//! Reads under a deadline, with the contract's one retry of a transient failure.

use std::future::Future;
use std::time::Duration;

use harmonia_contracts::Code;
use harmonia_contracts::domain::Workspace;
use harmonia_contracts::ids::WorkspaceId;
use harmonia_pipeline::records::{WORKSPACES, doc_id};
use harmonia_store::{Collection, Store, decode_each, scan_all};
use serde::de::DeserializeOwned;

use super::outcome::Fail;

/// Run `read` under `deadline`; a transient failure or a timeout is retried once.
///
/// This stays one explicit second call rather than a backoff policy: the tool contract fixes
/// exactly one immediate retry, and Nova's validator checks retries against that count.
pub(crate) async fn read<T, F, Fut>(deadline: Duration, mut read: F) -> Result<T, Fail>
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

/// The caller's workspace record; a caller without one may not read anything.
pub(crate) async fn workspace(store: &dyn Store, ws: &WorkspaceId) -> Result<Workspace, Fail> {
    match store.get(ws, WORKSPACES, &doc_id(ws)).await? {
        Some(doc) => doc.decode().map_err(|_| Fail::unavailable(false)),
        None => Err(Fail::code(Code::Authorization, "The caller is not allowed to read this workspace.")),
    }
}

/// Every decodable document of `collection` in `ws`, page by page so that none is cut off; an
/// undecodable one is logged and counted by [`decode_each`], and the rest still answer.
pub(crate) async fn every<T: DeserializeOwned>(
    store: &dyn Store,
    ws: &WorkspaceId,
    collection: Collection,
) -> Result<Vec<T>, Fail> {
    let docs = scan_all(store, ws, collection).await?;
    Ok(decode_each(collection, &docs))
}
