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

#[macro_use]
mod format;
mod backup;
mod checkpoint;
mod pool;
mod store;

pub use backup::{Check, replace_unusable};
pub use format::{
    APPLICATION_ID, LAYOUT_VERSION, PAGE_SIZE, error_kind, exec_cached, fault, open_connection, row_cached,
};
pub use pool::{Blocking, Call, Lost};
pub use store::{READERS, SqliteStore};

#[cfg(test)]
mod tests;
