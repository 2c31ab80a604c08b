use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use harmonia_contracts::ids::{DocId, WorkspaceId};
use serde_json::{Map, Value};

use crate::{Collection, Document, Error, Query, Store, Write, WriteOp};

/// Attempts [`run_transaction`] makes before giving up with [`Error::Conflict`].
pub const DEFAULT_ATTEMPTS: u32 = 25;

/// An optimistic multi-document transaction in one workspace.
///
/// Reads record the version they saw; [`Tx::commit`] writes everything atomically on the
/// condition that every document read is still at that version (documents read but not
/// written are checked too). Any mismatch is [`Error::Conflict`], which
/// [`run_transaction`] retries from a fresh read.
pub struct Tx<'a> {
    store: &'a dyn Store,
    workspace: WorkspaceId,
    reads: BTreeMap<(Collection, DocId), Option<u64>>,
    writes: BTreeMap<(Collection, DocId), TxWrite>,
}

enum TxWrite {
    Put(Map<String, Value>),
    Delete,
}

impl<'a> Tx<'a> {
    /// Start a transaction.
    pub fn begin(store: &'a dyn Store, workspace: &WorkspaceId) -> Self {
        Self { store, workspace: workspace.clone(), reads: BTreeMap::new(), writes: BTreeMap::new() }
    }

    /// The workspace.
    pub fn workspace(&self) -> &WorkspaceId {
        &self.workspace
    }

    /// Read a document, recording its version.
    pub async fn get(&mut self, collection: Collection, id: &DocId) -> Result<Option<Document>, Error> {
        let doc = self.store.get(&self.workspace, collection, id).await?;
        self.reads.entry((collection, id.clone())).or_insert(doc.as_ref().map(|d| d.version));
        Ok(doc)
    }

    /// Query (the results are not part of the read set: re-read a document with
    /// [`get`](Self::get) before writing it).
    pub async fn query(&self, collection: Collection, query: &Query) -> Result<Vec<Document>, Error> {
        self.store.query(&self.workspace, collection, query).await
    }

    /// Stage a write of `data`. If the document was read, the commit requires it unchanged;
    /// if it was not read, it must not exist (a create).
    pub fn put(&mut self, collection: Collection, id: &DocId, data: Map<String, Value>) {
        self.writes.insert((collection, id.clone()), TxWrite::Put(data));
    }

    /// Stage a delete (the same conditions as [`put`](Self::put)).
    pub fn delete(&mut self, collection: Collection, id: &DocId) {
        self.writes.insert((collection, id.clone()), TxWrite::Delete);
    }

    /// Commit atomically. Nothing staged and nothing read is a no-op.
    pub async fn commit(self) -> Result<(), Error> {
        let mut batch = Vec::new();
        for ((collection, id), read) in &self.reads {
            if !self.writes.contains_key(&(*collection, id.clone())) {
                batch.push(Write {
                    collection: *collection,
                    id: id.clone(),
                    op: WriteOp::Check { expected_version: *read },
                });
            }
        }
        for ((collection, id), write) in self.writes {
            let read = self.reads.get(&(collection, id.clone())).copied().flatten();
            let op = match (write, read) {
                (TxWrite::Put(data), None) => WriteOp::Create(data),
                (TxWrite::Put(data), Some(v)) => WriteOp::Update { data, expected_version: v },
                (TxWrite::Delete, None) => WriteOp::Check { expected_version: None },
                (TxWrite::Delete, Some(v)) => WriteOp::Delete { expected_version: Some(v) },
            };
            batch.push(Write { collection, id, op });
        }
        if batch.is_empty() {
            return Ok(());
        }
        match self.store.commit(&self.workspace, batch).await {
            Err(Error::PreconditionFailed | Error::AlreadyExists | Error::NotFound) => Err(Error::Conflict),
            other => other,
        }
    }
}

/// Run `attempt` until it does not fail with [`Error::Conflict`], at most `max_attempts`
/// times, with a short jittered exponential backoff between attempts. Each attempt must begin
/// its own [`Tx`] and read afresh. Any other error, and the last conflict, is returned as is.
pub async fn run_transaction<T, F, Fut>(max_attempts: u32, attempt: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    attempt.retry(conflict_backoff(max_attempts)).when(|e| matches!(e, Error::Conflict)).await
}

/// Waits between transaction attempts: 2 ms doubling to at most 320 ms, each stretched by a
/// random fraction so that contending writers spread out instead of colliding again.
/// `max_attempts` counts the first attempt; zero behaves as one.
fn conflict_backoff(max_attempts: u32) -> ExponentialBuilder {
    let retries = usize::try_from(max_attempts.saturating_sub(1)).unwrap_or(usize::MAX);
    ExponentialBuilder::new()
        .with_min_delay(Duration::from_millis(2))
        .with_max_delay(Duration::from_millis(320))
        .with_factor(2.0)
        .with_jitter()
        .with_max_times(retries)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    async fn count_attempts(max_attempts: u32, fail_with: fn(u32) -> Option<Error>) -> (Result<u32, Error>, u32) {
        let calls = AtomicU32::new(0);
        let result = run_transaction(max_attempts, || {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            async move { fail_with(n).map_or(Ok(n), Err) }
        })
        .await;
        (result, calls.load(Ordering::SeqCst))
    }

    #[tokio::test]
    async fn conflicts_are_retried_up_to_the_attempt_limit() {
        let (result, calls) = count_attempts(4, |_| Some(Error::Conflict)).await;
        assert!(matches!(result, Err(Error::Conflict)), "{result:?}");
        assert_eq!(calls, 4);
        let (result, calls) = count_attempts(4, |n| (n < 3).then_some(Error::Conflict)).await;
        assert_eq!(result.ok(), Some(3));
        assert_eq!(calls, 3);
        let (_, calls) = count_attempts(0, |_| Some(Error::Conflict)).await;
        assert_eq!(calls, 1, "zero attempts still runs once");
    }

    #[tokio::test]
    async fn other_errors_are_not_retried() {
        let (result, calls) = count_attempts(4, |_| Some(Error::PreconditionFailed)).await;
        assert!(matches!(result, Err(Error::PreconditionFailed)), "{result:?}");
        assert_eq!(calls, 1);
    }
}
