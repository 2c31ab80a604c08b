//! The store: documents read and written through the storage interface.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, SecondsFormat, Utc};
use harmonia_contracts::ids::{DocId, WorkspaceId};
use harmonia_store::{Collection, Direction, Document, Error, Query, Store, Write, WriteOp};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params_from_iter, types::Value as SqlValue};
use serde_json::{Map, Value};

use crate::format::{
    APPLICATION_ID, JOB_FIELD, SCHEMA, check_stamp, create_stamped, exec_cached, fault, io_failure, migrate,
    not_a_store, on_file, open_connection, row_cached, unavailable,
};
use crate::pool::Blocking;

/// The SQLite document store.
///
/// Commits go through the one connection the local queue shares ([`Self::connection`]); reads
/// (`get`, `query`) go to connections of their own ([`READERS`]), which in WAL mode read the
/// last commit without waiting for a writer, so on several cores the reads of one job's step
/// run beside another's commit. A read started after a commit returned sees that commit. Rows
/// are decoded, and documents encoded, outside any connection's lock.
#[derive(Clone)]
pub struct SqliteStore {
    pub(crate) conn: Blocking,
    pub(crate) readers: Arc<Readers>,
    pub(crate) path: PathBuf,
}

/// Connections that only read, and whose turn it is when every one is busy.
pub(crate) struct Readers {
    conns: Vec<Blocking>,
    turn: std::sync::atomic::AtomicUsize,
}

/// How many connections read: one per core of the small machines the embedded default runs on.
pub const READERS: usize = 2;

impl Readers {
    pub(crate) fn open(path: &Path) -> Result<Self, Error> {
        let conns = (0..READERS)
            .map(|_| {
                let conn = open_connection(path).map_err(|e| on_file(path, e))?;
                // A bug that tried to write through a reader fails instead of writing.
                conn.pragma_update(None, "query_only", true).map_err(|e| on_file(path, e))?;
                Ok(Blocking::reader(conn))
            })
            .collect::<Result<_, Error>>()?;
        Ok(Self { conns, turn: std::sync::atomic::AtomicUsize::new(0) })
    }

    /// A free connection, else the next in turn (the call then waits for it).
    pub(crate) fn pick(&self) -> &Blocking {
        self.conns.iter().find(|c| c.is_free()).unwrap_or_else(|| {
            let turn = self.turn.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            &self.conns[turn % self.conns.len()]
        })
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.path).finish()
    }
}

impl SqliteStore {
    /// Open the data file at `path`, creating a stamped one if there is none; anything there
    /// that is not a Harmonia data file is refused (`store_corrupt`, naming the file) and left
    /// as it is.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| io_failure(dir, &e))?;
        }
        match std::fs::metadata(&path) {
            Ok(meta) if meta.len() == 0 => return Err(not_a_store(&path, "the file is empty (0 bytes)")),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_stamped(&path)?,
            Err(e) => return Err(io_failure(&path, &e)),
        }
        // Checked before anything writes to the file (setting WAL would change a foreign one).
        let unstamped = check_stamp(&path)?;
        let mut conn = open_connection(&path).map_err(|e| on_file(&path, e))?;
        if unstamped {
            conn.pragma_update(None, "application_id", APPLICATION_ID).map_err(|e| on_file(&path, e))?;
            conn.pragma_update(None, "user_version", 1).map_err(|e| on_file(&path, e))?;
        }
        conn.execute_batch(SCHEMA).map_err(|e| on_file(&path, e))?;
        migrate(&mut conn).map_err(|e| on_file(&path, e))?;
        let readers = Arc::new(Readers::open(&path)?);
        Ok(Self { conn: Blocking::new(conn), readers, path })
    }

    /// Open the data file at `path` for reading only, for a data directory that cannot be
    /// written (a read-only mount, a full disk, a copy without write permission). Nothing is
    /// created, migrated or checkpointed; a write through it fails as `storage_read_only` (or
    /// `storage_full`, when that is why). A file of an older layout is refused: it is brought up
    /// to date only where it can be written.
    ///
    /// SQLite reads a file in WAL mode through a shared-memory index beside it (`-shm`), which
    /// it must be able to create. Where it cannot, and no log (`-wal`) holds commits the file
    /// lacks, the file is opened as immutable: nothing can be writing it then, since a writer
    /// would have made the log, and none can start on a disk that cannot be written.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref().to_path_buf();
        match std::fs::metadata(&path) {
            Ok(meta) if meta.len() == 0 => return Err(not_a_store(&path, "the file is empty (0 bytes)")),
            Ok(_) => {}
            Err(e) => return Err(io_failure(&path, &e)),
        }
        let open = |how| open_reading(&path, how);
        let versioned = |how| {
            let conn = open(how)?;
            let version = layout_version(&conn, &path)?;
            Ok::<_, Error>((how, conn, version))
        };
        let (how, conn, version) = match versioned(Reading::Shared) {
            Err(Error::Storage(_) | Error::Unavailable { .. }) if !holds_commits(&path) => {
                versioned(Reading::Immutable)?
            }
            other => other?,
        };
        if version < crate::LAYOUT_VERSION {
            return Err(not_a_store(
                &path,
                "it was written by an older version of Harmonia and is brought up to date only where it can be written",
            ));
        }
        let conn = Blocking::reader(conn);
        let conns = (0..READERS).map(|_| open(how).map(Blocking::reader)).collect::<Result<_, Error>>()?;
        let readers = Arc::new(Readers { conns, turn: std::sync::atomic::AtomicUsize::new(0) });
        Ok(Self { conn, readers, path })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The store's connection, for other tables of the same file (the local queue) to share.
    pub fn connection(&self) -> Blocking {
        self.conn.clone()
    }

    pub(crate) async fn with_conn<T: Send + 'static>(
        &self,
        f: impl FnMut(&mut Connection) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        self.named(self.conn.run(f, |kind| Error::Unavailable { kind: kind.into() }).await)
    }

    /// [`with_conn`](Self::with_conn) for a read: on the shared connection when it is free
    /// (its page cache is warm), else on a reading connection. A reading connection starts each
    /// read by checking the log, and when another connection has committed since its last read,
    /// it drops its page cache and reads the pages again from the file: cheap, but not free.
    pub(crate) async fn reading<T: Send + 'static>(
        &self,
        f: impl FnMut(&mut Connection) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        let conn = if self.conn.is_free() { &self.conn } else { self.readers.pick() };
        self.named(conn.run(f, |kind| Error::Unavailable { kind: kind.into() }).await)
    }

    /// [`with_conn`](Self::with_conn) in a blocking task, for a call over the whole file.
    pub(crate) async fn with_conn_off<T: Send + 'static>(
        &self,
        f: impl FnMut(&mut Connection) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        self.named(self.conn.run_off(f, |kind| Error::Unavailable { kind: kind.into() }).await)
    }

    /// SQLite found the file damaged mid-operation: say which file, and that it is damaged; or
    /// the disk under it full or unwritable: say so, and where.
    pub(crate) fn named<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        match result {
            Err(Error::Unavailable { kind }) if kind == "sqlite_databasecorrupt" || kind == "sqlite_notadatabase" => {
                Err(not_a_store(&self.path, "SQLite reports the file damaged"))
            }
            Err(Error::Unavailable { kind }) => {
                Err(fault(&kind, &self.path).map_or(Error::Unavailable { kind }, Error::Storage))
            }
            other => other,
        }
    }
}

/// How a connection that only reads opens the file.
#[derive(Clone, Copy)]
enum Reading {
    /// Beside any writer, through the shared-memory index.
    Shared,
    /// As a file nothing writes (`immutable=1`): no index, no locks.
    Immutable,
}

/// A connection to `path` that can only read, with the store's cache and statement settings.
fn open_reading(path: &Path, how: Reading) -> Result<Connection, Error> {
    use rusqlite::OpenFlags;
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = match how {
        Reading::Shared => Connection::open_with_flags(path, flags),
        Reading::Immutable => Connection::open_with_flags(immutable_uri(path), flags | OpenFlags::SQLITE_OPEN_URI),
    }
    .map_err(|e| on_file(path, e))?;
    let set = |conn: &Connection| {
        crate::format::tune(conn)?;
        conn.pragma_update(None, "query_only", true)
    };
    set(&conn).map_err(|e| on_file(path, e))?;
    Ok(conn)
}

/// The file's layout version, read (which is when SQLite first needs its index).
fn layout_version(conn: &Connection, path: &Path) -> Result<i32, Error> {
    if conn.pragma_query_value(None, "application_id", |r| r.get::<_, i32>(0)).map_err(|e| on_file(path, e))?
        != APPLICATION_ID
    {
        return Err(not_a_store(path, "it is not a Harmonia data file, or one from before the stamp"));
    }
    conn.pragma_query_value(None, "user_version", |r| r.get::<_, i32>(0)).map_err(|e| on_file(path, e))
}

/// Whether a write-ahead log beside `path` may hold commits the file itself lacks.
fn holds_commits(path: &Path) -> bool {
    std::fs::metadata(crate::format::with_suffix(path, "-wal")).is_ok_and(|m| m.len() > 0)
}

/// `path` as an SQLite URI opening it immutable: every byte outside the unreserved set and `/`
/// percent-encoded (a `?`, `#` or `%` in a folder's name would otherwise end the path).
pub(crate) fn immutable_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => uri.push(char::from(b)),
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    uri.push_str("?immutable=1");
    uri
}

pub(crate) fn now_text() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Micros, true)
}

pub(crate) fn row_to_document(id: String, version: i64, updated_at: String, data: String) -> Result<Document, Error> {
    let id: DocId = id.parse().map_err(|_| Error::Corrupt)?;
    let updated_at = DateTime::parse_from_rfc3339(&updated_at).map_err(|_| Error::Corrupt)?.with_timezone(&Utc);
    let data: Map<String, Value> = serde_json::from_str(&data).map_err(|_| Error::Corrupt)?;
    let version = u64::try_from(version).map_err(|_| Error::Corrupt)?;
    Ok(Document { id, version, updated_at, data })
}

pub(crate) fn json_path(field: &harmonia_store::FieldPath) -> String {
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
        let row = self
            .reading(move |conn| {
                row_cached(
                    conn,
                    in_table!(
                        collection,
                        "SELECT id, version, updated_at, data FROM ",
                        " WHERE workspace = ?1 AND collection = ?2 AND id = ?3"
                    ),
                    [&ws, collection.as_str(), &id],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )
                .optional()
                .map_err(unavailable)
            })
            .await?;
        row.map(|(id, v, u, d)| row_to_document(id, v, u, d)).transpose()
    }

    #[tracing::instrument(name = "store.query", level = "debug", skip_all, fields(db = "sqlite", collection = %collection))]
    async fn query(
        &self,
        workspace: &WorkspaceId,
        collection: Collection,
        query: &Query,
    ) -> Result<Vec<Document>, Error> {
        query.validate(collection)?;
        // Following one job reads that job's rows only: SQLite's planner, with no statistics,
        // would rather walk the whole collection in id order than use the job index.
        let by_job = query.filters.iter().any(|(f, v)| f.as_str() == JOB_FIELD && v.is_string());
        let mut sql = String::from(in_table!(collection, "SELECT id, version, updated_at, data FROM ", ""));
        if by_job && !collection.is_short_lived() {
            sql.push_str(" INDEXED BY documents_job");
        }
        sql.push_str(" WHERE workspace = ? AND collection = ?");
        let mut args: Vec<SqlValue> = vec![workspace.to_string().into(), collection.as_str().to_owned().into()];
        for (field, value) in &query.filters {
            let path = json_path(field);
            match value {
                // The indexed copy of `job`: exactly the rows whose `job` is this string.
                Value::String(s) if field.as_str() == JOB_FIELD => {
                    sql.push_str(" AND job = ?");
                    args.push(s.clone().into());
                }
                // A row that is not JSON at all is let through (and skipped, counted, when it
                // is read) rather than failing the whole query in SQLite's JSON functions.
                Value::String(s) => {
                    sql.push_str(
                        " AND (NOT json_valid(data) OR (json_type(data, ?) = 'text' AND json_extract(data, ?) = ?))",
                    );
                    args.extend([path.clone().into(), path.into(), s.clone().into()]);
                }
                Value::Bool(b) => {
                    sql.push_str(" AND (NOT json_valid(data) OR json_type(data, ?) = ?)");
                    args.extend([path.into(), (if *b { "true" } else { "false" }).to_owned().into()]);
                }
                Value::Number(n) => {
                    let n = n.as_i64().ok_or(Error::Invalid("integer filters must fit in i64"))?;
                    sql.push_str(
                        " AND (NOT json_valid(data) OR (json_type(data, ?) = 'integer' AND json_extract(data, ?) = ?))",
                    );
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
                sql.push_str(" AND (NOT json_valid(data) OR json_type(data, ?) IS NOT NULL)");
                args.push(path.clone().into());
                sql.push_str(&format!(
                    " ORDER BY (CASE WHEN json_valid(data) THEN json_extract(data, ?) END) {dir}, id {dir}"
                ));
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
        let rows: Vec<(String, i64, String, String)> = self
            .reading(move |conn| {
                let mut stmt = conn.prepare_cached(&sql).map_err(unavailable)?;
                let rows = stmt
                    .query_map(params_from_iter(args.iter()), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                    .map_err(unavailable)?;
                rows.collect::<Result<_, _>>().map_err(unavailable)
            })
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for (id, v, u, d) in rows {
            match row_to_document(id.clone(), v, u, d) {
                Ok(doc) => out.push(doc),
                // One unreadable row never hides the rest of a listing.
                Err(_) => harmonia_store::skipped_undecodable(collection, &id),
            }
        }
        Ok(out)
    }

    #[tracing::instrument(name = "store.commit", level = "debug", skip_all, fields(db = "sqlite", writes = writes.len()))]
    async fn commit(&self, workspace: &WorkspaceId, writes: Vec<Write>) -> Result<(), Error> {
        Write::validate_batch(&writes)?;
        let ws = workspace.to_string();
        // Encoded before the connection is taken: the lock is held for SQLite's work only.
        let encoded = writes
            .iter()
            .map(|w| {
                let data = w.data().map(serde_json::to_string).transpose().map_err(|_| Error::Corrupt)?;
                let job = w.data().and_then(|d| d.get(JOB_FIELD)).and_then(Value::as_str).map(str::to_owned);
                Ok((data.unwrap_or_default(), job))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        self.with_conn(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(unavailable)?;
            let now = now_text();
            for (write, (data, job)) in writes.iter().zip(&encoded) {
                // A create or an unconditional delete reads nothing first: the key's uniqueness
                // refuses a second create (`AlreadyExists`, below), and a delete of nothing
                // deletes nothing.
                let blind = matches!(write.op, WriteOp::Create(_) | WriteOp::Delete { expected_version: None });
                let stored: Option<(i64, Option<String>)> = if blind {
                    None
                } else {
                    row_cached(
                        &tx,
                        in_table!(
                            write.collection,
                            "SELECT version, job FROM ",
                            " WHERE workspace = ?1 AND collection = ?2 AND id = ?3"
                        ),
                        [&ws, write.collection.as_str(), write.id.as_str()],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()
                    .map_err(unavailable)?
                };
                let current =
                    stored.as_ref().map(|(v, _)| u64::try_from(*v)).transpose().map_err(|_| Error::Corrupt)?;
                // Dropping `tx` on an early return rolls everything back.
                let next = write.apply_to(current)?;
                match (&write.op, next) {
                    (WriteOp::Check { .. }, _) => {}
                    (_, None) => {
                        exec_cached(
                            &tx,
                            in_table!(
                                write.collection,
                                "DELETE FROM ",
                                " WHERE workspace = ?1 AND collection = ?2 AND id = ?3"
                            ),
                            [&ws, write.collection.as_str(), write.id.as_str()],
                        )
                        .map_err(unavailable)?;
                    }
                    (_, Some(version)) => {
                        let version = i64::try_from(version).map_err(|_| Error::Corrupt)?;
                        let key = (&ws, write.collection.as_str(), write.id.as_str());
                        // An update leaves the job index alone unless the job changed: SQLite
                        // rewrites the index entry of every column a statement sets.
                        match &stored {
                            None => exec_cached(
                                &tx,
                                in_table!(
                                    write.collection,
                                    "INSERT INTO ",
                                    " (workspace, collection, id, version, updated_at, data, job)
                                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
                                ),
                                rusqlite::params![key.0, key.1, key.2, version, now, data, job],
                            ),
                            Some((_, was)) if was == job => exec_cached(
                                &tx,
                                in_table!(
                                    write.collection,
                                    "UPDATE ",
                                    " SET version = ?4, updated_at = ?5, data = ?6
                                     WHERE workspace = ?1 AND collection = ?2 AND id = ?3"
                                ),
                                rusqlite::params![key.0, key.1, key.2, version, now, data],
                            ),
                            Some(_) => exec_cached(
                                &tx,
                                in_table!(
                                    write.collection,
                                    "UPDATE ",
                                    " SET version = ?4, updated_at = ?5, data = ?6, job = ?7
                                     WHERE workspace = ?1 AND collection = ?2 AND id = ?3"
                                ),
                                rusqlite::params![key.0, key.1, key.2, version, now, data, job],
                            ),
                        }
                        .map_err(|e| match e.sqlite_error_code() {
                            // Only a create wrote without reading first.
                            Some(rusqlite::ErrorCode::ConstraintViolation) if blind => Error::AlreadyExists,
                            _ => unavailable(e),
                        })?;
                    }
                }
            }
            tx.commit().map_err(unavailable)
        })
        .await
    }
}
