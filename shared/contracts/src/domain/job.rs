use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Timestamp;
use crate::error::{Category, Code, Error};
use crate::event::{Pass, Round, Stage};
use crate::ids::{JobId, SourceId, WorkspaceId};
use crate::roles::Role;

/// Where a job is in its life. Transitions are checked by [`JobStatus::transition`].
///
/// ```text
/// ingested -> analyzed -> awaiting_strategy_approval -> strategy_approved | strategy_rejected
/// awaiting_strategy_approval -> strategy_changes_requested -> awaiting_strategy_approval
///   (an operator round: Ryan's next version) | needs_human (rounds exhausted)
/// strategy_approved -> planned -> drafted -> revision_requested -> drafted (pass 2)
/// drafted -> reviewed | needs_human (pass 2 still "revise")
/// reviewed -> awaiting_draft_approval (policy passed) | policy_blocked
///   | needs_human (the draft carries a line that reads as an order to the system)
/// awaiting_draft_approval -> draft_approved | draft_rejected
/// awaiting_draft_approval -> draft_changes_requested -> drafted (an operator round: a new
///   writing cycle) | needs_human (rounds exhausted)
/// draft_approved -> publishing -> published | publish_unknown
/// publish_unknown -> verified (read back found it) | published | draft_approved
/// published -> verified
/// any non-terminal -> failed
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum JobStatus {
    /// Source stored, analysis pending.
    Ingested,
    /// Analysis stored, strategy pending.
    Analyzed,
    /// Strategy stored, waiting for a human.
    AwaitingStrategyApproval,
    /// An operator asked for changes to the strategy; Ryan's next version is pending.
    StrategyChangesRequested,
    /// Strategy approved, plan pending.
    StrategyApproved,
    /// Plan stored and item selected, draft pending.
    Planned,
    /// A draft for the current pass is stored, review pending.
    Drafted,
    /// Dara asked for the single revision.
    RevisionRequested,
    /// Dara passed the draft, policy pending.
    Reviewed,
    /// Policy passed, waiting for a human.
    AwaitingDraftApproval,
    /// An operator asked for changes to the draft; a new writing cycle is pending.
    DraftChangesRequested,
    /// A human approved the exact draft version; it waits for its time (the plan item's
    /// window, or the operator's) in the schedule.
    Scheduled,
    /// The approved draft's time came (or the operator said publish now): publishing pending.
    DraftApproved,
    /// A publication claim exists; the connector is being called.
    Publishing,
    /// The connector's outcome could not be confirmed; verification decides.
    PublishUnknown,
    /// The receipt is applied, verification pending.
    Published,
    /// Read back and verified. Terminal.
    Verified,
    /// A human rejected the strategy. Terminal.
    StrategyRejected,
    /// A human rejected the draft. Terminal.
    DraftRejected,
    /// Deterministic policy refused the draft. Terminal.
    PolicyBlocked,
    /// The revision still did not pass, a gate used all its operator rounds, the draft
    /// carries instruction-like source text, or the draft was approved after its planned
    /// window closed; parked for a human. Terminal: nothing happens on its own, and only the
    /// last case has a way out (the operator reschedules, publishes now or cancels).
    NeedsHuman,
    /// An operator cancelled the scheduled post before its publication was claimed; it is
    /// never published. Terminal.
    Cancelled,
    /// A typed failure. Terminal.
    Failed,
}

impl JobStatus {
    /// The snake_case name (the same as its serde name).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Whether nothing more happens to the job automatically.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobStatus::Verified
                | JobStatus::StrategyRejected
                | JobStatus::DraftRejected
                | JobStatus::PolicyBlocked
                | JobStatus::NeedsHuman
                | JobStatus::Cancelled
                | JobStatus::Failed
        )
    }

    /// Whether the status machine allows `self -> next`.
    pub fn can_become(self, next: JobStatus) -> bool {
        use JobStatus::*;
        if next == Failed {
            return !self.is_terminal();
        }
        matches!(
            (self, next),
            (Ingested, Analyzed)
                | (Analyzed, AwaitingStrategyApproval)
                | (
                    AwaitingStrategyApproval,
                    StrategyApproved | StrategyRejected | StrategyChangesRequested | NeedsHuman
                )
                | (StrategyChangesRequested, AwaitingStrategyApproval)
                | (StrategyApproved, Planned)
                | (Planned, Drafted)
                | (Drafted, RevisionRequested | Reviewed | NeedsHuman)
                | (RevisionRequested, Drafted)
                | (Reviewed, AwaitingDraftApproval | PolicyBlocked | NeedsHuman)
                | (
                    AwaitingDraftApproval,
                    Scheduled | DraftApproved | DraftRejected | DraftChangesRequested | NeedsHuman
                )
                | (DraftChangesRequested, Drafted)
                // The schedule: dispatched when due or published now, moved, or cancelled; a
                // post approved after its window waits as `needs_human` until rescheduled.
                | (Scheduled, DraftApproved | Cancelled)
                | (NeedsHuman, Scheduled | DraftApproved | Cancelled)
                | (DraftApproved, Publishing | Cancelled)
                | (Publishing, Published | PublishUnknown)
                | (PublishUnknown, Published | Verified | DraftApproved)
                | (Published, Verified)
        )
    }

    /// `next` if the machine allows it, else `invalid_transition`.
    pub fn transition(self, next: JobStatus) -> Result<JobStatus, Error> {
        if self.can_become(next) { Ok(next) } else { Err(Error::from_code(Code::InvalidTransition)) }
    }
}

/// A job's typed failure: never raw model output or a provider body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobFailure {
    /// The stage that failed.
    pub stage: Stage,
    /// The specialist whose contract failed, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// Stable code.
    pub code: Code,
    /// The code's category.
    pub category: Category,
    /// Safe operator text.
    pub safe_message: String,
    /// Whether retrying could help.
    pub retryable: bool,
    /// JSON pointer into the failed schema, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_path: Option<String>,
    /// When it failed.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub at: Timestamp,
    /// Where the failed step stood, so an operator can run it again (`harmonia retry`): set on
    /// a job's failure, absent on a stall and on failures recorded before retries existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<FailedStep>,
}

/// Where a step that failed its job stood: the job's status when the step began, and the
/// step's operator round and pass (which identify its stage marker).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FailedStep {
    /// The job's status when the step failed: where a retry puts it back.
    pub status: JobStatus,
    /// The step's operator round (absent for the original, round 0).
    #[serde(default, skip_serializing_if = "Round::is_original")]
    pub round: Round,
    /// The step's pass.
    pub pass: Pass,
}

impl JobFailure {
    /// `code` met at `stage` (by `role`) at `at`, with the code's category, safe text and
    /// default `retryable`, and no schema path.
    pub fn of(stage: Stage, role: Option<Role>, code: Code, at: Timestamp) -> Self {
        Self {
            stage,
            role,
            code,
            category: code.category(),
            safe_message: code.safe_message().to_owned(),
            retryable: code.default_retryable(),
            schema_path: None,
            at,
            step: None,
        }
    }
}

/// One source's trip through the pipeline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// Id.
    pub id: JobId,
    /// Tenant.
    pub workspace: WorkspaceId,
    /// The source it was created from.
    pub source: SourceId,
    /// The workspace configuration version the job uses from start to end.
    #[schemars(range(min = 1))]
    pub workspace_version: u32,
    /// The source's title, for listings.
    #[schemars(length(min = 1, max = 300))]
    pub title: String,
    /// Current status.
    pub status: JobStatus,
    /// Current writing pass.
    pub pass: Pass,
    /// The operator round of the gate ahead (absent for the original, round 0).
    #[serde(default, skip_serializing_if = "Round::is_original")]
    pub round: Round,
    /// Created.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub created_at: Timestamp,
    /// Last status change.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub updated_at: Timestamp,
    /// Set when `status` is `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<JobFailure>,
    /// The last failure of a step that is waiting for a dependency to come back (a model that
    /// is down, throttling or refusing its credentials): the job keeps its status, the step
    /// is retried, and the next move of the job clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled: Option<JobFailure>,
}

impl Job {
    /// A new job `id` of `workspace` over the source `source` (titled `title`), just ingested
    /// and waiting for analysis, using configuration `workspace_version` throughout.
    pub fn ingested(
        id: JobId,
        workspace: WorkspaceId,
        workspace_version: u32,
        source: SourceId,
        title: String,
        now: Timestamp,
    ) -> Self {
        Self {
            id,
            workspace,
            workspace_version,
            source,
            title,
            status: JobStatus::Ingested,
            pass: Pass::FIRST,
            round: Round::ORIGINAL,
            created_at: now,
            updated_at: now,
            failure: None,
            stalled: None,
        }
    }

    /// Move to `next` (checked), stamping `updated_at`; whatever stalled the job is over.
    pub fn advance(&mut self, next: JobStatus, now: Timestamp) -> Result<(), Error> {
        self.status = self.status.transition(next)?;
        self.updated_at = now;
        self.stalled = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use strum::IntoEnumIterator;

    use super::JobStatus::*;
    use super::*;

    #[test]
    fn happy_path_with_one_revision_is_allowed() {
        let path = [
            Ingested,
            Analyzed,
            AwaitingStrategyApproval,
            StrategyApproved,
            Planned,
            Drafted,
            RevisionRequested,
            Drafted,
            Reviewed,
            AwaitingDraftApproval,
            Scheduled,
            DraftApproved,
            Publishing,
            PublishUnknown,
            Published,
            Verified,
        ];
        for pair in path.windows(2) {
            assert!(pair[0].can_become(pair[1]), "{:?} -> {:?}", pair[0], pair[1]);
        }
    }

    #[test]
    fn terminal_states_go_nowhere_and_skips_are_refused() {
        for from in JobStatus::iter().filter(|s| s.is_terminal()) {
            for to in JobStatus::iter() {
                // The one way out, by an operator only: a post approved after its window.
                let back_into_the_schedule = from == NeedsHuman && matches!(to, Scheduled | DraftApproved | Cancelled);
                assert_eq!(from.can_become(to), back_into_the_schedule, "{from:?} -> {to:?}");
            }
        }
        assert!(!Scheduled.can_become(Publishing), "a scheduled post is claimed only once dispatched");
        assert!(!Publishing.can_become(Cancelled), "a claimed post cannot be cancelled");
        assert_eq!(Ingested.transition(Published).err().map(|e| e.code), Some(Code::InvalidTransition));
        assert!(!AwaitingDraftApproval.can_become(Publishing), "publishing needs an approval first");
        assert!(!AwaitingStrategyApproval.can_become(Planned), "planning needs an approved strategy");
    }
}
