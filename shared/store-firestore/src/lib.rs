//! Firestore backend of the Harmonia storage interface.
//!
//! Documents live at `workspaces/{workspace}/{collection}/{id}` with three fields: `v` (the
//! version), `u` (last write time) and `d` (the data, as a Firestore map), so a workspace's
//! documents are a subtree no query of another workspace can reach. The workspace's own record
//! ([`Collection::WORKSPACES`] under the workspace's id) is the root document
//! `workspaces/{workspace}` itself, with the same three fields. Commits are optimistic and
//! lock-free: every addressed document is read (on a first try, all but those created or
//! deleted unconditionally, for which Firestore's own preconditions stand), the preconditions
//! are checked against what was read, and all writes commit atomically in one Firestore commit
//! whose per-write preconditions (`update_time` equal to what was read, or "does not exist")
//! make Firestore refuse it if anything changed in between; such a race is re-evaluated from
//! fresh reads a bounded number of times. (Read-write transactions would take pessimistic
//! locks, which the emulator resolves only by 30-second lock timeouts.) The client is the
//! `firestore` crate's gRPC connection (it honours `FIRESTORE_EMULATOR_HOST`). Every document
//! read, written or deleted and every query is counted on the process's meter as Firestore
//! bills it (`harmonia.firestore.documents`, `harmonia.firestore.queries`).

mod convert;
mod usage;

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use backon::{ExponentialBuilder, Retryable};
use chrono::{DateTime, Utc};
use firestore::gcloud_sdk::google::firestore::v1 as fs;
use firestore::gcloud_sdk::prost_types::Timestamp;
use firestore::gcloud_sdk::tonic::{Code as GrpcCode, Request, Status};
use firestore::{FirestoreDb, FirestoreDbOptions};
use futures::TryStreamExt;
use harmonia_contracts::ids::{DocId, WorkspaceId};
use harmonia_store::{Collection, Direction, Document, Error, Query, Store, Write, WriteOp};

use crate::convert::{from_firestore_map, to_firestore_map};
use crate::usage::{Operation, Usage};

/// Optimistic commit attempts before reporting [`Error::Conflict`].
const COMMIT_ATTEMPTS: usize = 12;

fn status_error(status: &Status) -> Error {
    match status.code() {
        GrpcCode::NotFound => Error::NotFound,
        GrpcCode::AlreadyExists => Error::AlreadyExists,
        GrpcCode::FailedPrecondition => Error::PreconditionFailed,
        GrpcCode::Aborted => Error::Conflict,
        GrpcCode::InvalidArgument => Error::Invalid("Firestore refused the request as invalid"),
        code => Error::Unavailable { kind: format!("{code:?}").to_lowercase() },
    }
}

/// The Firestore document store.
#[derive(Clone)]
pub struct FirestoreStore {
    db: FirestoreDb,
    database: String,
    usage: Usage,
}

impl std::fmt::Debug for FirestoreStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FirestoreStore").field("database", &self.database).finish()
    }
}

impl FirestoreStore {
    /// Connect to `project`'s `database` (use `(default)` for the default database).
    pub async fn connect(project: &str, database: &str) -> Result<Self, Error> {
        let options = FirestoreDbOptions::new(project.to_owned()).with_database_id(database.to_owned());
        let db = FirestoreDb::with_options(options)
            .await
            .map_err(|_| Error::Unavailable { kind: "firestore_connect".into() })?;
        Ok(Self { db, database: format!("projects/{project}/databases/{database}"), usage: Usage::new() })
    }

    fn parent(&self, workspace: &WorkspaceId) -> String {
        format!("{}/documents/workspaces/{workspace}", self.database)
    }

    fn name(&self, workspace: &WorkspaceId, collection: Collection, id: &DocId) -> String {
        if collection == Collection::WORKSPACES && id.as_str() == workspace.as_str() {
            // Not `workspaces/{ws}/workspaces/{ws}`: tools that read `workspaces/{ws}` find it.
            self.parent(workspace)
        } else {
            format!("{}/{collection}/{id}", self.parent(workspace))
        }
    }

    async fn read(&self, name: &str) -> Result<Option<fs::Document>, Error> {
        let request = fs::GetDocumentRequest { name: name.to_owned(), ..Default::default() };
        match self.db.client().get().get_document(Request::new(request)).await {
            Ok(response) => Ok(Some(response.into_inner())),
            Err(status) if status.code() == GrpcCode::NotFound => Ok(None),
            Err(status) => Err(status_error(&status)),
        }
    }

    /// Read `names` at one consistent read time: `(version, update_time)` or `None` each.
    async fn read_many(&self, names: Vec<String>) -> Result<Vec<Option<(u64, Timestamp)>>, Error> {
        use fs::batch_get_documents_response::Result as Found;
        let request = fs::BatchGetDocumentsRequest {
            database: self.database.clone(),
            documents: names.clone(),
            ..Default::default()
        };
        let mut stream = self
            .db
            .client()
            .get()
            .batch_get_documents(Request::new(request))
            .await
            .map_err(|s| status_error(&s))?
            .into_inner();
        let mut found = std::collections::HashMap::new();
        while let Some(response) = stream.try_next().await.map_err(|s| status_error(&s))? {
            if let Some(Found::Found(doc)) = response.result {
                let update_time = doc.update_time.ok_or(Error::Corrupt)?;
                found.insert(doc.name.clone(), (version_of(&doc)?, update_time));
            }
        }
        Ok(names.iter().map(|n| found.get(n).cloned()).collect())
    }

    /// One optimistic attempt: read every addressed document, check the preconditions,
    /// then commit all writes atomically on the condition (enforced by Firestore) that each
    /// document is still exactly as read. `Conflict` means something changed in between.
    ///
    /// A `blind` attempt reads nothing for a create (Firestore's own "does not exist"
    /// precondition stands for the read) or an unconditional delete (which needs none): most
    /// commits create, and a read costs as much as the write. Should it fail for any reason a
    /// precondition could explain, it is a `Conflict`, and the next attempt reads everything,
    /// so the error reported is exactly the one a read would have found.
    async fn try_commit(&self, workspace: &WorkspaceId, writes: &[Write], blind: bool) -> Result<(), Error> {
        use fs::precondition::ConditionType;
        let unread =
            |w: &Write| blind && matches!(w.op, WriteOp::Create(_) | WriteOp::Delete { expected_version: None });
        let names: Vec<String> = writes.iter().map(|w| self.name(workspace, w.collection, &w.id)).collect();
        let wanted: Vec<String> =
            writes.iter().zip(&names).filter(|(w, _)| !unread(w)).map(|(_, n)| n.clone()).collect();
        let mut found = if wanted.is_empty() { Vec::new() } else { self.read_many(wanted).await? }.into_iter();
        let mut current = Vec::with_capacity(writes.len());
        for write in writes {
            if unread(write) {
                current.push(None);
            } else {
                self.usage.documents(Operation::Read, write.collection, 1);
                current.push(found.next().flatten());
            }
        }
        let now = Utc::now();
        let mut fs_writes = Vec::with_capacity(writes.len());
        let mut billed = Vec::with_capacity(writes.len());
        for ((write, name), current) in writes.iter().zip(names).zip(current) {
            let next = write.apply_to(current.as_ref().map(|(v, _)| *v))?;
            let precondition = match (&current, unread(write), &write.op) {
                // Deleted whatever it holds: no condition.
                (_, true, WriteOp::Delete { .. }) => None,
                (Some((_, update_time)), _, _) => {
                    Some(fs::Precondition { condition_type: Some(ConditionType::UpdateTime(*update_time)) })
                }
                (None, _, _) => Some(fs::Precondition { condition_type: Some(ConditionType::Exists(false)) }),
            };
            let (operation, update_mask) = match (&write.op, next, &current) {
                // A write that changes nothing keeps the document's update time, so this
                // verifies the version without disturbing concurrent readers.
                (WriteOp::Check { .. }, Some(version), Some(_)) => {
                    let fields = HashMap::from([("v".to_owned(), integer(version)?)]);
                    (
                        fs::write::Operation::Update(fs::Document { name, fields, ..Default::default() }),
                        Some(fs::DocumentMask { field_paths: vec!["v".to_owned()] }),
                    )
                }
                (WriteOp::Check { .. }, _, _) | (_, None, _) => (fs::write::Operation::Delete(name), None),
                (_, Some(version), _) => {
                    let data = write.data().cloned().unwrap_or_default();
                    let fields = to_firestore_map(&data, version, now)?;
                    (fs::write::Operation::Update(fs::Document { name, fields, ..Default::default() }), None)
                }
            };
            billed.push(match &operation {
                fs::write::Operation::Delete(_) => Operation::Delete,
                _ => Operation::Write,
            });
            fs_writes.push(fs::Write {
                operation: Some(operation),
                update_mask,
                current_document: precondition,
                ..Default::default()
            });
        }
        let commit = fs::CommitRequest { database: self.database.clone(), writes: fs_writes, ..Default::default() };
        match self.db.client().get().commit(Request::new(commit)).await {
            Ok(_) => {
                for (write, sent) in writes.iter().zip(&billed) {
                    self.usage.documents(*sent, write.collection, 1);
                }
                Ok(())
            }
            // The document changed between the read and the commit.
            Err(s) if matches!(s.code(), GrpcCode::FailedPrecondition | GrpcCode::Aborted) => Err(Error::Conflict),
            // A blind create found its document there.
            Err(s) if blind && matches!(s.code(), GrpcCode::AlreadyExists | GrpcCode::NotFound) => Err(Error::Conflict),
            Err(s) => Err(status_error(&s)),
        }
    }
}

fn integer(n: u64) -> Result<fs::Value, Error> {
    let n = i64::try_from(n).map_err(|_| Error::Corrupt)?;
    Ok(fs::Value { value_type: Some(fs::value::ValueType::IntegerValue(n)) })
}

fn version_of(doc: &fs::Document) -> Result<u64, Error> {
    match doc.fields.get("v").and_then(|v| v.value_type.as_ref()) {
        Some(fs::value::ValueType::IntegerValue(v)) => u64::try_from(*v).map_err(|_| Error::Corrupt),
        _ => Err(Error::Corrupt),
    }
}

fn to_document(doc: fs::Document) -> Result<Document, Error> {
    let id: DocId = doc.name.rsplit('/').next().unwrap_or_default().parse().map_err(|_| Error::Corrupt)?;
    let version = version_of(&doc)?;
    let updated_at = doc
        .update_time
        .and_then(|t| DateTime::<Utc>::from_timestamp(t.seconds, u32::try_from(t.nanos).unwrap_or(0)))
        .ok_or(Error::Corrupt)?;
    let data = match doc.fields.get("d").and_then(|v| v.value_type.clone()) {
        Some(fs::value::ValueType::MapValue(map)) => from_firestore_map(map)?,
        _ => return Err(Error::Corrupt),
    };
    Ok(Document { id, version, updated_at, data })
}

fn field(path: &harmonia_store::FieldPath) -> Option<fs::structured_query::FieldReference> {
    Some(fs::structured_query::FieldReference { field_path: format!("d.{}", path.as_str()) })
}

#[async_trait]
impl Store for FirestoreStore {
    #[tracing::instrument(name = "store.get", level = "debug", skip_all, fields(db = "firestore", collection = %collection))]
    async fn get(
        &self,
        workspace: &WorkspaceId,
        collection: Collection,
        id: &DocId,
    ) -> Result<Option<Document>, Error> {
        let found = self.read(&self.name(workspace, collection, id)).await?;
        self.usage.documents(Operation::Read, collection, 1);
        found.map(to_document).transpose()
    }

    #[tracing::instrument(name = "store.query", level = "debug", skip_all, fields(db = "firestore", collection = %collection))]
    async fn query(
        &self,
        workspace: &WorkspaceId,
        collection: Collection,
        query: &Query,
    ) -> Result<Vec<Document>, Error> {
        use fs::structured_query::{self as sq, filter::FilterType};
        // Refuses a query of the workspace records too: the workspace's own record is the parent
        // document here, which no sub-collection query returns (see `Collection::WORKSPACES`).
        query.validate(collection)?;
        let mut filters = Vec::new();
        for (path, value) in &query.filters {
            filters.push(sq::Filter {
                filter_type: Some(FilterType::FieldFilter(sq::FieldFilter {
                    field: field(path),
                    op: sq::field_filter::Operator::Equal as i32,
                    value: Some(convert::to_firestore(value)?),
                })),
            });
        }
        let r#where = match filters.len() {
            0 => None,
            1 => filters.pop(),
            _ => Some(sq::Filter {
                filter_type: Some(FilterType::CompositeFilter(sq::CompositeFilter {
                    op: sq::composite_filter::Operator::And as i32,
                    filters,
                })),
            }),
        };
        let by_name = |direction: sq::Direction| sq::Order {
            field: Some(sq::FieldReference { field_path: "__name__".into() }),
            direction: direction as i32,
        };
        let order_by = match &query.order_by {
            Some((path, direction)) => {
                let direction = match direction {
                    Direction::Ascending => sq::Direction::Ascending,
                    Direction::Descending => sq::Direction::Descending,
                };
                vec![sq::Order { field: field(path), direction: direction as i32 }, by_name(direction)]
            }
            None => vec![by_name(sq::Direction::Ascending)],
        };
        let structured = fs::StructuredQuery {
            from: vec![sq::CollectionSelector {
                collection_id: collection.as_str().to_owned(),
                all_descendants: false,
            }],
            r#where,
            order_by,
            limit: Some(i32::try_from(query.limit).map_err(|_| Error::Invalid("limit"))?),
            start_at: query.start_after.as_ref().map(|id| fs::Cursor {
                values: vec![fs::Value {
                    value_type: Some(fs::value::ValueType::ReferenceValue(self.name(workspace, collection, id))),
                }],
                before: false,
            }),
            ..Default::default()
        };
        let request = fs::RunQueryRequest {
            parent: self.parent(workspace),
            query_type: Some(fs::run_query_request::QueryType::StructuredQuery(structured)),
            ..Default::default()
        };
        let mut stream =
            self.db.client().get().run_query(Request::new(request)).await.map_err(|s| status_error(&s))?.into_inner();
        let mut out = Vec::new();
        while let Some(response) = stream.try_next().await.map_err(|s| status_error(&s))? {
            if let Some(doc) = response.document {
                out.push(to_document(doc)?);
            }
        }
        self.usage.query(collection, out.len());
        Ok(out)
    }

    #[tracing::instrument(name = "store.commit", level = "debug", skip_all, fields(db = "firestore", writes = writes.len()))]
    async fn commit(&self, workspace: &WorkspaceId, writes: Vec<Write>) -> Result<(), Error> {
        Write::validate_batch(&writes)?;
        // The first try is blind; each later one reads afresh, so a retry sees whatever change
        // made the last one lose.
        let mut first = true;
        (|| self.try_commit(workspace, &writes, std::mem::take(&mut first)))
            .retry(commit_backoff())
            .when(|e| matches!(e, Error::Conflict))
            .await
    }
}

/// Waits between lost commit races: 5 ms growing to at most 120 ms, each stretched by a random
/// fraction so that racing writers do not collide again in lockstep; [`COMMIT_ATTEMPTS`] in all.
fn commit_backoff() -> ExponentialBuilder {
    ExponentialBuilder::new()
        .with_min_delay(Duration::from_millis(5))
        .with_max_delay(Duration::from_millis(120))
        .with_factor(1.5)
        .with_jitter()
        .with_max_times(COMMIT_ATTEMPTS - 1)
}

/// The conformance suite and the document layout, against the Firestore emulator
/// `infra/test.sh` starts (feature `e2e`).
#[cfg(all(test, feature = "e2e"))]
mod tests {
    use std::sync::Arc;

    use super::*;

    async fn store() -> Arc<dyn Store> {
        harmonia_testkit::firestore_emulator();
        let project = harmonia_testkit::unique("conformance");
        Arc::new(FirestoreStore::connect(&project, "(default)").await.expect("connect to the Firestore emulator"))
    }

    harmonia_store::store_conformance!(store());

    /// The workspace record is the document `workspaces/{ws}` itself, as other Firestore
    /// clients read it, and nothing is nested at `workspaces/{ws}/workspaces/{ws}`.
    #[tokio::test]
    async fn the_workspace_record_is_the_workspace_document() {
        harmonia_testkit::firestore_emulator();
        let project = harmonia_testkit::unique("layout");
        let store = FirestoreStore::connect(&project, "(default)").await.expect("connect to the Firestore emulator");
        let ws = WorkspaceId::generate();
        let own: DocId = ws.as_str().parse().expect("doc id");
        let data = serde_json::json!({"name": "Test Brand", "mode": "development"});
        let data = data.as_object().cloned().expect("an object");
        harmonia_store::create_if_absent(&store, &ws, Collection::WORKSPACES, &own, data).await.expect("create");

        // Raw reads through the Firestore client, by full document path.
        let root = format!("projects/{project}/databases/(default)/documents/workspaces/{ws}");
        let raw = store.read(&root).await.expect("read").expect("workspaces/{ws} is a document");
        assert_eq!(raw.name, root);
        match raw.fields.get("d").and_then(|v| v.value_type.as_ref()) {
            Some(fs::value::ValueType::MapValue(map)) => assert!(
                matches!(
                    map.fields.get("name").and_then(|v| v.value_type.as_ref()),
                    Some(fs::value::ValueType::StringValue(name)) if name == "Test Brand"
                ),
                "{map:?}"
            ),
            other => panic!("the record's data is a native map, not {other:?}"),
        }
        assert!(store.read(&format!("{root}/workspaces/{ws}")).await.expect("read").is_none(), "nothing nested");

        // Other collections still nest under the workspace document.
        let jobs = Collection::new("jobs");
        let job: DocId = "job-1".parse().expect("id");
        let empty = serde_json::Map::new();
        harmonia_store::create_if_absent(&store, &ws, jobs, &job, empty).await.expect("create");
        assert!(store.read(&format!("{root}/jobs/job-1")).await.expect("read").is_some());
    }

    /// What a process asks of Firestore is counted as Firestore bills it: a get reads one
    /// document, found or not; a query reads what it returns (at least one) and counts as a
    /// query; a commit reads each document it addresses but those it creates or deletes
    /// unconditionally, then writes or deletes each once it is taken, and a refused commit
    /// writes nothing.
    #[tokio::test]
    async fn each_operation_is_counted_as_firestore_bills_it() {
        use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
        use opentelemetry_sdk::metrics::{InMemoryMetricExporter, SdkMeterProvider};

        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder().with_periodic_exporter(exporter.clone()).build();
        opentelemetry::global::set_meter_provider(provider.clone());
        harmonia_testkit::firestore_emulator();
        let store = FirestoreStore::connect(&harmonia_testkit::unique("usage"), "(default)").await.expect("connect");
        // A collection no other test uses: the counts are this test's alone.
        let probe = Collection::new("usage_probe");
        let ws = WorkspaceId::generate();
        let id = |n: &str| -> DocId { n.parse().expect("id") };
        let data = || serde_json::json!({"n": 1}).as_object().cloned().expect("object");

        assert!(store.get(&ws, probe, &id("a")).await.expect("get").is_none());
        assert!(store.query(&ws, probe, &Query::all(10)).await.expect("query").is_empty());
        let create = |n: &str| Write { collection: probe, id: id(n), op: WriteOp::Create(data()) };
        store.commit(&ws, vec![create("a"), create("b"), create("c")]).await.expect("commit");
        assert_eq!(store.query(&ws, probe, &Query::all(10)).await.expect("query").len(), 3);
        let refused = store.commit(&ws, vec![create("a")]).await;
        assert!(matches!(refused, Err(Error::AlreadyExists)), "{refused:?}");
        let delete = Write { collection: probe, id: id("b"), op: WriteOp::Delete { expected_version: None } };
        store.commit(&ws, vec![delete]).await.expect("delete");

        provider.force_flush().expect("flush");
        let mut counted: HashMap<(String, String), u64> = HashMap::new();
        for resource in exporter.get_finished_metrics().expect("metrics") {
            for metric in resource.scope_metrics().flat_map(|s| s.metrics()) {
                let AggregatedMetrics::U64(MetricData::Sum(sum)) = metric.data() else { continue };
                for point in sum.data_points() {
                    let label =
                        |key: &str| point.attributes().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string());
                    if label("collection").as_deref() != Some("usage_probe") {
                        continue;
                    }
                    let key = (metric.name().to_owned(), label("operation").unwrap_or_default());
                    // Cumulative: the latest export holds the most.
                    let entry = counted.entry(key).or_default();
                    *entry = (*entry).max(point.value());
                }
            }
        }
        let of = |metric: &str, operation: &str| counted.get(&(metric.to_owned(), operation.to_owned())).copied();
        // Reads: the get (1), the empty query (1), the full query (3), and the refused
        // create's (1: its blind try failed, and the next one read to name the error). The
        // creates and the unconditional delete read nothing.
        assert_eq!(of("harmonia.firestore.documents", "read"), Some(6), "{counted:?}");
        assert_eq!(of("harmonia.firestore.documents", "write"), Some(3), "{counted:?}");
        assert_eq!(of("harmonia.firestore.documents", "delete"), Some(1), "{counted:?}");
        assert_eq!(of("harmonia.firestore.queries", ""), Some(2), "{counted:?}");
    }
}
