//! Reading a whole collection without missing documents, and decoding what was read without
//! dropping anything silently.

use std::sync::atomic::{AtomicU64, Ordering};

use harmonia_contracts::ids::WorkspaceId;
use serde::de::DeserializeOwned;

use crate::{Collection, Document, Error, MAX_QUERY_LIMIT, Query, Store, Write, WriteOp};

static UNDECODABLE: AtomicU64 = AtomicU64::new(0);

/// How many stored documents this process has found undecodable and skipped, since it
/// started (see [`decode_each`]).
pub fn undecodable_documents() -> u64 {
    UNDECODABLE.load(Ordering::Relaxed)
}

/// Every document of `collection` matching `query`'s filters, read page by page in id order
/// so that nothing is cut off at a page limit. `query` must not be ordered by a field; its
/// limit is the page size.
pub async fn scan(
    store: &dyn Store,
    workspace: &WorkspaceId,
    collection: Collection,
    query: Query,
) -> Result<Vec<Document>, Error> {
    if query.order_by.is_some() {
        return Err(Error::Invalid("a scan reads in id order"));
    }
    let page = query.limit;
    let mut query = query;
    let mut out = Vec::new();
    loop {
        let docs = store.query(workspace, collection, &query).await?;
        let full = u32::try_from(docs.len()).map_or(true, |n| n >= page);
        let last = docs.last().map(|d| d.id.clone());
        out.extend(docs);
        match last {
            Some(id) if full => query = query.after(id),
            _ => return Ok(out),
        }
    }
}

/// Every document of `collection` in `workspace`.
pub async fn scan_all(
    store: &dyn Store,
    workspace: &WorkspaceId,
    collection: Collection,
) -> Result<Vec<Document>, Error> {
    scan(store, workspace, collection, Query::all(MAX_QUERY_LIMIT)).await
}

/// Count and log one stored document that could not be read and was skipped (its collection
/// and id, never its data): backends call this for a row they cannot even parse, so a listing
/// never fails, or goes silent, because of one bad document.
pub fn skipped_undecodable(collection: Collection, id: &str) {
    let total = UNDECODABLE.fetch_add(1, Ordering::Relaxed) + 1;
    tracing::warn!(collection = %collection, id = %id, undecodable_total = total, "a stored document does not decode; it is skipped");
}

/// Decode each document as `T`. One that does not decode is skipped, logged with its
/// collection and id (never its data) and counted ([`undecodable_documents`]), so a single
/// corrupt record cannot hide every other one, and is never dropped without a trace.
pub fn decode_each<T: DeserializeOwned>(collection: Collection, docs: &[Document]) -> Vec<T> {
    let mut out = Vec::with_capacity(docs.len());
    for doc in docs {
        match doc.decode() {
            Ok(value) => out.push(value),
            Err(_) => skipped_undecodable(collection, doc.id.as_str()),
        }
    }
    out
}

/// Remove every document of `collection` that `lapsed` picks (a session or claim whose process
/// died, say), each only as it was read: one changed since (taken over, renewed) is left for the
/// next sweep. With `remove` false it only counts them (a store it cannot write). Returns how
/// many were removed (or would be).
pub async fn sweep(
    store: &dyn Store,
    workspace: &WorkspaceId,
    collection: Collection,
    remove: bool,
    lapsed: impl Fn(&Document) -> bool,
) -> Result<usize, Error> {
    let mut swept = 0;
    for doc in scan_all(store, workspace, collection).await?.iter().filter(|d| lapsed(d)) {
        if !remove {
            swept += 1;
            continue;
        }
        let delete =
            Write { collection, id: doc.id.clone(), op: WriteOp::Delete { expected_version: Some(doc.version) } };
        match store.commit(workspace, vec![delete]).await {
            Ok(()) => swept += 1,
            // Renewed, taken over or removed meanwhile: no longer left behind.
            Err(Error::PreconditionFailed | Error::NotFound) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(swept)
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use serde_json::json;

    use super::*;

    #[test]
    fn undecodable_documents_are_skipped_and_counted() {
        let doc = |id: &str, v: serde_json::Value| Document {
            id: id.parse().expect("id"),
            version: 1,
            updated_at: Utc::now(),
            data: v.as_object().cloned().expect("object"),
        };
        #[derive(serde::Deserialize)]
        struct N {
            n: u32,
        }
        let before = undecodable_documents();
        let docs = [doc("a", json!({"n": 1})), doc("b", json!({"n": "x"})), doc("c", json!({"n": 3}))];
        let decoded: Vec<N> = decode_each(Collection::new("things"), &docs);
        assert_eq!(decoded.iter().map(|d| d.n).collect::<Vec<_>>(), [1, 3]);
        assert!(undecodable_documents() > before);
    }
}
