//! Scheduled publishing: an approved draft waits for its plan item's window, and the operator
//! can move it, publish it now or cancel it until its publication is claimed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Platform, Timestamp, UtcWindow};
use crate::event::{Pass, Round};
use crate::ids::{DraftId, JobId, OperatorId};

/// The most operator changes one scheduled post records.
pub const MAX_SCHEDULE_DECISIONS: usize = 50;

/// Where a scheduled post stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum ScheduleState {
    /// Waiting for `due_at`.
    Scheduled,
    /// Approved after its window closed: it waits for the operator to reschedule, publish now
    /// or cancel. Never published late on its own.
    WindowPassed,
    /// Handed to publishing (`draft.approved` released); the claim decides the rest.
    Dispatched,
    /// Cancelled by the operator: never published.
    Cancelled,
}

impl ScheduleState {
    /// The snake_case name (the same as its serde name).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// An operator's change to a scheduled post.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ScheduleAction {
    /// Moved to `at`, inside one of the workspace's posting windows.
    Reschedule {
        /// The new time.
        #[serde(with = "crate::time::rfc3339")]
        #[schemars(with = "crate::domain::Timestamp")]
        at: Timestamp,
    },
    /// Published immediately, before (or after) its time.
    PublishNow,
    /// Never to be published.
    Cancel,
}

impl ScheduleAction {
    /// The action's name (`reschedule`, `publish_now`, `cancel`).
    pub fn name(&self) -> &'static str {
        match self {
            ScheduleAction::Reschedule { .. } => "reschedule",
            ScheduleAction::PublishNow => "publish_now",
            ScheduleAction::Cancel => "cancel",
        }
    }
}

/// One attributed operator change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleDecision {
    /// What was done.
    pub action: ScheduleAction,
    /// Who did it (from the credential).
    pub operator: OperatorId,
    /// When.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub decided_at: Timestamp,
}

/// An approved draft's place in the schedule (one per job, `schedules/{job}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    /// The job.
    pub job: JobId,
    /// The approved draft version.
    pub draft: DraftId,
    /// Its content hash (the version the approval named).
    pub content_hash: String,
    /// The operator round of the approval.
    #[serde(default, skip_serializing_if = "Round::is_original")]
    pub round: Round,
    /// The writing pass of the approved draft.
    pub pass: Pass,
    /// The channel's platform.
    pub platform: Platform,
    /// The channel's handle.
    #[schemars(length(min = 1, max = 200))]
    pub handle: String,
    /// The plan item's posting window.
    pub window: UtcWindow,
    /// When it goes out: the window's start, the operator's time, or the moment of "publish now".
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub due_at: Timestamp,
    /// Where it stands.
    pub state: ScheduleState,
    /// When it was handed to publishing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::time::rfc3339_option")]
    #[schemars(with = "Option<crate::domain::Timestamp>")]
    pub dispatched_at: Option<Timestamp>,
    /// The operator's changes, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 50))]
    pub decisions: Vec<ScheduleDecision>,
}
