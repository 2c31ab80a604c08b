//! The human gates: everything an operator decides, in one place, and the only way a person
//! moves a job. Every decision names the exact version it is about and is a durable, attributed
//! record (`records::ApprovalRecord` under `approvals/`).
//!
//! - [`waiting`]: what a gate waits for (the job, the version a decision must name now) and
//!   the checks every decision shares; it decides nothing.
//! - [`decisions`]: approve and reject, and resuming what a decision recorded but had not
//!   sent.
//! - [`rounds`]: request changes and edit, the operator rounds of a gate.
//! - [`schedule`]: an approved post waiting for its window, and the operator's changes to it.
//! - [`calendar`]: the approved posts by the time they go out, for a range (a read view).
//!
//! Imports run one way: `decisions` uses `waiting` and `schedule`; `rounds` and `schedule` use
//! `waiting`; `calendar` uses `waiting`; `waiting` uses none of them. The steps never import the gates: what both read
//! (decision records, their ids) is in `records`.

pub mod calendar;
pub mod decisions;
pub mod rounds;
pub mod schedule;
pub mod waiting;

use harmonia_contracts::Error;

/// A decision that is stored, and what became of the work it set going. Once the record is
/// committed the decision stands, whatever fails after it: publishing the event it released,
/// handing a post to publishing, indexing a moved post. That part is `unfinished`; it carries on
/// with the next command on the embedded default (which resumes what decisions recorded), or
/// with the same decision sent again.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded<T> {
    /// What was decided, as stored.
    pub value: T,
    /// Why the work the decision released did not all start, if it did not.
    pub unfinished: Option<Error>,
    /// The same decision was already stored (a repeat of a request whose answer was lost):
    /// nothing new was stored, and what it released was sent again.
    pub earlier: bool,
}

impl<T> Recorded<T> {
    /// `value`, stored just now, and how what followed the commit went.
    pub fn after(value: T, followed: Result<(), Error>) -> Self {
        Self { value, unfinished: followed.err(), earlier: false }
    }

    /// The stored value when everything after the commit went through, else why not (for a
    /// caller that goes on to wait for the job to move, which it would not).
    pub fn finished(self) -> Result<T, Error> {
        match self.unfinished {
            None => Ok(self.value),
            Some(e) => Err(e),
        }
    }
}

pub use decisions::{DecisionRequest, MAX_REASON_CHARS, decide, resume, resume_job};
pub use waiting::{MIN_VERSION_PREFIX, awaited, awaiting, current_version, job, jobs, require_waiting};
