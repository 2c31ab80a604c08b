use std::collections::HashSet;
use std::fmt;

use chrono::{DateTime, Utc};
use harmonia_contracts::ids::DocId;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::Error;

/// Largest document data, serialised, in bytes (Firestore's limit is 1 MiB).
pub const MAX_DOCUMENT_BYTES: usize = 900 * 1024;
/// Most writes in one commit (Firestore's limit).
pub const MAX_WRITES: usize = 500;
/// Largest query limit.
pub const MAX_QUERY_LIMIT: u32 = 1000;

const fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 64 || !b[0].is_ascii_lowercase() {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if !(b[i].is_ascii_lowercase() || b[i].is_ascii_digit() || b[i] == b'_') {
            return false;
        }
        i += 1;
    }
    true
}

/// A collection name: `[a-z][a-z0-9_]{0,63}`, checked at compile time for constants; and
/// whether its documents are short-lived ([`Collection::short_lived`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Collection(&'static str, bool);

impl Collection {
    /// Workspace records. A workspace's own record is the document of this collection whose
    /// id is the workspace's id, in that workspace: backends with a document hierarchy
    /// (Firestore) store it at the workspace's root document (`workspaces/{ws}`), where other
    /// tools look for it. It is read and written by id only; querying this collection is
    /// refused on every backend, because the root record is not among a hierarchy's
    /// sub-collection documents and a query would silently miss it.
    pub const WORKSPACES: Collection = Collection::new("workspaces");

    /// A collection; panics (at compile time in a `const`) on an invalid name.
    pub const fn new(name: &'static str) -> Self {
        assert!(is_name(name), "collection names are [a-z][a-z0-9_]{{0,63}}");
        Self(name, false)
    }

    /// A collection of short-lived documents: each is deleted soon after it is written (within
    /// one invocation or request). It behaves as any other; a backend may keep such documents
    /// apart from lasting ones (SQLite does, in a table of their own, so that writing and
    /// deleting them does not split and merge the pages lasting documents are added to).
    /// Every constant for one name must say the same.
    pub const fn short_lived(name: &'static str) -> Self {
        Self(Self::new(name).0, true)
    }

    /// The name.
    pub const fn as_str(self) -> &'static str {
        self.0
    }

    /// Whether its documents are short-lived ([`Collection::short_lived`]).
    pub const fn is_short_lived(self) -> bool {
        self.1
    }
}

impl fmt::Display for Collection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// A dotted path of simple field names into document data, e.g. `status` or `window.start`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FieldPath(String);

impl FieldPath {
    /// Parse `a.b.c` where each segment is `[a-z][a-z0-9_]{0,63}`.
    pub fn parse(path: &str) -> Result<Self, Error> {
        if !path.is_empty() && path.len() <= 256 && path.split('.').all(is_name) {
            Ok(Self(path.to_owned()))
        } else {
            Err(Error::Invalid("field paths are dotted [a-z][a-z0-9_]* names"))
        }
    }

    /// The segments.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('.')
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The value at this path in `data`.
    pub fn lookup<'a>(&self, data: &'a Map<String, Value>) -> Option<&'a Value> {
        let mut segments = self.segments();
        let mut current = data.get(segments.next()?)?;
        for segment in segments {
            current = current.as_object()?.get(segment)?;
        }
        Some(current)
    }
}

/// Sort direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Smallest first.
    Ascending,
    /// Largest first.
    Descending,
}

/// An equality filter, an optional order and a limit.
///
/// Semantics every backend shares: a document lacking the `order_by` field is not returned
/// (as in Firestore); equality compares JSON type and value; values of one type sort in
/// their natural order (strings by UTF-8 bytes).
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// `field == value` filters, all of which must hold. Values are strings, integers or booleans.
    pub filters: Vec<(FieldPath, Value)>,
    /// Sort field and direction.
    pub order_by: Option<(FieldPath, Direction)>,
    /// At most this many documents (1..=1000).
    pub limit: u32,
    /// Only documents whose id sorts after this one (pagination of an id-ordered query; not
    /// allowed with `order_by`).
    pub start_after: Option<DocId>,
}

impl Query {
    /// Every document, up to `limit`, in id order.
    pub fn all(limit: u32) -> Self {
        Self { filters: Vec::new(), order_by: None, limit, start_after: None }
    }

    /// Continue an id-ordered query after the document `id`.
    pub fn after(mut self, id: DocId) -> Self {
        self.start_after = Some(id);
        self
    }

    /// Add a `field == value` filter.
    pub fn filter(mut self, field: &str, value: impl Into<Value>) -> Result<Self, Error> {
        let value = value.into();
        if !(value.is_string() || value.is_i64() || value.is_u64() || value.is_boolean()) {
            return Err(Error::Invalid("filter values are strings, integers or booleans"));
        }
        self.filters.push((FieldPath::parse(field)?, value));
        Ok(self)
    }

    /// Order by `field`.
    pub fn order_by(mut self, field: &str, direction: Direction) -> Result<Self, Error> {
        self.order_by = Some((FieldPath::parse(field)?, direction));
        Ok(self)
    }

    /// Check the query against the rules every backend shares: the limit, the filter count,
    /// a cursor only in id order, and no query of [`Collection::WORKSPACES`].
    pub fn validate(&self, collection: Collection) -> Result<(), Error> {
        if collection == Collection::WORKSPACES {
            return Err(Error::Invalid("workspace records are read by id, not queried"));
        }
        if !(1..=MAX_QUERY_LIMIT).contains(&self.limit) || self.filters.len() > 10 {
            return Err(Error::Invalid("query limit must be 1-1000 with at most 10 filters"));
        }
        if self.start_after.is_some() && self.order_by.is_some() {
            return Err(Error::Invalid("a query continues after an id only in id order"));
        }
        Ok(())
    }
}

/// A stored document.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    /// Id within its collection.
    pub id: DocId,
    /// 1 on creation, +1 per write.
    pub version: u64,
    /// Time of the last write, as the backend recorded it.
    pub updated_at: DateTime<Utc>,
    /// The data (a JSON object).
    pub data: Map<String, Value>,
}

impl Document {
    /// Decode the data as `T`; undecodable stored data is [`Error::Corrupt`].
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_value(Value::Object(self.data.clone())).map_err(|_| Error::Corrupt)
    }
}

/// Encode `value` as document data (it must serialise to a JSON object).
pub fn encode<T: serde::Serialize>(value: &T) -> Result<Map<String, Value>, Error> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(Error::Invalid("documents must serialise to JSON objects")),
    }
}

/// One write in a commit.
#[derive(Clone, Debug, PartialEq)]
pub enum WriteOp {
    /// Create; fails with `AlreadyExists` if present.
    Create(Map<String, Value>),
    /// Replace data if the version matches; `NotFound` if absent.
    Update {
        /// New data.
        data: Map<String, Value>,
        /// Version the caller read.
        expected_version: u64,
    },
    /// Create or replace unconditionally.
    Upsert(Map<String, Value>),
    /// Delete; with a version, only if it matches. Deleting a missing document succeeds
    /// when no version is expected.
    Delete {
        /// Version the caller read, if any.
        expected_version: Option<u64>,
    },
    /// Write nothing; fail unless the document is at this version (`None`: absent).
    Check {
        /// Expected version, or `None` for absent.
        expected_version: Option<u64>,
    },
}

/// A write addressed to one document.
#[derive(Clone, Debug, PartialEq)]
pub struct Write {
    /// Collection.
    pub collection: Collection,
    /// Document id.
    pub id: DocId,
    /// What to do.
    pub op: WriteOp,
}

impl Write {
    /// The batch rules both backends enforce before touching storage: 1–500 writes, one
    /// write per document, data within [`MAX_DOCUMENT_BYTES`].
    pub fn validate_batch(writes: &[Write]) -> Result<(), Error> {
        if writes.is_empty() || writes.len() > MAX_WRITES {
            return Err(Error::Invalid("a commit holds 1-500 writes"));
        }
        let mut seen = HashSet::new();
        for w in writes {
            if !seen.insert((w.collection, &w.id)) {
                return Err(Error::Invalid("a commit writes each document at most once"));
            }
            if let WriteOp::Create(data) | WriteOp::Upsert(data) | WriteOp::Update { data, .. } = &w.op
                && serde_json::to_vec(data).map_or(true, |b| b.len() > MAX_DOCUMENT_BYTES)
            {
                return Err(Error::Invalid("a document's data is larger than 900 KiB"));
            }
        }
        Ok(())
    }

    /// Check this write against the document's current version (`None`: absent).
    /// Returns the version the document will have after the write (`None`: absent).
    pub fn apply_to(&self, current: Option<u64>) -> Result<Option<u64>, Error> {
        match (&self.op, current) {
            (WriteOp::Create(_), None) => Ok(Some(1)),
            (WriteOp::Create(_), Some(_)) => Err(Error::AlreadyExists),
            (WriteOp::Update { .. }, None) => Err(Error::NotFound),
            (WriteOp::Update { expected_version, .. }, Some(v)) if *expected_version == v => Ok(Some(v + 1)),
            (WriteOp::Update { .. }, Some(_)) => Err(Error::PreconditionFailed),
            (WriteOp::Upsert(_), v) => Ok(Some(v.map_or(1, |v| v + 1))),
            (WriteOp::Delete { expected_version: None }, _) => Ok(None),
            (WriteOp::Delete { expected_version: Some(e) }, Some(v)) if *e == v => Ok(None),
            (WriteOp::Delete { expected_version: Some(_) }, None) => Err(Error::NotFound),
            (WriteOp::Delete { .. }, Some(_)) => Err(Error::PreconditionFailed),
            (WriteOp::Check { expected_version }, v) if *expected_version == v => Ok(v),
            (WriteOp::Check { .. }, _) => Err(Error::PreconditionFailed),
        }
    }

    /// The data this write stores, if any.
    pub fn data(&self) -> Option<&Map<String, Value>> {
        match &self.op {
            WriteOp::Create(d) | WriteOp::Upsert(d) | WriteOp::Update { data: d, .. } => Some(d),
            WriteOp::Delete { .. } | WriteOp::Check { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_paths() {
        assert!(FieldPath::parse("status").is_ok());
        assert!(FieldPath::parse("window.start").is_ok());
        for bad in ["", "a..b", "A", "a-b", "a.", "`x`", "1a"] {
            assert!(FieldPath::parse(bad).is_err(), "{bad}");
        }
        let data = serde_json::json!({"a": {"b": 3}});
        let map = data.as_object().cloned().unwrap_or_default();
        assert_eq!(FieldPath::parse("a.b").ok().and_then(|p| p.lookup(&map).cloned()), Some(3.into()));
    }

    #[test]
    fn precondition_table() {
        let w = |op| Write { collection: Collection::new("c"), id: "d".parse().expect("id"), op };
        let m = Map::new();
        assert_eq!(w(WriteOp::Create(m.clone())).apply_to(None).ok(), Some(Some(1)));
        assert!(matches!(w(WriteOp::Create(m.clone())).apply_to(Some(1)), Err(Error::AlreadyExists)));
        assert!(matches!(
            w(WriteOp::Update { data: m.clone(), expected_version: 1 }).apply_to(Some(2)),
            Err(Error::PreconditionFailed)
        ));
        assert!(matches!(
            w(WriteOp::Update { data: m.clone(), expected_version: 1 }).apply_to(None),
            Err(Error::NotFound)
        ));
        assert_eq!(w(WriteOp::Upsert(m)).apply_to(Some(4)).ok(), Some(Some(5)));
        assert!(matches!(
            w(WriteOp::Check { expected_version: None }).apply_to(Some(1)),
            Err(Error::PreconditionFailed)
        ));
    }
}
