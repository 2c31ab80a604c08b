//! The connections and how calls share them: a blocking connection handed work by
//! flat combining, waiting on SQLite's locks within a bound.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use crate::checkpoint::checkpoint_in_background;

/// How long a call waits for another process's lock on the file before it gives up.
pub(crate) const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

thread_local! {
    /// Set when SQLite met another process's lock during an inline call on this thread.
    static MET_LOCK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The busy handler of inline calls: note the lock and do not wait for it (waiting would
/// block the async runtime's thread); the call is then run again where waiting is harmless.
pub(crate) fn note_lock(_attempt: i32) -> bool {
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
pub struct Blocking(pub(crate) Arc<Shared>);

pub(crate) struct Shared {
    pub(crate) conn: Mutex<Connection>,
    /// Calls in (or on their way to) a blocking task, which may hold the connection long.
    pub(crate) off: std::sync::atomic::AtomicUsize,
    /// Calls run, so the checkpointer knows when there may be something to copy.
    pub(crate) calls: std::sync::atomic::AtomicU64,
    /// Calls handed to whoever holds the connection, to run before letting it go ([`release`]).
    pub(crate) handed: Mutex<std::collections::VecDeque<Handed>>,
    /// The file the connection is on (none in memory), for naming a fault of its disk.
    pub(crate) path: Option<PathBuf>,
}

/// A call handed to the holder of the connection: it runs the call and sends the outcome back.
pub(crate) type Handed = Box<dyn FnOnce(&mut Connection) + Send>;

/// What became of a handed call.
pub(crate) enum Handback<T, F> {
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
pub(crate) fn attempt<T>(conn: &mut Connection, f: impl FnOnce(&mut Connection) -> T) -> Option<rusqlite::Result<T>> {
    MET_LOCK.with(|met| met.set(false));
    conn.busy_handler(Some(note_lock)).ok()?;
    let result = f(conn);
    let restored = conn.busy_timeout(BUSY_TIMEOUT);
    (!MET_LOCK.with(std::cell::Cell::get)).then_some(restored.map(|()| result))
}

/// Let the connection go, first running every call handed to its holder meanwhile. A call
/// handed just as the holder looked for the last time is run by whoever takes the connection
/// next: the holder looks again after letting it go, and takes it back while calls wait.
pub(crate) fn release<'a>(shared: &'a Shared, conn: std::sync::MutexGuard<'a, Connection>) {
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
pub(crate) fn abandon(shared: &Shared) {
    let handed = shared.handed.lock().map(|mut handed| std::mem::take(&mut *handed));
    drop(handed);
}

/// Made before the connection's guard, so dropped after it: when a call panics holding the
/// connection (its lock is then lost), the calls handed to it fail instead of waiting for ever.
pub(crate) struct FailHandedOnPanic<'a>(&'a Shared);

impl Drop for FailHandedOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            abandon(self.0);
        }
    }
}

/// Run `f` on the connection, waiting for it, then let it go ([`release`]); `None` when the
/// connection was lost to a panic.
pub(crate) fn holding<T>(shared: &Shared, f: impl FnOnce(&mut Connection) -> T) -> Option<T> {
    let _failing = FailHandedOnPanic(shared);
    let mut conn = shared.conn.lock().ok()?;
    let result = f(&mut conn);
    release(shared, conn);
    Some(result)
}

/// Run `f` on the connection if it is free now, then let it go ([`release`]).
pub(crate) fn holding_if_free<T>(
    shared: &Shared,
    f: impl FnOnce(&mut Connection) -> T,
) -> Result<T, std::sync::TryLockError<()>> {
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

/// Work a call runs on the connection (again, if a hand-off is lost and it runs elsewhere).
pub trait Call<T, E>: FnMut(&mut Connection) -> Result<T, E> + Send + 'static {}

impl<T, E, F: FnMut(&mut Connection) -> Result<T, E> + Send + 'static> Call<T, E> for F {}

/// The error a call answers when its task or the connection's lock is lost (a panic in another
/// call), from the name of what was lost.
pub trait Lost<E>: Fn(&'static str) -> E + Send + 'static {}

impl<E, F: Fn(&'static str) -> E + Send + 'static> Lost<E> for F {}

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
    pub(crate) fn reader(conn: Connection) -> Self {
        let path = conn.path().filter(|p| !p.is_empty()).map(PathBuf::from);
        Self(Arc::new(Shared {
            path,
            conn: Mutex::new(conn),
            off: std::sync::atomic::AtomicUsize::new(0),
            calls: std::sync::atomic::AtomicU64::new(0),
            handed: Mutex::default(),
        }))
    }

    /// The file the connection is on; `None` in memory.
    pub fn path(&self) -> Option<&std::path::Path> {
        self.0.path.as_deref()
    }

    /// A disk fault behind `result`'s failure to reach the file ([`crate::fault`]), as
    /// `storage` makes it an error, when there is one; the error as it was otherwise.
    pub fn named<T, E>(
        &self,
        result: Result<T, E>,
        kind: impl for<'e> FnOnce(&'e E) -> Option<&'e str>,
        storage: impl FnOnce(harmonia_contracts::storage::Fault) -> E,
    ) -> Result<T, E> {
        match result {
            Err(e) => {
                let found = kind(&e).zip(self.path()).and_then(|(kind, path)| crate::fault(kind, path));
                Err(found.map_or(e, storage))
            }
            ok => ok,
        }
    }

    /// Whether no call holds the connection now (a hint: another may take it next).
    pub(crate) fn is_free(&self) -> bool {
        self.0.off.load(std::sync::atomic::Ordering::Acquire) == 0 && self.0.conn.try_lock().is_ok()
    }

    /// Run `f` on the connection: inline when it is free, handed to its holder when another
    /// inline call has it, else in a blocking task; `lost` is the error when the task or the
    /// lock is lost (a panic in another call).
    pub async fn run<T: Send + 'static, E: Send + 'static>(
        &self,
        mut f: impl Call<T, E>,
        lost: impl Lost<E>,
    ) -> Result<T, E> {
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
    pub(crate) async fn hand_over<T: Send + 'static, E: Send + 'static>(
        &self,
        mut f: impl Call<T, E>,
        lost: impl Lost<E>,
    ) -> Result<T, E> {
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
    pub async fn run_off<T: Send + 'static, E: Send + 'static>(
        &self,
        mut f: impl Call<T, E>,
        lost: impl Lost<E>,
    ) -> Result<T, E> {
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
