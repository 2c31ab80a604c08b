//! The disk faults this process's steps met: a full disk or one that cannot be written makes a
//! step wait (its delivery is retried, see [`super::Error`]), and nothing about the job says so
//! (writing that would fail too). A command following a job here reads them, so it stops and
//! says what is wrong instead of waiting for a job that cannot move.

use std::time::Instant;

use harmonia_contracts::storage::Last;
use harmonia_contracts::{Code, Error};

/// The last disk fault a step of this process met, and when.
#[derive(Debug, Default)]
pub struct Faults(Last<Error>);

impl Faults {
    /// Note `e` if it is a disk fault (`storage_full`, `storage_read_only`).
    pub fn note(&self, e: &Error) {
        if matches!(e.code, Code::StorageFull | Code::StorageReadOnly) {
            self.0.note(e.clone());
        }
    }

    /// The last disk fault met at or after `at`.
    pub fn since(&self, at: Instant) -> Option<Error> {
        self.0.since(at)
    }
}
