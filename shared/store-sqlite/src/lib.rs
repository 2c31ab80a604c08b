//! SQLite backend of the Harmonia storage interface: the embedded default.
//!
//! One database file in WAL mode holds every workspace's documents in one table keyed by
//! (workspace, collection, id). Commits run inside `BEGIN IMMEDIATE` transactions, so
//! preconditions are checked and writes applied atomically. The connection is used from
//! blocking tasks; other components (the local event queue) may open the same file.
//!
//! The file is stamped as Harmonia's (`PRAGMA application_id`, [`APPLICATION_ID`]) with its
//! layout version (`PRAGMA user_version`, [`LAYOUT_VERSION`]) when it is created — whole, under
//! its final name in one step, so no process ever sees a half-made file. Opening refuses,
//! with `store_corrupt` naming the file, anything else: an empty file, a file that is not
//! SQLite, another application's database, or one written by a newer version; it never
//! re-creates a data file over it. SQLite's own corruption reports become `store_corrupt`
//! naming the file too, never a retryable `store_unavailable`. A row whose data is not JSON is
//! skipped (logged and counted) by queries, so one bad document cannot hide the others;
//! [`SqliteStore::check`] lists such rows with SQLite's integrity check, and
//! [`SqliteStore::backup`] / [`SqliteStore::restore`] copy the whole file online, and
//! [`replace_unusable`] puts a backup in place of a file no store can open, keeping that file.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, SecondsFormat, Utc};
use harmonia_contracts::ids::{DocId, WorkspaceId};
use harmonia_store::{Collection, Direction, Document, Error, Query, Store, Write, WriteOp};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params_from_iter, types::Value as SqlValue};
use serde_json::{Map, Value};

/// The columns of a table of documents ([`SCHEMA`], [`SHORT_LIVED`]) and its unique key.
macro_rules! document_columns {
    () => {
        "(
            workspace  TEXT NOT NULL,
            collection TEXT NOT NULL,
            id         TEXT NOT NULL,
            version    INTEGER NOT NULL,
            updated_at TEXT NOT NULL,
            data       TEXT NOT NULL,
            job        TEXT,
            UNIQUE (workspace, collection, id)
        )"
    };
}

/// The documents table. A rowid table, not `WITHOUT ROWID`: documents are JSON of one to tens
/// of kilobytes, and a `WITHOUT ROWID` row keeps at most about a quarter of a page in place,
/// the rest on overflow pages that SQLite reads from the file past its page cache, a read
/// call each, every time. Here a row keeps up to a page in place, and its key lives in the
/// unique index.
const SCHEMA: &str = concat!("CREATE TABLE IF NOT EXISTS documents ", document_columns!(), ";");

/// What [`migrate`] brings every file to, beside [`SCHEMA`]: the index of the `job` column (a
/// copy of the document's top-level `job` when that is a string, kept by every write), so the
/// queries that follow one job's documents read those rows only, however many jobs the file
/// holds.
const INDEXES: &str = "
CREATE INDEX IF NOT EXISTS documents_job ON documents (workspace, collection, job, id) WHERE job IS NOT NULL;
";

/// The table of short-lived documents ([`Collection::short_lived`]): the columns of
/// `documents`, without the job index (nothing follows them by job, and a query that does reads
/// the few rows there are). Kept apart, a document written and deleted within one invocation
/// neither splits the page lasting documents are appended to nor, once deleted, leaves it to be
/// freed and taken again: a specialist invocation wrote 11.3 log frames on average with its
/// session among lasting documents and 9.1 with it here.
const SHORT_LIVED: &str = concat!("CREATE TABLE IF NOT EXISTS short_lived ", document_columns!(), ";");

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
/// page size is converted as it is restored ([`SqliteStore::restore`]).
pub const PAGE_SIZE: i64 = 2048;

/// The top-level field copied to the indexed `job` column.
const JOB_FIELD: &str = "job";

/// What `PRAGMA application_id` holds in a Harmonia data file ("HRMN").
pub const APPLICATION_ID: i32 = 0x4852_4D4E;

/// The layout version this build writes (`PRAGMA user_version`): 2 added the indexed `job`
/// column, 3 made `documents` a rowid table ([`SCHEMA`]), 4 added the table of short-lived
/// documents ([`SHORT_LIVED`]). An older file is brought to 4 when opened; a build that knows
/// only an older layout refuses a newer file, as it would not keep the column nor see the table.
pub const LAYOUT_VERSION: i32 = 4;

/// Bring the file's layout to [`LAYOUT_VERSION`], in one transaction: a `documents` table of
/// an older layout (`WITHOUT ROWID`, perhaps without the `job` column) is rebuilt as
/// [`SCHEMA`] with every row copied and its `job` filled; then the indexes, the table of
/// short-lived documents, and the version.
fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
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
    tx.execute_batch(SHORT_LIVED)?;
    if tx.pragma_query_value(None, "user_version", |r| r.get::<_, i32>(0))? < LAYOUT_VERSION {
        tx.pragma_update(None, "user_version", LAYOUT_VERSION)?;
    }
    tx.commit()
}

/// Open `path` with the settings every Harmonia SQLite connection uses: WAL, a busy
/// timeout, foreign keys on, `synchronous=NORMAL` (durable across process crashes).
pub fn open_connection(path: &Path) -> Result<Connection, rusqlite::Error> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "journal_size_limit", LOG_SIZE_LIMIT)?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
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
    Ok(conn)
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

fn unavailable(e: rusqlite::Error) -> Error {
    Error::Unavailable { kind: error_kind(&e) }
}

/// Whether SQLite says the file itself is damaged or not a database.
fn damaged(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase))
}

/// `path` refused as a data file, for `reason`.
fn not_a_store(path: &Path, reason: &'static str) -> Error {
    Error::NotAStore { path: path.display().to_string(), reason }
}

/// A SQLite error on `path`: damage is `store_corrupt` naming the file, anything else
/// `store_unavailable`.
fn on_file(path: &Path, e: rusqlite::Error) -> Error {
    if damaged(&e) { not_a_store(path, "SQLite reports the file damaged or not a database") } else { unavailable(e) }
}

/// A name beside `path` for a file being built there (`.{name}.{pid}-{nanos}.{purpose}`):
/// hidden, and this process's alone.
fn temp_beside(path: &Path, purpose: &str) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let nanos = Utc::now().timestamp_nanos_opt().unwrap_or_default();
    path.with_file_name(format!(".{name}.{}-{nanos}.{purpose}", std::process::id()))
}

/// `path` with `suffix` added to its name: SQLite's companions of a file (`-wal`, `-shm`,
/// `-journal`).
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Create a stamped, empty data file at `path` unless one exists: built under a temporary
/// name and linked into place (which fails if another process linked its own first), so
/// `path` is never an empty or half-made file.
fn create_stamped(path: &Path) -> Result<(), Error> {
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
    let linked = made.map_err(unavailable).and_then(|()| match std::fs::hard_link(&tmp, path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(_) => Err(Error::Unavailable { kind: "data_dir".into() }),
    });
    let _ = std::fs::remove_file(&tmp);
    linked
}

/// Check, reading only, that `path` is a Harmonia data file this build can read: `Ok(true)` when
/// it is one from before the stamp (our table, no application id) that needs stamping.
fn check_stamp(path: &Path) -> Result<bool, Error> {
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

/// How long a call waits for another process's lock on the file before it gives up.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

thread_local! {
    /// Set when SQLite met another process's lock during an inline call on this thread.
    static MET_LOCK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The busy handler of inline calls: note the lock and do not wait for it (waiting would
/// block the async runtime's thread); the call is then run again where waiting is harmless.
fn note_lock(_attempt: i32) -> bool {
    MET_LOCK.with(|met| met.set(true));
    false
}

/// One connection shared by the store and the local queue code paths.
///
/// A call runs inline, on the calling task's thread, when no other process holds a lock it
/// needs: a statement over a local file takes microseconds, while handing it to a blocking
/// thread and back costs two thread wake-ups, which dominate on a small virtual machine. When
/// another inline call has the connection (on another worker thread), this one is handed to
/// that call, which runs it before letting the connection go, and the calling task awaits the
/// result: its thread goes on with other tasks instead of sleeping on the lock, which on two
/// cores left one of them idle for a quarter of the time under concurrent jobs. Only when a
/// call is in a blocking task (it may be waiting seconds for another process), or SQLite meets
/// another process's lock (it reports busy instead of waiting, see [`note_lock`]), does a call
/// go to a blocking task, where it waits up to [`BUSY_TIMEOUT`]. A call may therefore run
/// twice: `f` must leave nothing behind when it fails busy — one statement, or one transaction
/// (dropping it rolls back) — which is how every call here is written.
#[derive(Clone)]
pub struct Blocking(Arc<Shared>);

struct Shared {
    conn: Mutex<Connection>,
    /// Calls in (or on their way to) a blocking task, which may hold the connection long.
    off: std::sync::atomic::AtomicUsize,
    /// Calls run, so the checkpointer knows when there may be something to copy.
    calls: std::sync::atomic::AtomicU64,
    /// Calls handed to whoever holds the connection, to run before letting it go ([`release`]).
    handed: Mutex<std::collections::VecDeque<Handed>>,
}

/// A call handed to the holder of the connection: it runs the call and sends the outcome back.
type Handed = Box<dyn FnOnce(&mut Connection) + Send>;

/// What became of a handed call.
enum Handback<T, F> {
    /// It ran: its result.
    Ran(T),
    /// It met another process's lock: the caller runs it in a blocking task.
    Off(F),
    /// The connection's busy handler could not be restored after it.
    Lost,
}

/// Run `f` where waiting for another process's lock is not allowed (a worker thread of the
/// async runtime): `None` when SQLite met such a lock (`f` left nothing behind; it is to run
/// again off the runtime), `Some(Err)` when the connection's busy timeout could not be set back.
fn attempt<T>(conn: &mut Connection, f: impl FnOnce(&mut Connection) -> T) -> Option<rusqlite::Result<T>> {
    MET_LOCK.with(|met| met.set(false));
    conn.busy_handler(Some(note_lock)).ok()?;
    let result = f(conn);
    let restored = conn.busy_timeout(BUSY_TIMEOUT);
    (!MET_LOCK.with(std::cell::Cell::get)).then_some(restored.map(|()| result))
}

/// Let the connection go, first running every call handed to its holder meanwhile. A call
/// handed just as the holder looked for the last time is run by whoever takes the connection
/// next: the holder looks again after letting it go, and takes it back while calls wait.
fn release<'a>(shared: &'a Shared, conn: std::sync::MutexGuard<'a, Connection>) {
    let _failing = FailHandedOnPanic(shared);
    // Bound after `_failing`, so dropped before it (a parameter would outlive it).
    let mut conn = conn;
    let next = || shared.handed.lock().ok().and_then(|mut handed| handed.pop_front());
    loop {
        while let Some(call) = next() {
            call(&mut conn);
        }
        drop(conn);
        if shared.handed.lock().map(|handed| handed.is_empty()).unwrap_or(true) {
            return;
        }
        conn = match shared.conn.try_lock() {
            Ok(conn) => conn,
            // Its holder runs them.
            Err(std::sync::TryLockError::WouldBlock) => return,
            // A call panicked holding it: nothing will run again, so the waiting calls fail.
            Err(std::sync::TryLockError::Poisoned(_)) => return abandon(shared),
        };
    }
}

/// Drop the calls handed to a connection lost to a panic: their callers learn it is lost.
fn abandon(shared: &Shared) {
    let handed = shared.handed.lock().map(|mut handed| std::mem::take(&mut *handed));
    drop(handed);
}

/// Made before the connection's guard, so dropped after it: when a call panics holding the
/// connection (its lock is then lost), the calls handed to it fail instead of waiting for ever.
struct FailHandedOnPanic<'a>(&'a Shared);

impl Drop for FailHandedOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            abandon(self.0);
        }
    }
}

/// Run `f` on the connection, waiting for it, then let it go ([`release`]); `None` when the
/// connection was lost to a panic.
fn holding<T>(shared: &Shared, f: impl FnOnce(&mut Connection) -> T) -> Option<T> {
    let _failing = FailHandedOnPanic(shared);
    let mut conn = shared.conn.lock().ok()?;
    let result = f(&mut conn);
    release(shared, conn);
    Some(result)
}

/// Run `f` on the connection if it is free now, then let it go ([`release`]).
fn holding_if_free<T>(shared: &Shared, f: impl FnOnce(&mut Connection) -> T) -> Result<T, std::sync::TryLockError<()>> {
    use std::sync::{PoisonError, TryLockError};
    let _failing = FailHandedOnPanic(shared);
    let mut conn = shared.conn.try_lock().map_err(|e| match e {
        TryLockError::WouldBlock => TryLockError::WouldBlock,
        TryLockError::Poisoned(_) => TryLockError::Poisoned(PoisonError::new(())),
    })?;
    let result = f(&mut conn);
    release(shared, conn);
    Ok(result)
}

/// How often the checkpointer copies committed pages from the write-ahead log into the file.
/// Each checkpoint flushes the file, and the commits running meanwhile feel it: in rounds of
/// 20 jobs at a time on 2 cores, one every 250 ms left a quarter of the rounds about a
/// sixth under the median, one a second 2% (ARCHITECTURE.md has the figures). It is also the
/// longest a power loss can take back.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// How long (in frames, a page each) a write-ahead log may be before the checkpointer has the
/// next commit start it again: SQLite's own checkpoint threshold.
const RESTART_FRAMES: i64 = 1000;

/// The size a write-ahead log file is cut back to when it starts again, after a burst grew it.
const LOG_SIZE_LIMIT: i64 = 64 * 1024 * 1024;

impl Blocking {
    /// Wrap a connection. For a file, the write-ahead log is checkpointed by a thread of its
    /// own on a second connection ([`checkpoint_in_background`]) rather than by whichever
    /// commit fills it: a checkpoint flushes the file to disk, which on a slow disk holds the
    /// connection, and every call waiting for it, for tens of milliseconds.
    pub fn new(conn: Connection) -> Self {
        let path = conn.path().filter(|p| !p.is_empty()).map(PathBuf::from);
        let Self(shared) = Self::reader(conn);
        if let Some(path) = path
            && checkpoint_in_background(&path, Arc::downgrade(&shared))
        {
            // Commits no longer checkpoint; if this fails they still do, which is only slower.
            holding(&shared, |conn| {
                let _ = conn.pragma_update(None, "wal_autocheckpoint", 0);
            });
        }
        Self(shared)
    }

    /// Wrap a connection that only reads: nothing to checkpoint.
    fn reader(conn: Connection) -> Self {
        Self(Arc::new(Shared {
            conn: Mutex::new(conn),
            off: std::sync::atomic::AtomicUsize::new(0),
            calls: std::sync::atomic::AtomicU64::new(0),
            handed: Mutex::default(),
        }))
    }

    /// Whether no call holds the connection now (a hint: another may take it next).
    fn is_free(&self) -> bool {
        self.0.off.load(std::sync::atomic::Ordering::Acquire) == 0 && self.0.conn.try_lock().is_ok()
    }

    /// Run `f` on the connection: inline when it is free, handed to its holder when another
    /// inline call has it, else in a blocking task; `lost` is the error when the task or the
    /// lock is lost (a panic in another call).
    pub async fn run<T, E>(
        &self,
        mut f: impl FnMut(&mut Connection) -> Result<T, E> + Send + 'static,
        lost: impl Fn(&'static str) -> E + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: Send + 'static,
    {
        use std::sync::TryLockError;
        use std::sync::atomic::Ordering;
        self.0.calls.fetch_add(1, Ordering::Relaxed);
        match holding_if_free(&self.0, |conn| attempt(conn, &mut f)) {
            Ok(Some(Ok(result))) => result,
            Ok(Some(Err(_))) => Err(lost("busy_timeout")),
            // Another process holds the lock: wait for it off the runtime's threads. Lost to a
            // panic: the blocking task reports it.
            Ok(None) | Err(TryLockError::Poisoned(_)) => self.run_off(f, lost).await,
            // Held by another inline call, which is short: it runs this one too.
            Err(TryLockError::WouldBlock) if self.0.off.load(Ordering::Acquire) == 0 => self.hand_over(f, lost).await,
            // Held by a blocking task, perhaps long.
            Err(TryLockError::WouldBlock) => self.run_off(f, lost).await,
        }
    }

    /// Hand `f` to the holder of the connection and await its outcome.
    async fn hand_over<T, E, F>(&self, mut f: F, lost: impl Fn(&'static str) -> E + Send + 'static) -> Result<T, E>
    where
        T: Send + 'static,
        E: Send + 'static,
        F: FnMut(&mut Connection) -> Result<T, E> + Send + 'static,
    {
        let (back, outcome) = tokio::sync::oneshot::channel();
        let call: Handed = Box::new(move |conn| {
            let handback = match attempt(conn, &mut f) {
                Some(Ok(result)) => Handback::Ran(result),
                Some(Err(_)) => Handback::Lost,
                None => Handback::Off(f),
            };
            // The caller stopped waiting (its task was dropped): nothing to tell.
            let _ = back.send(handback);
        });
        match self.0.handed.lock() {
            Ok(mut handed) => handed.push_back(call),
            Err(_) => return Err(lost("poisoned")),
        }
        // The holder may have let the connection go before the call was handed: take it then
        // (letting it go runs the call).
        if let Err(std::sync::TryLockError::Poisoned(_)) = holding_if_free(&self.0, |_| ()) {
            abandon(&self.0);
        }
        match outcome.await {
            Ok(Handback::Ran(result)) => result,
            Ok(Handback::Lost) => Err(lost("busy_timeout")),
            Ok(Handback::Off(f)) => self.run_off(f, lost).await,
            Err(_) => Err(lost("poisoned")),
        }
    }

    /// Run `f` on the connection in a blocking task, always: for calls that may take long
    /// (an integrity check, a backup) or must wait for other processes.
    pub async fn run_off<T, E>(
        &self,
        mut f: impl FnMut(&mut Connection) -> Result<T, E> + Send + 'static,
        lost: impl Fn(&'static str) -> E + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: Send + 'static,
    {
        use std::sync::atomic::Ordering;
        let shared = self.0.clone();
        let lost_join = lost("blocking_task");
        shared.off.fetch_add(1, Ordering::AcqRel);
        let result = tokio::task::spawn_blocking({
            let shared = shared.clone();
            move || holding(&shared, |conn| f(conn)).unwrap_or_else(|| Err(lost("poisoned")))
        })
        .await
        .unwrap_or(Err(lost_join));
        shared.off.fetch_sub(1, Ordering::AcqRel);
        result
    }

    /// Run `f` on the connection on this thread, for where nothing can be awaited (a `Drop`);
    /// `lost` is the error when the lock is lost. Waits for a call in flight to finish first.
    pub fn run_now<T, E>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, E>,
        lost: impl Fn(&'static str) -> E,
    ) -> Result<T, E> {
        holding(&self.0, f).unwrap_or_else(|| Err(lost("poisoned")))
    }
}

/// Start the thread that checkpoints the write-ahead log of the file at `path` every
/// [`CHECKPOINT_EVERY`] while calls are made on `shared`, until it is dropped; `false` when
/// it could not be started (commits then checkpoint, as SQLite does by default). A passive
/// checkpoint waits for no reader or writer, and another process's checkpointer working on
/// the same file at the same time only makes one of the two skip a turn.
///
/// A log is only started again from its beginning by a commit that begins when every frame in
/// it has been copied; under steady commits that never happens by itself, since frames are
/// added while a checkpoint runs, and the log would grow without end (and every read search a
/// longer index). So when a checkpoint leaves a log of [`RESTART_FRAMES`] or more, the frames
/// added meanwhile (a few) are copied again with this process's connection held, and its next
/// commit starts the log again.
fn checkpoint_in_background(path: &Path, shared: std::sync::Weak<Shared>) -> bool {
    use std::sync::atomic::Ordering;
    let Ok(conn) = Connection::open(path) else { return false };
    // The frames in the log after a passive checkpoint (all copied, unless a reader still
    // needs some of them).
    let checkpoint = move || conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(1));
    let started = std::thread::Builder::new().name("harmonia-sqlite-checkpoint".into()).spawn(move || {
        let mut seen = 0;
        loop {
            std::thread::sleep(CHECKPOINT_EVERY);
            let Some(calls) = shared.upgrade().map(|s| s.calls.load(Ordering::Relaxed)) else { return };
            if calls == seen {
                continue;
            }
            seen = calls;
            match checkpoint() {
                Ok(frames) if frames >= RESTART_FRAMES => {
                    let Some(shared) = shared.upgrade() else { return };
                    // Calls meanwhile wait off the runtime's threads, as for any long call.
                    shared.off.fetch_add(1, Ordering::AcqRel);
                    if let Some(Err(e)) = holding(&shared, |_| checkpoint()) {
                        tracing::debug!(error = %error_kind(&e), "a background checkpoint did not run");
                    }
                    shared.off.fetch_sub(1, Ordering::AcqRel);
                }
                Ok(_) => {}
                Err(e) => tracing::debug!(error = %error_kind(&e), "a background checkpoint did not run"),
            }
        }
    });
    started.is_ok()
}

/// The SQLite document store.
///
/// Commits go through the one connection the local queue shares ([`Self::connection`]); reads
/// (`get`, `query`) go to connections of their own ([`READERS`]), which in WAL mode read the
/// last commit without waiting for a writer, so on several cores the reads of one job's step
/// run beside another's commit. A read started after a commit returned sees that commit. Rows
/// are decoded, and documents encoded, outside any connection's lock.
#[derive(Clone)]
pub struct SqliteStore {
    conn: Blocking,
    readers: Arc<Readers>,
    path: PathBuf,
}

/// Connections that only read, and whose turn it is when every one is busy.
struct Readers {
    conns: Vec<Blocking>,
    turn: std::sync::atomic::AtomicUsize,
}

/// How many connections read: one per core of the small machines the embedded default runs on.
pub const READERS: usize = 2;

impl Readers {
    fn open(path: &Path) -> Result<Self, Error> {
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
    fn pick(&self) -> &Blocking {
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
            std::fs::create_dir_all(dir).map_err(|_| Error::Unavailable { kind: "data_dir".into() })?;
        }
        match std::fs::metadata(&path) {
            Ok(meta) if meta.len() == 0 => return Err(not_a_store(&path, "the file is empty (0 bytes)")),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_stamped(&path)?,
            Err(_) => return Err(Error::Unavailable { kind: "data_dir".into() }),
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

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The store's connection, for other tables of the same file (the local queue) to share.
    pub fn connection(&self) -> Blocking {
        self.conn.clone()
    }

    async fn with_conn<T: Send + 'static>(
        &self,
        f: impl FnMut(&mut Connection) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        self.named(self.conn.run(f, |kind| Error::Unavailable { kind: kind.into() }).await)
    }

    /// [`with_conn`](Self::with_conn) for a read: on the shared connection when it is free
    /// (its page cache is warm), else on a reading connection. A reading connection starts each
    /// read by checking the log, and when another connection has committed since its last read,
    /// it drops its page cache and reads the pages again from the file: cheap, but not free.
    async fn reading<T: Send + 'static>(
        &self,
        f: impl FnMut(&mut Connection) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        let conn = if self.conn.is_free() { &self.conn } else { self.readers.pick() };
        self.named(conn.run(f, |kind| Error::Unavailable { kind: kind.into() }).await)
    }

    /// [`with_conn`](Self::with_conn) in a blocking task, for a call over the whole file.
    async fn with_conn_off<T: Send + 'static>(
        &self,
        f: impl FnMut(&mut Connection) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        self.named(self.conn.run_off(f, |kind| Error::Unavailable { kind: kind.into() }).await)
    }

    /// SQLite found the file damaged mid-operation: say which file, and that it is damaged.
    fn named<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        match result {
            Err(Error::Unavailable { kind }) if kind == "sqlite_databasecorrupt" || kind == "sqlite_notadatabase" => {
                Err(not_a_store(&self.path, "SQLite reports the file damaged"))
            }
            other => other,
        }
    }

    /// SQLite's integrity check of the whole file (`["ok"]` when sound) and every row whose
    /// data is not a JSON object, as (workspace, collection, id).
    pub async fn check(&self) -> Result<Check, Error> {
        self.with_conn_off(|conn| {
            let mut stmt = conn.prepare("PRAGMA integrity_check").map_err(unavailable)?;
            let integrity = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(unavailable)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(unavailable)?;
            let mut stmt = conn
                .prepare(
                    "SELECT workspace, collection, id FROM (
                       SELECT workspace, collection, id, data FROM documents
                       UNION ALL SELECT workspace, collection, id, data FROM short_lived
                     )
                     WHERE NOT json_valid(data) OR json_type(data) != 'object' ORDER BY workspace, collection, id",
                )
                .map_err(unavailable)?;
            let unreadable = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .map_err(unavailable)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(unavailable)?;
            Ok(Check { integrity, unreadable })
        })
        .await
    }

    /// Copy the whole data file to `to` (a new file), consistently, while it is in use.
    pub async fn backup(&self, to: &Path) -> Result<(), Error> {
        if to.exists() {
            return Err(Error::Invalid("the backup file already exists; name a new one"));
        }
        let to = to.to_path_buf();
        self.with_conn_off(move |conn| {
            conn.backup(rusqlite::MAIN_DB, &to, rusqlite::backup::NO_PROGRESS).map_err(|e| on_file(&to, e))
        })
        .await
    }

    /// Check that `from` is a Harmonia data file this build reads, as a backup to restore.
    pub fn verify_backup(from: &Path) -> Result<(), Error> {
        match std::fs::metadata(from) {
            Ok(meta) if meta.len() == 0 => return Err(not_a_store(from, "the file is empty (0 bytes)")),
            Ok(_) => {}
            Err(_) => return Err(Error::Invalid("the backup file cannot be read")),
        }
        let check = Connection::open_with_flags(from, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(|e| on_file(from, e))?;
        let pragma =
            |name: &str| check.pragma_query_value(None, name, |r| r.get::<_, i32>(0)).map_err(|e| on_file(from, e));
        match (pragma("application_id")?, pragma("user_version")?) {
            (APPLICATION_ID, v) if v <= LAYOUT_VERSION => Ok(()),
            (APPLICATION_ID, _) => Err(not_a_store(from, "it was written by a newer version of Harmonia")),
            _ => Err(not_a_store(from, "it is not a Harmonia backup")),
        }
    }

    /// Replace this data file's whole content with the backup at `from`, which must be a
    /// Harmonia data file this build reads ([`Self::verify_backup`], checked first; nothing
    /// changes otherwise).
    ///
    /// A data file in WAL mode can only take a backup of its own page size, so a backup of
    /// another (written by a version with another [`PAGE_SIZE`], or from a file made by one) is
    /// first copied beside the data file, rebuilt at this file's page size, and restored from
    /// that copy, which is then removed; the backup itself is only read.
    pub async fn restore(&self, from: &Path) -> Result<(), Error> {
        Self::verify_backup(from)?;
        let from = from.to_path_buf();
        let beside = self.path.clone();
        self.with_conn_off(move |conn| {
            let size = |c: &Connection| c.pragma_query_value(None, "page_size", |r| r.get::<_, i64>(0));
            let ours = size(conn).map_err(unavailable)?;
            let theirs = Connection::open_with_flags(&from, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .and_then(|c| size(&c))
                .map_err(|e| on_file(&from, e))?;
            if ours == theirs {
                conn.restore(rusqlite::MAIN_DB, &from, rusqlite::backup::NO_PROGRESS).map_err(|e| on_file(&from, e))?;
            } else {
                let converted = resized_copy(&from, &beside, ours)?;
                let restored = conn.restore(rusqlite::MAIN_DB, &converted, rusqlite::backup::NO_PROGRESS);
                let _ = std::fs::remove_file(&converted);
                restored.map_err(|e| on_file(&from, e))?;
            }
            // A backup written by an earlier version has its layout.
            migrate(conn).map_err(|e| on_file(&from, e))
        })
        .await
    }
}

/// A copy of the backup at `from`, beside the data file at `beside`, rebuilt with pages of
/// `page_size` bytes: its path. Nothing is left behind when it fails.
fn resized_copy(from: &Path, beside: &Path, page_size: i64) -> Result<PathBuf, Error> {
    let tmp = temp_beside(beside, "resize");
    let built = (|| {
        let mut conn = Connection::open(&tmp)?;
        conn.restore(rusqlite::MAIN_DB, from, rusqlite::backup::NO_PROGRESS)?;
        // The page size changes only by a rebuild, and only out of WAL mode.
        conn.pragma_update(None, "journal_mode", "DELETE")?;
        conn.pragma_update(None, "page_size", page_size)?;
        conn.execute_batch("VACUUM")?;
        conn.close().map_err(|(_, e)| e)
    })();
    match built {
        Ok(()) => Ok(tmp),
        Err(e) => {
            for suffix in ["", "-journal", "-wal", "-shm"] {
                let _ = std::fs::remove_file(with_suffix(&tmp, suffix));
            }
            Err(on_file(from, e))
        }
    }
}

/// Put the backup at `from` in place of the data file at `path`, which no store could open
/// (empty, damaged, foreign: `store_corrupt`). The backup is checked first and copied under a
/// temporary name; only then are the file and its log moved aside, byte for byte, to `kept`
/// (and `kept` + `-wal`, `-shm`), and the copy moved into place. Nothing changes when the
/// backup is refused, and `path` is never a half-made file.
pub fn replace_unusable(path: &Path, from: &Path, kept: &Path) -> Result<(), Error> {
    SqliteStore::verify_backup(from)?;
    if kept.exists() {
        return Err(Error::Invalid("the file to keep the unusable data file in already exists"));
    }
    let tmp = temp_beside(path, "restore");
    let built = (|| {
        let mut conn = Connection::open(&tmp)?;
        conn.restore(rusqlite::MAIN_DB, from, rusqlite::backup::NO_PROGRESS)?;
        // A backup written by an earlier version has its layout.
        migrate(&mut conn)?;
        conn.close().map_err(|(_, e)| e)
    })();
    if let Err(e) = built {
        let _ = std::fs::remove_file(&tmp);
        return Err(on_file(from, e));
    }
    let moved = ["", "-wal", "-shm"].into_iter().try_for_each(|suffix| {
        match std::fs::rename(with_suffix(path, suffix), with_suffix(kept, suffix)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    });
    match moved.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(_) => {
            let _ = std::fs::remove_file(&tmp);
            Err(Error::Unavailable { kind: "data_dir".into() })
        }
    }
}

/// What [`SqliteStore::check`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// SQLite's integrity check: `["ok"]`, or what it found wrong.
    pub integrity: Vec<String>,
    /// Rows whose data is not a JSON object: (workspace, collection, id).
    pub unreadable: Vec<(String, String, String)>,
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
                let stored: Option<(i64, Option<String>)> = row_cached(
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
                .map_err(unavailable)?;
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
    use harmonia_contracts::Code;

    use super::*;

    /// A store in a fresh directory, with the directory's guard: the suite keeps it alive
    /// until the case ends, then the file is removed.
    async fn shared() -> (Arc<dyn Store>, harmonia_testkit::TempDir) {
        let dir = harmonia_testkit::temp_dir();
        let store = SqliteStore::open(dir.path().join("conformance.sqlite")).expect("open");
        (Arc::new(store), dir)
    }

    harmonia_store::store_conformance!(shared());

    /// Short-lived documents are rows of their own table, never of `documents`, and a data file
    /// of layout 3 (which has no such table) gains it when opened, every lasting row kept; the
    /// check reads both tables.
    #[tokio::test]
    async fn short_lived_documents_are_kept_in_a_table_of_their_own() {
        let dir = harmonia_testkit::temp_dir();
        let path = dir.path().join("v3.sqlite");
        let conn = Connection::open(&path).expect("a v3 file");
        conn.execute_batch(SCHEMA).and_then(|()| conn.execute_batch(INDEXES)).expect("the v3 layout");
        conn.pragma_update(None, "application_id", APPLICATION_ID).expect("stamp");
        conn.pragma_update(None, "user_version", 3).expect("v3");
        conn.execute(
            "INSERT INTO documents VALUES ('ws-1', 'notes', 'kept', 1, '2026-01-01T00:00:00.000000Z', '{}', NULL)",
            [],
        )
        .expect("a lasting row");
        drop(conn);

        let store = SqliteStore::open(&path).expect("a v3 file opens");
        let ws: WorkspaceId = "ws-1".parse().expect("ws");
        let (brief, notes) = (Collection::short_lived("brief"), Collection::new("notes"));
        let data = serde_json::json!({"job": "j1"}).as_object().cloned().unwrap_or_default();
        let create = |collection| Write { collection, id: "d".parse().expect("id"), op: WriteOp::Create(data.clone()) };
        store.commit(&ws, vec![create(brief)]).await.expect("a short-lived document");
        store.commit(&ws, vec![create(Collection::new("lasting"))]).await.expect("a lasting document");
        let conn = Connection::open(&path).expect("read the file");
        let rows = |table: &str| -> Vec<String> {
            let mut stmt =
                conn.prepare(&format!("SELECT collection || '/' || id FROM {table} ORDER BY 1")).expect("rows");
            stmt.query_map([], |r| r.get(0)).expect("rows").collect::<Result<_, _>>().expect("rows")
        };
        assert_eq!(rows("short_lived"), ["brief/d"]);
        assert_eq!(rows("documents"), ["lasting/d", "notes/kept"]);
        let version: i32 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).expect("version");
        assert_eq!(version, LAYOUT_VERSION);
        assert!(store.get(&ws, notes, &"kept".parse().expect("id")).await.expect("get").is_some());

        conn.execute("UPDATE short_lived SET data = '[1]' WHERE id = 'd'", []).expect("spoil the row");
        let check = store.check().await.expect("check");
        assert_eq!(check.unreadable, [("ws-1".to_owned(), "brief".to_owned(), "d".to_owned())]);
    }

    /// A data file of layout version 1 (a `WITHOUT ROWID` table, no `job` column) is brought to
    /// the current layout when opened — and when restored from a backup — every row kept, and
    /// its documents are found by job.
    #[tokio::test]
    async fn a_version_one_file_gains_the_job_index_when_opened_or_restored() {
        let dir = harmonia_testkit::temp_dir();
        let old = dir.path().join("v1.sqlite");
        let conn = Connection::open(&old).expect("v1 file");
        conn.execute_batch(
            "CREATE TABLE documents (workspace TEXT NOT NULL, collection TEXT NOT NULL, id TEXT NOT NULL,
               version INTEGER NOT NULL, updated_at TEXT NOT NULL, data TEXT NOT NULL,
               PRIMARY KEY (workspace, collection, id)) WITHOUT ROWID;
             PRAGMA user_version = 1;",
        )
        .expect("v1 layout");
        conn.pragma_update(None, "application_id", APPLICATION_ID).expect("stamp");
        for (id, data) in [("a", r#"{"job":"j1","n":1}"#), ("b", r#"{"job":"j2"}"#), ("c", r#"{"job":7}"#)] {
            conn.execute(
                "INSERT INTO documents VALUES ('ws-1', 'markers', ?1, 1, '2026-01-01T00:00:00.000000Z', ?2)",
                [id, data],
            )
            .expect("v1 row");
        }
        drop(conn);
        let backup = dir.path().join("v1-backup.sqlite");
        std::fs::copy(&old, &backup).expect("keep a v1 copy as a backup");

        let ws: WorkspaceId = "ws-1".parse().expect("ws");
        let markers = Collection::new("markers");
        let by_job = |job: &str| Query::all(10).filter("job", job).expect("filter");
        let ids = |docs: Vec<Document>| docs.into_iter().map(|d| d.id.to_string()).collect::<Vec<_>>();
        let store = SqliteStore::open(&old).expect("a v1 file opens");
        assert_eq!(ids(store.query(&ws, markers, &by_job("j1")).await.expect("query")), ["a"]);
        // Only a string `job` is indexed: a number is no job id.
        assert!(store.query(&ws, markers, &by_job("7")).await.expect("query").is_empty());
        let version: i32 = Connection::open(&old)
            .and_then(|c| c.pragma_query_value(None, "user_version", |r| r.get(0)))
            .expect("version");
        assert_eq!(version, LAYOUT_VERSION);
        let table: String = Connection::open(&old)
            .and_then(|c| c.query_row("SELECT sql FROM sqlite_master WHERE name = 'documents'", [], |r| r.get(0)))
            .expect("the table");
        assert!(!table.contains("WITHOUT ROWID"), "{table}");
        let all = store.query(&ws, markers, &Query::all(10)).await.expect("query");
        assert_eq!(all.iter().map(|d| d.data.clone()).collect::<Vec<_>>().len(), 3, "every row is kept");
        assert_eq!(all[0].data.get("n"), Some(&Value::from(1)));

        // A new write keeps the column; a restored v1 backup is migrated too.
        let write = Write {
            collection: markers,
            id: "d".parse().expect("id"),
            op: WriteOp::Create(serde_json::json!({"job": "j1"}).as_object().cloned().unwrap_or_default()),
        };
        store.commit(&ws, vec![write]).await.expect("write");
        assert_eq!(ids(store.query(&ws, markers, &by_job("j1")).await.expect("query")), ["a", "d"]);
        store.restore(&backup).await.expect("restore a v1 backup");
        assert_eq!(ids(store.query(&ws, markers, &by_job("j2")).await.expect("query")), ["b"]);
        assert_eq!(ids(store.query(&ws, markers, &by_job("j1")).await.expect("query")), ["a"]);
    }

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

    /// A call runs inline while nothing is in its way; one that meets another process's
    /// write lock does not fail and does not block the runtime's thread: it waits for the lock
    /// in a blocking task and then goes through, leaving the other writer's work intact.
    #[tokio::test(flavor = "current_thread")]
    async fn a_call_that_meets_another_writers_lock_waits_for_it_off_the_runtime() {
        use std::future::Future as _;
        use std::task::Poll;

        let dir = harmonia_testkit::temp_dir();
        let path = dir.path().join("locked.sqlite");
        let store = SqliteStore::open(&path).expect("open");
        let ws: WorkspaceId = "ws-1".parse().expect("ws");
        let things = Collection::new("things");
        let data = |n: i64| serde_json::json!({ "n": n }).as_object().cloned().unwrap_or_default();
        let create =
            |id: &str, n: i64| Write { collection: things, id: id.parse().expect("id"), op: WriteOp::Create(data(n)) };
        store.commit(&ws, vec![create("free", 1)]).await.expect("a free file is written inline");

        // Another process takes the write lock and writes, without committing yet.
        let other = open_connection(&path).expect("another connection");
        other.execute_batch("BEGIN IMMEDIATE").expect("the other writer's lock");
        other
            .execute(
                "INSERT INTO documents (workspace, collection, id, version, updated_at, data) VALUES ('ws-1', 'things', 'theirs', 1, ?1, '{}')",
                [now_text()],
            )
            .expect("the other writer's row");

        let mut commit = std::pin::pin!(store.commit(&ws, vec![create("ours", 2)]));
        // The first poll tries inline, meets the lock and hands the call to a blocking task.
        let first = std::future::poll_fn(|cx| Poll::Ready(commit.as_mut().poll(cx))).await;
        assert!(first.is_pending(), "a call that meets a lock waits instead of failing: {first:?}");
        // Reads are not in the writer's way (WAL): they still run inline.
        let free = store.get(&ws, things, &"free".parse().expect("id")).await.expect("read");
        assert_eq!(free.map(|d| d.data), Some(data(1)));

        other.execute_batch("COMMIT").expect("the other writer commits");
        commit.await.expect("the waiting call goes through once the lock is released");
        for (id, n) in [("ours", Some(data(2))), ("theirs", Some(Map::new()))] {
            let doc = store.get(&ws, things, &id.parse().expect("id")).await.expect("get");
            assert_eq!(doc.map(|d| d.data), n, "{id}");
        }
    }

    fn refused(path: &Path) -> (Code, String) {
        let e = SqliteStore::open(path).expect_err("refused");
        let e = harmonia_contracts::Error::from(e);
        (e.code, e.message.into_owned())
    }

    #[test]
    fn anything_but_a_harmonia_data_file_is_refused_naming_it_and_left_as_it_was() {
        let dir = harmonia_testkit::temp_dir();
        let foreign = dir.path().join("foreign.sqlite");
        Connection::open(&foreign).and_then(|c| c.execute_batch("CREATE TABLE notes (x TEXT);")).expect("foreign");
        let other_app = dir.path().join("other-app.sqlite");
        Connection::open(&other_app)
            .and_then(|c| c.execute_batch("CREATE TABLE documents (x TEXT); PRAGMA application_id = 42;"))
            .expect("another application's");
        let newer = dir.path().join("newer.sqlite");
        SqliteStore::open(&newer).expect("create");
        Connection::open(&newer).and_then(|c| c.pragma_update(None, "user_version", LAYOUT_VERSION + 1)).expect("age");
        let cases: [(&str, Option<&[u8]>, &str); 5] = [
            ("empty.sqlite", Some(b""), "the file is empty (0 bytes)"),
            ("garbage.sqlite", Some(&[0x5a; 8192]), "SQLite reports the file damaged or not a database"),
            ("foreign.sqlite", None, "it is an empty or foreign SQLite database"),
            ("other-app.sqlite", None, "it is another application's SQLite database"),
            ("newer.sqlite", None, "it was written by a newer version of Harmonia"),
        ];
        for (name, bytes, reason) in cases {
            let path = dir.path().join(name);
            if let Some(bytes) = bytes {
                std::fs::write(&path, bytes).expect("write");
            }
            let before = std::fs::read(&path).expect("read");
            let (code, message) = refused(&path);
            assert_eq!(code, Code::StoreCorrupt, "{name}");
            assert!(message.contains(&path.display().to_string()) && message.contains(reason), "{name}: {message}");
            let unchanged = std::fs::read(&path).expect("read") == before;
            assert!(unchanged, "{name} is left exactly as it was");
        }
    }

    #[tokio::test]
    async fn a_data_file_from_before_the_stamp_is_adopted_and_a_new_one_is_stamped() {
        let dir = harmonia_testkit::temp_dir();
        let old = dir.path().join("old.sqlite");
        Connection::open(&old).and_then(|c| c.execute_batch(SCHEMA)).expect("an unstamped data file");
        SqliteStore::open(&old).expect("adopted");
        let fresh = dir.path().join("fresh.sqlite");
        SqliteStore::open(&fresh).expect("created");
        for path in [old, fresh] {
            let c = Connection::open(&path).expect("open");
            let app: i32 = c.pragma_query_value(None, "application_id", |r| r.get(0)).expect("id");
            assert_eq!(app, APPLICATION_ID);
        }
        // No temporary file is left beside the data file.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .expect("dir")
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .filter(|n| n.ends_with(".new"))
            .collect();
        assert!(names.is_empty(), "{names:?}");
    }

    #[tokio::test]
    async fn one_unreadable_row_hides_nothing_else_and_the_check_names_it() {
        let dir = harmonia_testkit::temp_dir();
        let path = dir.path().join("rows.sqlite");
        let store = SqliteStore::open(&path).expect("open");
        let ws: WorkspaceId = "ws-1".parse().expect("ws");
        let jobs = Collection::new("jobs");
        for n in 1..=3 {
            let data = serde_json::json!({"job": format!("j{n}"), "rank": n}).as_object().cloned().unwrap_or_default();
            let id: DocId = format!("j{n}").parse().expect("id");
            harmonia_store::create_if_absent(&store, &ws, jobs, &id, data).await.expect("create");
        }
        Connection::open(&path)
            .and_then(|c| c.execute("UPDATE documents SET data = '{not json' WHERE id = 'j2'", []))
            .expect("damage one row");
        let before = harmonia_store::undecodable_documents();
        let ids = |docs: Vec<Document>| docs.into_iter().map(|d| d.id.to_string()).collect::<Vec<_>>();
        let all = store.query(&ws, jobs, &Query::all(10)).await.expect("a listing");
        assert_eq!(ids(all), ["j1", "j3"]);
        let ordered = Query::all(10).order_by("rank", Direction::Descending).expect("order");
        assert_eq!(ids(store.query(&ws, jobs, &ordered).await.expect("ordered")), ["j3", "j1"]);
        let filtered = Query::all(10).filter("job", "j3").expect("filter");
        assert_eq!(ids(store.query(&ws, jobs, &filtered).await.expect("filtered")), ["j3"]);
        assert!(harmonia_store::undecodable_documents() > before, "skipped rows are counted");
        let check = store.check().await.expect("check");
        assert_eq!(check.integrity, ["ok"]);
        assert_eq!(check.unreadable, [("ws-1".to_owned(), "jobs".to_owned(), "j2".to_owned())]);
    }

    #[tokio::test]
    async fn a_backup_restores_the_data_file_exactly() {
        let dir = harmonia_testkit::temp_dir();
        let store = SqliteStore::open(dir.path().join("live.sqlite")).expect("open");
        let ws: WorkspaceId = "ws-1".parse().expect("ws");
        let things = Collection::new("things");
        let put = |n: u32| serde_json::json!({"n": n}).as_object().cloned().unwrap_or_default();
        let id: DocId = "kept".parse().expect("id");
        harmonia_store::create_if_absent(&store, &ws, things, &id, put(1)).await.expect("create");
        let backup = dir.path().join("backup.sqlite");
        store.backup(&backup).await.expect("backup");
        assert!(store.backup(&backup).await.is_err(), "a backup never overwrites a file");
        // Work after the backup: a change and a new document, then the restore undoes both.
        let doc = store.get(&ws, things, &id).await.expect("get").expect("present");
        harmonia_store::update(&store, &ws, things, &id, put(2), doc.version).await.expect("update");
        let later: DocId = "later".parse().expect("id");
        harmonia_store::create_if_absent(&store, &ws, things, &later, put(3)).await.expect("create");
        store.restore(&backup).await.expect("restore");
        let doc = store.get(&ws, things, &id).await.expect("get").expect("present");
        assert_eq!(doc.data.get("n"), Some(&Value::from(1)));
        assert!(store.get(&ws, things, &later).await.expect("get").is_none());
        // Only a Harmonia backup restores, and a refused one changes nothing.
        let foreign = dir.path().join("foreign.sqlite");
        Connection::open(&foreign).and_then(|c| c.execute_batch("CREATE TABLE notes (x TEXT);")).expect("foreign");
        let e = harmonia_contracts::Error::from(store.restore(&foreign).await.expect_err("refused"));
        assert_eq!(e.code, Code::StoreCorrupt);
        assert!(store.get(&ws, things, &id).await.expect("get").is_some());
    }

    /// A backup whose page size is not the data file's (an older version's, or from a file an
    /// older version made) restores all the same, converted on the way; the backup is left as
    /// it was and no copy is left beside the data file.
    #[tokio::test]
    async fn a_backup_of_another_page_size_restores_either_way() {
        let dir = harmonia_testkit::temp_dir();
        let ws: WorkspaceId = "ws-1".parse().expect("ws");
        let things = Collection::new("things");
        let page_size = |p: &Path| {
            Connection::open(p)
                .and_then(|c| c.pragma_query_value(None, "page_size", |r| r.get::<_, i64>(0)))
                .expect("size")
        };
        let body = |n: u32| {
            serde_json::json!({"n": n, "body": "words ".repeat(2000)}).as_object().cloned().unwrap_or_default()
        };
        let new_file = dir.path().join("new.sqlite");
        let store = SqliteStore::open(&new_file).expect("open");
        assert_eq!(page_size(&new_file), PAGE_SIZE, "a new data file has this build's page size");
        for n in 0..20 {
            harmonia_store::create_if_absent(&store, &ws, things, &format!("d{n}").parse().expect("id"), body(n))
                .await
                .expect("create");
        }
        // The same content at 4096-byte pages, as a version before PAGE_SIZE wrote it.
        let old_backup = dir.path().join("old-backup.sqlite");
        store.backup(&old_backup).await.expect("backup");
        Connection::open(&old_backup)
            .and_then(|c| c.execute_batch("PRAGMA journal_mode = DELETE; PRAGMA page_size = 4096; VACUUM;"))
            .expect("rebuild at 4096");
        assert_eq!(page_size(&old_backup), 4096);
        let untouched = std::fs::read(&old_backup).expect("read");
        // Into this build's file, which has moved on since.
        harmonia_store::create_if_absent(&store, &ws, things, &"later".parse().expect("id"), body(99))
            .await
            .expect("create");
        store.restore(&old_backup).await.expect("restore a 4096-byte backup");
        assert!(store.get(&ws, things, &"later".parse().expect("id")).await.expect("get").is_none());
        for n in 0..20 {
            let doc =
                store.get(&ws, things, &format!("d{n}").parse().expect("id")).await.expect("get").expect("present");
            assert_eq!(doc.data, body(n));
        }
        assert_eq!(std::fs::read(&old_backup).expect("read"), untouched, "the backup is only read");
        assert_eq!(page_size(&new_file), PAGE_SIZE);
        assert_eq!(store.check().await.expect("check").integrity, ["ok"]);
        // And a backup of this build's file into a data file an older version made.
        let old_file = dir.path().join("old.sqlite");
        std::fs::copy(&old_backup, &old_file).expect("an older data file");
        let older = SqliteStore::open(&old_file).expect("open the older file");
        let new_backup = dir.path().join("new-backup.sqlite");
        store.backup(&new_backup).await.expect("backup");
        assert_eq!(page_size(&new_backup), PAGE_SIZE);
        harmonia_store::create_if_absent(&older, &ws, things, &"stray".parse().expect("id"), body(7))
            .await
            .expect("create");
        older.restore(&new_backup).await.expect("restore into the older file");
        assert!(older.get(&ws, things, &"stray".parse().expect("id")).await.expect("get").is_none());
        assert_eq!(
            older.get(&ws, things, &"d3".parse().expect("id")).await.expect("get").expect("present").data,
            body(3)
        );
        assert_eq!(page_size(&old_file), 4096, "an existing file keeps its page size");
        let left: Vec<String> = std::fs::read_dir(dir.path())
            .expect("list")
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .filter(|n| n.contains(".resize"))
            .collect();
        assert!(left.is_empty(), "no converted copy is left behind: {left:?}");
    }

    /// Under commits that never pause (two writers, one always waiting for the other), the
    /// write-ahead log is started again from its beginning (its checkpoint sequence, bytes
    /// 12-16 of its header, moves on) instead of growing for as long as the commits go on.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_starts_again_under_commits_that_never_pause() {
        let dir = harmonia_testkit::temp_dir();
        let path = dir.path().join("busy.sqlite");
        let store = Arc::new(SqliteStore::open(&path).expect("open"));
        let ws: WorkspaceId = "ws-1".parse().expect("ws");
        let things = Collection::new("things");
        let log = PathBuf::from(format!("{}-wal", path.display()));
        let sequence = || {
            use std::io::Read;
            let mut header = [0_u8; 16];
            std::fs::File::open(&log).and_then(|mut f| f.read_exact(&mut header)).expect("the log's header");
            u32::from_be_bytes([header[12], header[13], header[14], header[15]])
        };
        let put =
            |n: u64| serde_json::json!({"n": n, "body": "x".repeat(2000)}).as_object().cloned().unwrap_or_default();
        harmonia_store::create_if_absent(&*store, &ws, things, &"0".parse().expect("id"), put(0)).await.expect("write");
        let first = sequence();
        // The writers stop when the log starts again, or after 20 s, whichever comes first.
        let started = std::time::Instant::now();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writers: Vec<_> = (0..2_u64)
            .map(|w| {
                let (store, ws, stop) = (store.clone(), ws.clone(), stop.clone());
                tokio::spawn(async move {
                    let mut n = 0_u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed)
                        && started.elapsed() < std::time::Duration::from_secs(20)
                    {
                        n += 1;
                        let id: DocId = format!("{w}-{}", n % 2000).parse().expect("id");
                        let write = Write { collection: things, id, op: WriteOp::Upsert(put(n)) };
                        store.commit(&ws, vec![write]).await.expect("write");
                        // A commit that went straight through never gave the thread back.
                        tokio::task::yield_now().await;
                    }
                    n
                })
            })
            .collect();
        while sequence() == first && writers.iter().any(|w| !w.is_finished()) {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut commits = 0;
        for w in writers {
            commits += w.await.expect("writer");
        }
        assert_ne!(sequence(), first, "the log grew through {commits} commits without starting again");
        let size = std::fs::metadata(&log).expect("the log").len();
        assert!(size <= u64::try_from(LOG_SIZE_LIMIT).expect("limit"), "{size} bytes of log");
    }

    /// A connection in memory with one counter, for the hand-over's cases.
    fn counter() -> Blocking {
        let conn = Connection::open_in_memory().expect("memory");
        conn.execute_batch("CREATE TABLE n (v INTEGER NOT NULL); INSERT INTO n VALUES (0);").expect("counter");
        Blocking::new(conn)
    }

    fn lost(why: &'static str) -> String {
        why.to_owned()
    }

    /// A task that adds one to the counter.
    fn increment(conn: &Blocking) -> tokio::task::JoinHandle<Result<usize, String>> {
        let conn = conn.clone();
        tokio::spawn(async move {
            conn.run(|c| c.execute("UPDATE n SET v = v + 1", []).map_err(|e| e.to_string()), lost).await
        })
    }

    /// Calls that meet on the connection from two worker threads are handed to whichever holds
    /// it: every one runs, and runs once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calls_handed_to_the_holder_all_run_once() {
        let conn = counter();
        let calls: Vec<_> = (0..2000).map(|_| increment(&conn)).collect();
        let all = async {
            for call in calls {
                call.await.expect("task").expect("call");
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(60), all).await.expect("no call is left waiting");
        let v =
            conn.run(|c| c.query_row("SELECT v FROM n", [], |r| r.get::<_, i64>(0)).map_err(|e| e.to_string()), lost);
        assert_eq!(v.await, Ok(2000));
        assert!(conn.0.handed.lock().expect("queue").is_empty());
    }

    /// A call that panics holding the connection loses it (its lock is poisoned); the calls
    /// handed to it meanwhile fail with the loss instead of waiting for ever, and so do later
    /// ones.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_that_panics_holding_the_connection_fails_the_calls_handed_to_it() {
        let conn = counter();
        let holding = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let panicking = tokio::spawn({
            let (conn, holding) = (conn.clone(), holding.clone());
            let shared = conn.0.clone();
            async move {
                conn.run(
                    move |_| -> Result<(), String> {
                        holding.store(true, std::sync::atomic::Ordering::Release);
                        // Until three calls are handed to it.
                        while shared.handed.lock().map(|h| h.len()).unwrap_or(0) < 3 {
                            std::thread::yield_now();
                        }
                        panic!("a bug in a call");
                    },
                    lost,
                )
                .await
            }
        });
        while !holding.load(std::sync::atomic::Ordering::Acquire) {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let handed: Vec<_> = (0..3).map(|_| increment(&conn)).collect();
        assert!(panicking.await.is_err(), "the call panicked");
        let all = async {
            let mut outcomes = Vec::new();
            for call in handed {
                outcomes.push(call.await.expect("task"));
            }
            outcomes
        };
        let outcomes =
            tokio::time::timeout(std::time::Duration::from_secs(60), all).await.expect("no call waits for ever");
        assert_eq!(outcomes, vec![Err("poisoned".to_owned()); 3]);
        assert_eq!(increment(&conn).await.expect("task"), Err("poisoned".to_owned()));
    }
}
