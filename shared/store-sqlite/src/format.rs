//! The file: its tables and indexes, its stamp (application id and layout version), the
//! layout migration, how a connection is opened, and how SQLite's failures read as the store's.

use std::path::{Path, PathBuf};

use chrono::Utc;
use harmonia_contracts::storage::{Fault, Unwritable};
use harmonia_store::Error;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use crate::checkpoint::LOG_SIZE_LIMIT;
use crate::pool::BUSY_TIMEOUT;

/// The columns of a table of documents ([`SCHEMA`], [`SHORT_LIVED`]), with `$key`: how the
/// table holds its unique key, `(workspace, collection, id)`.
macro_rules! document_columns {
    ($key:literal) => {
        concat!(
            "(
            workspace  TEXT NOT NULL,
            collection TEXT NOT NULL,
            id         TEXT NOT NULL,
            version    INTEGER NOT NULL,
            updated_at TEXT NOT NULL,
            data       TEXT NOT NULL,
            job        TEXT,
            ",
            $key,
            " (workspace, collection, id)
        )"
        )
    };
}

/// The documents table. A rowid table, not `WITHOUT ROWID`: documents are JSON of one to tens
/// of kilobytes, and a `WITHOUT ROWID` row keeps at most about a quarter of a page in place,
/// the rest on overflow pages that SQLite reads from the file past its page cache, a read
/// call each, every time. Here a row keeps up to a page in place, and its key lives in the
/// unique index.
pub(crate) const SCHEMA: &str = concat!("CREATE TABLE IF NOT EXISTS documents ", document_columns!("UNIQUE"), ";");

/// What [`migrate`] brings every file to, beside [`SCHEMA`]: the index of the `job` column (a
/// copy of the document's top-level `job` when that is a string, kept by every write), so the
/// queries that follow one job's documents read those rows only, however many jobs the file
/// holds.
pub(crate) const INDEXES: &str = "
CREATE INDEX IF NOT EXISTS documents_job ON documents (workspace, collection, job, id) WHERE job IS NOT NULL;
";

/// The table of short-lived documents ([`Collection::short_lived`]): the columns of
/// `documents`, keyed by `(workspace, collection, id)` itself (`WITHOUT ROWID`), without the
/// job index (nothing follows them by job, and a query that does reads the few rows there are).
/// Kept apart, a document written and deleted within one invocation neither splits the page
/// lasting documents are appended to nor, once deleted, leaves it to be freed and taken again:
/// a specialist invocation wrote 11.3 log frames on average with its session among lasting
/// documents and 9.1 with it here. Keyed by its own key, a write changes one page where a
/// rowid table changes two (its row and its key's index): the documents here are small (a
/// session is written when it opens, before any event), well within the quarter page a
/// `WITHOUT ROWID` row keeps in place.
pub(crate) const SHORT_LIVED: &str =
    concat!("CREATE TABLE IF NOT EXISTS short_lived ", document_columns!("PRIMARY KEY"), " WITHOUT ROWID;");

/// `sql` (two string literals around a table name) for the table `collection`'s documents live
/// in: `documents`, or [`SHORT_LIVED`]'s.
macro_rules! in_table {
    ($collection:expr, $before:literal, $after:literal) => {
        if $collection.is_short_lived() {
            concat!($before, "short_lived", $after)
        } else {
            concat!($before, "documents", $after)
        }
    };
}

/// The page size of a data file this build creates (SQLite's default is 4096). A commit
/// writes every page it changes to the write-ahead log whole — the document's leaf, the leaves
/// of both indexes, the queue's rows — and most of those pages change by a few hundred bytes,
/// so smaller pages mean fewer bytes written per commit: on two cores, 20 concurrent jobs ran
/// at 141–150 jobs/s against 112–143 with 4096 (alternating runs), with 8192 and 16384
/// slower still. An existing file keeps the page size it was made with; a backup of another
/// page size is converted as it is restored ([`crate::SqliteStore::restore`]).
pub const PAGE_SIZE: i64 = 2048;

/// The top-level field copied to the indexed `job` column.
pub(crate) const JOB_FIELD: &str = "job";

/// What `PRAGMA application_id` holds in a Harmonia data file ("HRMN").
pub const APPLICATION_ID: i32 = 0x4852_4D4E;

/// The layout version this build writes (`PRAGMA user_version`): 2 added the indexed `job`
/// column, 3 made `documents` a rowid table ([`SCHEMA`]), 4 added the table of short-lived
/// documents ([`SHORT_LIVED`]), 5 keyed that table by its own key. An older file is brought to
/// 5 when opened; a build that knows only an older layout refuses a newer file, as it would not
/// keep the column nor see the table.
pub const LAYOUT_VERSION: i32 = 5;

/// Bring the file's layout to [`LAYOUT_VERSION`], in one transaction: a `documents` table of
/// an older layout (`WITHOUT ROWID`, perhaps without the `job` column) is rebuilt as
/// [`SCHEMA`] with every row copied and its `job` filled; then the indexes, the table of
/// short-lived documents (a rowid one of layout 4 rebuilt as [`SHORT_LIVED`], its rows kept),
/// and the version.
pub(crate) fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let sql: String =
        tx.query_row("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'documents'", [], |r| r.get(0))?;
    if sql.to_ascii_uppercase().contains("WITHOUT ROWID") {
        tx.execute_batch(&format!(
            "ALTER TABLE documents RENAME TO documents_before;
             DROP INDEX IF EXISTS documents_job;
             {SCHEMA}
             INSERT INTO documents (workspace, collection, id, version, updated_at, data, job)
               SELECT workspace, collection, id, version, updated_at, data,
                 CASE WHEN json_valid(data) AND json_type(data, '$.job') = 'text' THEN json_extract(data, '$.job') END
               FROM documents_before;
             DROP TABLE documents_before;"
        ))?;
    }
    tx.execute_batch(INDEXES)?;
    let short_lived: Option<String> = tx
        .query_row("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'short_lived'", [], |r| r.get(0))
        .optional()?;
    match short_lived {
        Some(sql) if !sql.to_ascii_uppercase().contains("WITHOUT ROWID") => tx.execute_batch(&format!(
            "ALTER TABLE short_lived RENAME TO short_lived_before;
             {SHORT_LIVED}
             INSERT INTO short_lived SELECT workspace, collection, id, version, updated_at, data, job
               FROM short_lived_before;
             DROP TABLE short_lived_before;"
        ))?,
        _ => tx.execute_batch(SHORT_LIVED)?,
    }
    if tx.pragma_query_value(None, "user_version", |r| r.get::<_, i32>(0))? < LAYOUT_VERSION {
        tx.pragma_update(None, "user_version", LAYOUT_VERSION)?;
    }
    tx.commit()
}

/// Open `path` with the settings every Harmonia SQLite connection uses: WAL, a busy
/// timeout, foreign keys on, `synchronous=NORMAL` (durable across process crashes).
pub fn open_connection(path: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open(path)?;
    tune(&conn)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "journal_size_limit", LOG_SIZE_LIMIT)?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(conn)
}

/// What every connection of a data file is set to, writing or only reading: the busy timeout,
/// the page cache and the statement cache.
pub(crate) fn tune(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // A larger page cache than the default 2 MiB: most reads are then answered without a read
    // call. (A memory map was tried and cost more: the file grows, and each remap is felt by
    // every core.)
    conn.pragma_update(None, "cache_size", -16 * 1024)?;
    // Every statement the store and the local queue run stays prepared. Without the query
    // planner stability guarantee, a statement whose plan looked at a bound value (a `LIMIT ?`,
    // a parameter compared with another term) is compiled again on every use, since the cache
    // clears its bindings: about a tenth of the pipeline's time went to that.
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}

/// Run `sql` once with `params` on `conn`, its statement prepared once per connection.
pub fn exec_cached(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> rusqlite::Result<usize> {
    conn.prepare_cached(sql)?.execute(params)
}

/// The one row `sql` returns with `params` on `conn`, read by `f`, its statement prepared once
/// per connection.
pub fn row_cached<T>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    f: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.prepare_cached(sql)?.query_row(params, f)
}

/// A short, safe status name for a SQLite error (e.g. `sqlite_databasebusy`).
pub fn error_kind(e: &rusqlite::Error) -> String {
    match e.sqlite_error_code() {
        Some(code) => format!("sqlite_{code:?}").to_lowercase(),
        None => "sqlite".to_owned(),
    }
}

pub(crate) fn unavailable(e: rusqlite::Error) -> Error {
    Error::Unavailable { kind: error_kind(&e) }
}

/// The disk fault behind a SQLite failure (named by [`error_kind`]) on the data file at
/// `path`, if that is what it was: SQLite says "full" for ENOSPC, "read-only" for a file it
/// cannot write, and only "disk I/O error" or "cannot open" for EDQUOT, EROFS or a folder it may
/// not write, so those are looked into on the disk itself ([`Fault::probe`]).
pub fn fault(kind: &str, path: &Path) -> Option<Fault> {
    match kind {
        "sqlite_diskfull" => Some(Fault::full(path)),
        "sqlite_readonly" => {
            Some(Fault::probe(path).unwrap_or(Fault::ReadOnly { path: path.to_owned(), why: Unwritable::Permission }))
        }
        "sqlite_systemiofailure" | "sqlite_cannotopen" => Fault::probe(path),
        _ => None,
    }
}

/// An I/O error on `path` (the data file, its folder or a file beside it): a disk fault if it
/// is one, else `store_unavailable`, logged with its cause.
pub(crate) fn io_failure(path: &Path, e: &std::io::Error) -> Error {
    match Fault::of_io(e, path) {
        Some(fault) => Error::Storage(fault),
        None => {
            tracing::error!(path = %path.display(), error = %e, "the data directory could not be used");
            Error::Unavailable { kind: "data_dir".into() }
        }
    }
}

/// Whether SQLite says the file itself is damaged or not a database.
pub(crate) fn damaged(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase))
}

/// `path` refused as a data file, for `reason`.
pub(crate) fn not_a_store(path: &Path, reason: &'static str) -> Error {
    Error::NotAStore { path: path.display().to_string(), reason }
}

/// A SQLite error on `path`: damage is `store_corrupt` naming the file, a full or unwritable
/// disk its [`Fault`], anything else `store_unavailable`.
pub(crate) fn on_file(path: &Path, e: rusqlite::Error) -> Error {
    if damaged(&e) {
        return not_a_store(path, "SQLite reports the file damaged or not a database");
    }
    match fault(&error_kind(&e), path) {
        Some(fault) => Error::Storage(fault),
        None => unavailable(e),
    }
}

/// A name beside `path` for a file being built there (`.{name}.{pid}-{nanos}.{purpose}`):
/// hidden, and this process's alone.
pub(crate) fn temp_beside(path: &Path, purpose: &str) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let nanos = Utc::now().timestamp_nanos_opt().unwrap_or_default();
    path.with_file_name(format!(".{name}.{}-{nanos}.{purpose}", std::process::id()))
}

/// `path` with `suffix` added to its name: SQLite's companions of a file (`-wal`, `-shm`,
/// `-journal`).
pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Create a stamped, empty data file at `path` unless one exists: built under a temporary
/// name and linked into place (which fails if another process linked its own first), so
/// `path` is never an empty or half-made file.
pub(crate) fn create_stamped(path: &Path) -> Result<(), Error> {
    let tmp = temp_beside(path, "new");
    let made = (|| {
        let conn = Connection::open(&tmp)?;
        conn.pragma_update(None, "page_size", PAGE_SIZE)?;
        conn.execute_batch(SCHEMA)?;
        conn.execute_batch(INDEXES)?;
        conn.execute_batch(SHORT_LIVED)?;
        conn.pragma_update(None, "application_id", APPLICATION_ID)?;
        conn.pragma_update(None, "user_version", LAYOUT_VERSION)?;
        conn.close().map_err(|(_, e)| e)
    })();
    let linked = made.map_err(|e| on_file(path, e)).and_then(|()| match std::fs::hard_link(&tmp, path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io_failure(path, &e)),
    });
    let _ = std::fs::remove_file(&tmp);
    linked
}

/// Check, reading only, that `path` is a Harmonia data file this build can read: `Ok(true)` when
/// it is one from before the stamp (our table, no application id) that needs stamping.
pub(crate) fn check_stamp(path: &Path) -> Result<bool, Error> {
    let conn =
        Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(|e| on_file(path, e))?;
    let pragma = |name: &str| conn.pragma_query_value(None, name, |r| r.get::<_, i32>(0)).map_err(|e| on_file(path, e));
    let (app, version) = (pragma("application_id")?, pragma("user_version")?);
    match app {
        APPLICATION_ID if version <= LAYOUT_VERSION => Ok(false),
        APPLICATION_ID => Err(not_a_store(path, "it was written by a newer version of Harmonia")),
        0 => {
            let ours: bool = conn
                .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'documents'")
                .and_then(|mut q| q.exists([]))
                .map_err(|e| on_file(path, e))?;
            if ours { Ok(true) } else { Err(not_a_store(path, "it is an empty or foreign SQLite database")) }
        }
        _ => Err(not_a_store(path, "it is another application's SQLite database")),
    }
}
