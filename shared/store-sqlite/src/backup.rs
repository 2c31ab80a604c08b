//! The whole file at once: the integrity check, online backup and restore, and putting a
//! backup in place of a file no store can open.

use std::path::{Path, PathBuf};

use harmonia_store::Error;
use rusqlite::Connection;

use crate::format::{
    APPLICATION_ID, LAYOUT_VERSION, migrate, not_a_store, on_file, temp_beside, unavailable, with_suffix,
};
use crate::store::SqliteStore;

impl SqliteStore {
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
    /// another (written by a version with another [`crate::PAGE_SIZE`], or from a file made by one) is
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
pub(crate) fn resized_copy(from: &Path, beside: &Path, page_size: i64) -> Result<PathBuf, Error> {
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
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(crate::format::io_failure(path, &e))
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
