//! The write-ahead log's checkpointer: a thread of its own, on a second connection.

use std::path::Path;

use rusqlite::Connection;

use crate::format::error_kind;
use crate::pool::{Shared, holding};

/// How often the checkpointer copies committed pages from the write-ahead log into the file.
/// Each checkpoint flushes the file, and the commits running meanwhile feel it: in rounds of
/// 20 jobs at a time on 2 cores, one every 250 ms left a quarter of the rounds about a
/// sixth under the median, one a second 2% (ARCHITECTURE.md has the figures). It is also the
/// longest a power loss can take back.
pub(crate) const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// How long (in frames, a page each) a write-ahead log may be before the checkpointer has the
/// next commit start it again: SQLite's own checkpoint threshold.
pub(crate) const RESTART_FRAMES: i64 = 1000;

/// The size a write-ahead log file is cut back to when it starts again, after a burst grew it.
pub(crate) const LOG_SIZE_LIMIT: i64 = 64 * 1024 * 1024;

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
pub(crate) fn checkpoint_in_background(path: &Path, shared: std::sync::Weak<Shared>) -> bool {
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
