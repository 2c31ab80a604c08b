//! What this process asks of Firestore, counted as Firestore bills it, on the global meter
//! (exported when the process exports metrics; nothing is recorded otherwise):
//!
//! - `harmonia.firestore.documents` (`operation` = `read`, `write` or `delete`; `collection`):
//!   a get reads one document, found or not; a query reads what it returns and at least one;
//!   a commit reads the documents it addresses (its optimistic check; not those it creates or
//!   deletes unconditionally, on its first try), then, once Firestore has taken it, writes or
//!   deletes each (a version check of an absent document is a delete of nothing, and billed
//!   as one);
//! - `harmonia.firestore.queries` (`collection`): queries run.

use harmonia_store::Collection;
use opentelemetry::KeyValue;
use opentelemetry::metrics::Counter;

/// The counters, built once the process's meter provider is installed.
#[derive(Clone)]
pub(crate) struct Usage {
    documents: Counter<u64>,
    queries: Counter<u64>,
}

/// A document operation as Firestore bills it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Operation {
    Read,
    Write,
    Delete,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Read => "read",
            Operation::Write => "write",
            Operation::Delete => "delete",
        }
    }
}

impl Usage {
    pub(crate) fn new() -> Self {
        let meter = opentelemetry::global::meter("harmonia");
        Self {
            documents: meter
                .u64_counter("harmonia.firestore.documents")
                .with_description("Firestore documents read, written or deleted, as billed")
                .build(),
            queries: meter.u64_counter("harmonia.firestore.queries").with_description("Firestore queries run").build(),
        }
    }

    /// `count` documents of `collection` were read, written or deleted.
    pub(crate) fn documents(&self, operation: Operation, collection: Collection, count: u64) {
        let labels = [KeyValue::new("operation", operation.as_str()), KeyValue::new("collection", collection.as_str())];
        self.documents.add(count, &labels);
    }

    /// A query of `collection` returned `returned` documents (billed as at least one read).
    pub(crate) fn query(&self, collection: Collection, returned: usize) {
        self.queries.add(1, &[KeyValue::new("collection", collection.as_str())]);
        self.documents(Operation::Read, collection, u64::try_from(returned.max(1)).unwrap_or(u64::MAX));
    }
}
