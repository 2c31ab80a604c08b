//! SQLite backend of the Harmonia storage interface: the embedded default.
//!
//! One database file in WAL mode holds every workspace's documents in one table keyed by
//! (workspace, collection, id). Commits run inside `BEGIN IMMEDIATE` transactions, so
//! preconditions are checked and writes applied atomically. The connection is used from
//! blocking tasks; other components (the local event queue) may open the same file.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, SecondsFormat, Utc};
use harmonia_contracts::ids::{DocId, WorkspaceId};
use harmonia_store::{Collection, Direction, Document, Error, Query, Store, Write, WriteOp};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params_from_iter, types::Value as SqlValue};
use serde_json::{Map, Value};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS documents (
    workspace  TEXT NOT NULL,
    collection TEXT NOT NULL,
    id         TEXT NOT NULL,
    version    INTEGER NOT NULL,
    updated_at TEXT NOT NULL,
    data       TEXT NOT NULL,
    PRIMARY KEY (workspace, collection, id)
) WITHOUT ROWID;
";

/// Open `path` with the settings every Harmonia SQLite connection uses: WAL, a busy
/// timeout, foreign keys on, `synchronous=NORMAL` (durable across process crashes).
pub fn open_connection(path: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(conn)
}

/// A short, safe status name for a SQLite error (e.g. `sqlite_databasebusy`).
pub fn error_kind(e: &rusqlite::Error) -> String {
    match e.sqlite_error_code() {
        Some(code) => format!("sqlite_{code:?}").to_lowercase(),
        None => "sqlite".to_owned(),
    }
}

fn unavailable(e: rusqlite::Error) -> Error {
    Error::Unavailable { kind: error_kind(&e) }
}

/// One connection used from blocking tasks (SQLite calls block), shared by the store and the
/// local queue code paths.
#[derive(Clone)]
pub struct Blocking(Arc<Mutex<Connection>>);

impl Blocking {
    /// Wrap a connection.
    pub fn new(conn: Connection) -> Self {
        Self(Arc::new(Mutex::new(conn)))
    }

    /// Run `f` on the connection in a blocking task; `lost` is the error when the task or the
    /// lock is lost (a panic in another call).
    pub async fn run<T, E>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
        lost: impl Fn(&'static str) -> E + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: Send + 'static,
    {
        let conn = self.0.clone();
        let lost_join = lost("blocking_task");
        tokio::task::spawn_blocking(move || {
            let mut guard = conn.lock().map_err(|_| lost("poisoned"))?;
            f(&mut guard)
        })
        .await
        .unwrap_or(Err(lost_join))
    }

    /// Run `f` on the connection on this thread, for where nothing can be awaited (a `Drop`);
    /// `lost` is the error when the lock is lost. Waits for a call in flight to finish first.
    pub fn run_now<T, E>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, E>,
        lost: impl Fn(&'static str) -> E,
    ) -> Result<T, E> {
        let mut guard = self.0.lock().map_err(|_| lost("poisoned"))?;
        f(&mut guard)
    }
}

/// The SQLite document store.
#[derive(Clone)]
pub struct SqliteStore {
    conn: Blocking,
    path: PathBuf,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.path).finish()
    }
}

impl SqliteStore {
    /// Open (creating if needed) the database file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|_| Error::Unavailable { kind: "data_dir".into() })?;
        }
        let conn = open_connection(&path).map_err(unavailable)?;
        conn.execute_batch(SCHEMA).map_err(unavailable)?;
        Ok(Self { conn: Blocking::new(conn), path })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    async fn with_conn<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        self.conn.run(f, |kind| Error::Unavailable { kind: kind.into() }).await
    }
}

fn now_text() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Micros, true)
}

fn row_to_document(id: String, version: i64, updated_at: String, data: String) -> Result<Document, Error> {
    let id: DocId = id.parse().map_err(|_| Error::Corrupt)?;
    let updated_at = DateTime::parse_from_rfc3339(&updated_at).map_err(|_| Error::Corrupt)?.with_timezone(&Utc);
    let data: Map<String, Value> = serde_json::from_str(&data).map_err(|_| Error::Corrupt)?;
    let version = u64::try_from(version).map_err(|_| Error::Corrupt)?;
    Ok(Document { id, version, updated_at, data })
}

fn json_path(field: &harmonia_store::FieldPath) -> String {
    format!("$.{}", field.as_str())
}

#[async_trait]
impl Store for SqliteStore {
    #[tracing::instrument(name = "store.get", level = "debug", skip_all, fields(db = "sqlite", collection = %collection))]
    async fn get(
        &self,
        workspace: &WorkspaceId,
        collection: Collection,
        id: &DocId,
    ) -> Result<Option<Document>, Error> {
        let (ws, id) = (workspace.to_string(), id.to_string());
        self.with_conn(move |conn| {
            let row = conn
                .query_row(
                    "SELECT id, version, updated_at, data FROM documents WHERE workspace = ?1 AND collection = ?2 AND id = ?3",
                    [&ws, collection.as_str(), &id],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )
                .optional()
                .map_err(unavailable)?;
            row.map(|(id, v, u, d)| row_to_document(id, v, u, d)).transpose()
        })
        .await
    }

    #[tracing::instrument(name = "store.query", level = "debug", skip_all, fields(db = "sqlite", collection = %collection))]
    async fn query(
        &self,
        workspace: &WorkspaceId,
        collection: Collection,
        query: &Query,
    ) -> Result<Vec<Document>, Error> {
        query.validate(collection)?;
        let mut sql =
            String::from("SELECT id, version, updated_at, data FROM documents WHERE workspace = ? AND collection = ?");
        let mut args: Vec<SqlValue> = vec![workspace.to_string().into(), collection.as_str().to_owned().into()];
        for (field, value) in &query.filters {
            let path = json_path(field);
            match value {
                Value::String(s) => {
                    sql.push_str(" AND json_type(data, ?) = 'text' AND json_extract(data, ?) = ?");
                    args.extend([path.clone().into(), path.into(), s.clone().into()]);
                }
                Value::Bool(b) => {
                    sql.push_str(" AND json_type(data, ?) = ?");
                    args.extend([path.into(), (if *b { "true" } else { "false" }).to_owned().into()]);
                }
                Value::Number(n) => {
                    let n = n.as_i64().ok_or(Error::Invalid("integer filters must fit in i64"))?;
                    sql.push_str(" AND json_type(data, ?) = 'integer' AND json_extract(data, ?) = ?");
                    args.extend([path.clone().into(), path.into(), n.into()]);
                }
                _ => {
                    return Err(Error::Invalid("filter values are strings, integers or booleans"));
                }
            }
        }
        match &query.order_by {
            Some((field, direction)) => {
                let path = json_path(field);
                let dir = match direction {
                    Direction::Ascending => "ASC",
                    Direction::Descending => "DESC",
                };
                sql.push_str(" AND json_type(data, ?) IS NOT NULL");
                args.push(path.clone().into());
                sql.push_str(&format!(" ORDER BY json_extract(data, ?) {dir}, id {dir}"));
                args.push(path.into());
            }
            None => {
                if let Some(after) = &query.start_after {
                    sql.push_str(" AND id > ?");
                    args.push(after.to_string().into());
                }
                sql.push_str(" ORDER BY id ASC");
            }
        }
        sql.push_str(" LIMIT ?");
        args.push(i64::from(query.limit).into());
        self.with_conn(move |conn| {
            let mut stmt = conn.prepare_cached(&sql).map_err(unavailable)?;
            let rows = stmt
                .query_map(params_from_iter(args), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .map_err(unavailable)?;
            let mut out = Vec::new();
            for row in rows {
                let (id, v, u, d) = row.map_err(unavailable)?;
                out.push(row_to_document(id, v, u, d)?);
            }
            Ok(out)
        })
        .await
    }

    #[tracing::instrument(name = "store.commit", level = "debug", skip_all, fields(db = "sqlite", writes = writes.len()))]
    async fn commit(&self, workspace: &WorkspaceId, writes: Vec<Write>) -> Result<(), Error> {
        Write::validate_batch(&writes)?;
        let ws = workspace.to_string();
        self.with_conn(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(unavailable)?;
            let now = now_text();
            for write in &writes {
                let current: Option<i64> = tx
                    .query_row(
                        "SELECT version FROM documents WHERE workspace = ?1 AND collection = ?2 AND id = ?3",
                        [&ws, write.collection.as_str(), write.id.as_str()],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(unavailable)?;
                let current = current.map(u64::try_from).transpose().map_err(|_| Error::Corrupt)?;
                // Dropping `tx` on an early return rolls everything back.
                let next = write.apply_to(current)?;
                match (&write.op, next) {
                    (WriteOp::Check { .. }, _) => {}
                    (_, None) => {
                        tx.execute(
                            "DELETE FROM documents WHERE workspace = ?1 AND collection = ?2 AND id = ?3",
                            [&ws, write.collection.as_str(), write.id.as_str()],
                        )
                        .map_err(unavailable)?;
                    }
                    (_, Some(version)) => {
                        let data = write.data().map(|d| Value::Object(d.clone()).to_string()).unwrap_or_default();
                        let version = i64::try_from(version).map_err(|_| Error::Corrupt)?;
                        tx.execute(
                            "INSERT INTO documents (workspace, collection, id, version, updated_at, data)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                             ON CONFLICT (workspace, collection, id) DO UPDATE
                             SET version = excluded.version, updated_at = excluded.updated_at, data = excluded.data",
                            rusqlite::params![ws, write.collection.as_str(), write.id.as_str(), version, now, data],
                        )
                        .map_err(unavailable)?;
                    }
                }
            }
            tx.commit().map_err(unavailable)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store in a fresh directory, with the directory's guard: the suite keeps it alive
    /// until the case ends, then the file is removed.
    async fn shared() -> (Arc<dyn Store>, harmonia_testkit::TempDir) {
        let dir = harmonia_testkit::temp_dir();
        let store = SqliteStore::open(dir.path().join("conformance.sqlite")).expect("open");
        (Arc::new(store), dir)
    }

    harmonia_store::store_conformance!(shared());

    #[tokio::test]
    async fn documents_survive_reopening_the_file() {
        let dir = harmonia_testkit::temp_dir();
        let path = dir.path().join("durable.sqlite");
        let ws: WorkspaceId = "ws-1".parse().expect("ws");
        let id: DocId = "d".parse().expect("id");
        let things = Collection::new("things");
        {
            let s = SqliteStore::open(&path).expect("open");
            let data = serde_json::json!({"kept": true}).as_object().cloned().unwrap_or_default();
            harmonia_store::create_if_absent(&s, &ws, things, &id, data).await.expect("create");
        }
        let s = SqliteStore::open(&path).expect("reopen");
        let doc = s.get(&ws, things, &id).await.expect("get").expect("present");
        assert_eq!(doc.data.get("kept"), Some(&Value::Bool(true)));
    }
}
