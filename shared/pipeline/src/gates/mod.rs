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
//!
//! Imports run one way: `decisions` uses `waiting` and `schedule`; `rounds` and `schedule` use
//! `waiting`; `waiting` uses none of them. The steps never import the gates: what both read
//! (decision records, their ids) is in `records`.

pub mod decisions;
pub mod rounds;
pub mod schedule;
pub mod waiting;

pub use decisions::{DecisionRequest, MAX_REASON_CHARS, decide, resume, resume_job};
pub use waiting::{MIN_VERSION_PREFIX, awaited, awaiting, current_version, job, jobs, require_waiting};
