//! The disk faults this process's steps met: a full disk or one that cannot be written makes a
//! step wait (its delivery is retried, see [`super::Error`]), and nothing about the job says so
//! (writing that would fail too). A command following a job here reads them, so it stops and
//! says what is wrong instead of waiting for a job that cannot move.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use harmonia_contracts::{Code, Error};

/// The last disk fault a step of this process met, and when.
#[derive(Clone, Debug, Default)]
pub struct Faults(Arc<Mutex<Option<(Instant, Error)>>>);

impl Faults {
    /// Note `e` if it is a disk fault (`storage_full`, `storage_read_only`).
    pub fn note(&self, e: &Error) {
        if matches!(e.code, Code::StorageFull | Code::StorageReadOnly)
            && let Ok(mut last) = self.0.lock()
        {
            *last = Some((Instant::now(), e.clone()));
        }
    }

    /// The last disk fault met at or after `at`.
    pub fn since(&self, at: Instant) -> Option<Error> {
        let (when, e) = self.0.lock().ok()?.clone()?;
        (when >= at).then_some(e)
    }
}
