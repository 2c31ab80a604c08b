//! The storage interface of Harmonia: workspace-scoped JSON documents.
//!
//! A [`Store`] holds documents addressed by (workspace, [`Collection`], [`DocId`]); each has
//! a version that starts at 1 and grows by one per write. Backends implement four
//! operations — [`Store::get`], [`Store::query`] and an atomic, precondition-checked
//! [`Store::commit`] — and everything else is built on them here: create-if-absent, update
//! with a precondition, create-immutable ([`create_immutable`]), and optimistic multi-document transactions ([`Tx`],
//! [`run_transaction`]). A workspace can never read another's documents: every call names
//! one workspace and backends key storage by it.
//!
//! `conformance` (feature `conformance`) is the suite every backend must pass unchanged.

mod document;
mod error;
mod scan;
mod tx;

#[cfg(feature = "conformance")]
pub mod conformance;

use async_trait::async_trait;
use harmonia_contracts::ids::{DocId, WorkspaceId};
use serde_json::{Map, Value};

pub use document::{
    Collection, Direction, Document, FieldPath, MAX_DOCUMENT_BYTES, MAX_QUERY_LIMIT, MAX_WRITES, Query, Write, WriteOp,
    encode,
};
pub use error::Error;
pub use scan::{decode_each, scan, scan_all, skipped_undecodable, sweep, undecodable_documents};
pub use tx::{DEFAULT_ATTEMPTS, Tx, run_transaction};

/// What [`create_if_absent`] found.
#[derive(Clone, Debug, PartialEq)]
pub enum Created {
    /// This call created the document (version 1).
    New(Document),
    /// It already existed; this is the stored document, unchanged.
    Existing(Document),
}

impl Created {
    /// The stored document either way.
    pub fn document(&self) -> &Document {
        match self {
            Created::New(d) | Created::Existing(d) => d,
        }
    }
}

/// A workspace-scoped document store.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// The document, or `None`.
    async fn get(&self, workspace: &WorkspaceId, collection: Collection, id: &DocId)
    -> Result<Option<Document>, Error>;

    /// Documents of one collection matching `query`.
    async fn query(
        &self,
        workspace: &WorkspaceId,
        collection: Collection,
        query: &Query,
    ) -> Result<Vec<Document>, Error>;

    /// Apply every write atomically or none. A failed precondition is
    /// [`Error::PreconditionFailed`], a create of an existing document
    /// [`Error::AlreadyExists`], an update of a missing one [`Error::NotFound`]; a lost race
    /// with a concurrent commit is [`Error::Conflict`]. Writes are checked by
    /// [`Write::validate_batch`] first.
    async fn commit(&self, workspace: &WorkspaceId, writes: Vec<Write>) -> Result<(), Error>;
}

/// Create the document unless it exists, reading nothing: `true` when this call created it,
/// `false` when one was there already.
pub async fn create(
    store: &dyn Store,
    workspace: &WorkspaceId,
    collection: Collection,
    id: &DocId,
    data: Map<String, Value>,
) -> Result<bool, Error> {
    let write = Write { collection, id: id.clone(), op: WriteOp::Create(data) };
    match store.commit(workspace, vec![write]).await {
        Ok(()) => Ok(true),
        Err(Error::AlreadyExists) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Create the document unless it exists; either way return what is stored.
pub async fn create_if_absent(
    store: &dyn Store,
    workspace: &WorkspaceId,
    collection: Collection,
    id: &DocId,
    data: Map<String, Value>,
) -> Result<Created, Error> {
    if !create(store, workspace, collection, id, data).await? {
        return match store.get(workspace, collection, id).await? {
            Some(doc) => Ok(Created::Existing(doc)),
            // Deleted in between: report the race rather than guess.
            None => Err(Error::Conflict),
        };
    }
    // Read back: the stored timestamp is the backend's.
    match store.get(workspace, collection, id).await? {
        Some(doc) if doc.version == 1 => Ok(Created::New(doc)),
        Some(doc) => Ok(Created::Existing(doc)),
        None => Err(Error::Conflict),
    }
}

/// Create an immutable document: the first write under `id` stores `data`; a later one with
/// the same content finds it and changes nothing (so a redelivered or repeated freeze is
/// idempotent); one with other content is refused with [`Error::ImmutableConflict`] and the
/// stored document stays as it was.
///
/// Content is compared as JSON with numbers compared by value, because a backend may hand a
/// whole-valued float back as an integer (`1.0` as `1`) without the content having changed.
pub async fn create_immutable(
    store: &dyn Store,
    workspace: &WorkspaceId,
    collection: Collection,
    id: &DocId,
    data: Map<String, Value>,
) -> Result<Created, Error> {
    match create_if_absent(store, workspace, collection, id, data.clone()).await? {
        Created::Existing(doc) if !same_object(&doc.data, &data) => Err(Error::ImmutableConflict),
        created => Ok(created),
    }
}

fn same_object(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same_value(v, w)))
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64().zip(y.as_f64()).is_some_and(|(x, y)| x == y),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_value(x, y)),
        (Value::Object(x), Value::Object(y)) => same_object(x, y),
        _ => a == b,
    }
}

/// Replace the document's data if its version is still `expected_version`; returns the new
/// version.
pub async fn update(
    store: &dyn Store,
    workspace: &WorkspaceId,
    collection: Collection,
    id: &DocId,
    data: Map<String, Value>,
    expected_version: u64,
) -> Result<u64, Error> {
    let write = Write { collection, id: id.clone(), op: WriteOp::Update { data, expected_version } };
    store.commit(workspace, vec![write]).await?;
    Ok(expected_version + 1)
}
