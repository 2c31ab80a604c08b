use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

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
/// times, with a short jittered backoff between attempts. Each attempt must begin its own
/// [`Tx`] and read afresh.
pub async fn run_transaction<T, F, Fut>(max_attempts: u32, mut attempt: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let mut n = 0;
    loop {
        n += 1;
        match attempt().await {
            Err(Error::Conflict) if n < max_attempts => {
                let cap = 2u64.saturating_pow(n.min(6));
                let jitter = u64::from(uuid::Uuid::new_v4().as_fields().1) % (cap * 5 + 1);
                tokio::time::sleep(Duration::from_millis(1 + jitter)).await;
            }
            other => return other,
        }
    }
}
