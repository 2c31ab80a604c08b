//! Faults of the local disk under the embedded default's data directory: one that is full and
//! one that cannot be written. The data file, the local queue and the blob folder name them
//! the same way ([`Fault`]), as `storage_full` and `storage_read_only`, so an operator reads
//! what is wrong with the disk instead of "the store is unavailable, try again".

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use crate::{Code, Error};

/// Below this much free space, a write that failed for a reason the writer could not name
/// (SQLite's "disk I/O error") is taken to have failed for space: a file system keeps a few
/// blocks back, and a commit needs more than that.
const NEARLY_FULL: u64 = 64 * 1024;

/// Why a path cannot be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unwritable {
    /// It is on a file system mounted read-only.
    ReadOnlyMount,
    /// The process has no permission to write it.
    Permission,
}

/// A local disk fault, naming where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Fault {
    /// No space (or no quota) is left on the file system holding `dir`; `free` is what the
    /// file system reported left for this process, when it could be read.
    #[error("no space left for {}", dir.display())]
    Full {
        /// The folder written to.
        dir: PathBuf,
        /// Bytes left, as `statvfs` reports them for an unprivileged writer.
        free: Option<u64>,
    },
    /// `path` cannot be written.
    #[error("{} cannot be written", path.display())]
    ReadOnly {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        why: Unwritable,
    },
}

impl Fault {
    /// The fault an I/O error on `path` (a file or folder written) reports, if it is one:
    /// ENOSPC and EDQUOT are [`Fault::Full`], EROFS and EACCES/EPERM [`Fault::ReadOnly`].
    pub fn of_io(e: &io::Error, path: &Path) -> Option<Fault> {
        match e.kind() {
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => Some(Fault::full(path)),
            io::ErrorKind::ReadOnlyFilesystem => {
                Some(Fault::ReadOnly { path: path.to_owned(), why: Unwritable::ReadOnlyMount })
            }
            io::ErrorKind::PermissionDenied => {
                Some(Fault::ReadOnly { path: path.to_owned(), why: Unwritable::Permission })
            }
            _ => None,
        }
    }

    /// [`Fault::Full`] for `path`, with the space its file system has left.
    pub fn full(path: &Path) -> Fault {
        let dir = folder_of(path);
        Fault::Full { free: free_bytes(&dir), dir }
    }

    /// Look at the disk under `path` after a write failed without saying why (SQLite reports an
    /// I/O error, or that it cannot open a file): a read-only mount, a folder or file this
    /// process may not write, or a file system with next to no space left. `None` when the
    /// disk looks writable: the failure is something else.
    pub fn probe(path: &Path) -> Option<Fault> {
        use rustix::fs::{Access, StatVfsMountFlags, access, statvfs};
        let dir = folder_of(path);
        let stat = statvfs(&dir).ok()?;
        if stat.f_flag.contains(StatVfsMountFlags::RDONLY) {
            return Some(Fault::ReadOnly { path: dir, why: Unwritable::ReadOnlyMount });
        }
        let free = stat.f_bavail.saturating_mul(stat.f_frsize);
        if free < NEARLY_FULL {
            return Some(Fault::Full { dir, free: Some(free) });
        }
        for target in [&dir, &path.to_path_buf()] {
            if target.exists() && access(target.as_path(), Access::WRITE_OK).is_err() {
                return Some(Fault::ReadOnly { path: target.clone(), why: Unwritable::Permission });
            }
        }
        None
    }

    /// The stable code: `storage_full` or `storage_read_only`.
    pub fn code(&self) -> Code {
        match self {
            Fault::Full { .. } => Code::StorageFull,
            Fault::ReadOnly { .. } => Code::StorageReadOnly,
        }
    }
}

/// The operator's sentence: what is wrong, where, and what to do. It names only the
/// operator's own paths.
impl From<Fault> for Error {
    fn from(fault: Fault) -> Self {
        let message = match &fault {
            Fault::Full { dir, free } => format!(
                "The disk holding {} is full{}. Nothing stored was lost; free some space there (or raise the quota), then run the command again.",
                dir.display(),
                free.map(|f| format!(" ({} left)", size(f))).unwrap_or_default(),
            ),
            Fault::ReadOnly { path, why } => format!(
                "{} cannot be written ({}). Commands that only read (status, show, activity, schedule, doctor, ask, serve) still answer from it; to change anything, make it writable.",
                path.display(),
                match why {
                    Unwritable::ReadOnlyMount => "it is on a read-only file system",
                    Unwritable::Permission => "no permission to write it",
                },
            ),
        };
        Error::new(fault.code(), message)
    }
}

/// The last of something a process met, and when: the disk fault a step or the local queue met,
/// which a command following a job reads to stop and say so.
#[derive(Debug)]
pub struct Last<T>(Mutex<Option<(Instant, T)>>);

impl<T> Default for Last<T> {
    fn default() -> Self {
        Self(Mutex::new(None))
    }
}

impl<T: Clone> Last<T> {
    /// Note `value`, met now.
    pub fn note(&self, value: T) {
        if let Ok(mut last) = self.0.lock() {
            *last = Some((Instant::now(), value));
        }
    }

    /// The last value noted at or after `at`.
    pub fn since(&self, at: Instant) -> Option<T> {
        let (when, value) = self.0.lock().ok()?.clone()?;
        (when >= at).then_some(value)
    }
}

/// `path` itself when it is a folder, else the folder it is in.
fn folder_of(path: &Path) -> PathBuf {
    if path.is_dir() {
        return path.to_owned();
    }
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// Bytes an unprivileged writer has left on the file system holding `dir`.
fn free_bytes(dir: &Path) -> Option<u64> {
    rustix::fs::statvfs(dir).ok().map(|s| s.f_bavail.saturating_mul(s.f_frsize))
}

/// `bytes` as an operator reads it: "0 bytes", "12 KiB", "3.4 MiB", "1.2 GiB".
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value < 10.0 { format!("{value:.1} {}", UNITS[unit]) } else { format!("{value:.0} {}", UNITS[unit]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_of_a_full_or_unwritable_disk_are_faults_and_others_are_not() {
        let dir = std::env::temp_dir();
        let full = Fault::of_io(&io::Error::from(io::ErrorKind::StorageFull), &dir).expect("a fault");
        assert!(matches!(&full, Fault::Full { dir: d, free: Some(_) } if d == &dir), "{full:?}");
        assert_eq!(full.code(), Code::StorageFull);
        let quota = Fault::of_io(&io::Error::from(io::ErrorKind::QuotaExceeded), &dir).expect("a fault");
        assert_eq!(quota.code(), Code::StorageFull);
        let ro = Fault::of_io(&io::Error::from(io::ErrorKind::ReadOnlyFilesystem), &dir).expect("a fault");
        assert_eq!(ro, Fault::ReadOnly { path: dir.clone(), why: Unwritable::ReadOnlyMount });
        let denied = Fault::of_io(&io::Error::from(io::ErrorKind::PermissionDenied), &dir).expect("a fault");
        assert_eq!(denied.code(), Code::StorageReadOnly);
        assert_eq!(Fault::of_io(&io::Error::from(io::ErrorKind::ConnectionReset), &dir), None);
    }

    #[test]
    fn a_writable_folder_with_space_is_no_fault() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert_eq!(Fault::probe(&dir.path().join("harmonia.sqlite")), None);
    }

    #[test]
    fn the_sentences_name_the_folder_the_space_left_and_what_to_do() {
        let e = Error::from(Fault::Full { dir: "/srv/harmonia".into(), free: Some(12 * 1024) });
        assert_eq!(e.code, Code::StorageFull);
        assert!(!e.body().retryable);
        assert_eq!(
            e.message,
            "The disk holding /srv/harmonia is full (12 KiB left). Nothing stored was lost; free some space there (or raise the quota), then run the command again."
        );
        let e = Error::from(Fault::ReadOnly { path: "/mnt/backup".into(), why: Unwritable::ReadOnlyMount });
        assert_eq!(e.code, Code::StorageReadOnly);
        assert!(
            e.message.starts_with("/mnt/backup cannot be written (it is on a read-only file system)."),
            "{}",
            e.message
        );
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size(0), "0 bytes");
        assert_eq!(size(1023), "1023 bytes");
        assert_eq!(size(12 * 1024), "12 KiB");
        assert_eq!(size(3_565_158), "3.4 MiB");
        assert_eq!(size(5 << 40), "5.0 TiB");
    }
}
