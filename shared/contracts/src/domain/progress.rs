//! A job's progress as an operator follows it: the steps it completed, the decisions made on
//! it and where it is now, each with a sentence to show. The operator API streams them
//! (`GET /v1/jobs/{job}/events`) and `harmonia status JOB --watch` prints them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::domain::{ApprovalSubject, JobStatus, Timestamp};
use crate::event::{Pass, Round, Stage};
use crate::ids::{JobId, OperatorId};

/// One thing that happened to a job, or where it is now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum JobEvent {
    /// A step of the pipeline completed.
    Step {
        /// The stage.
        stage: Stage,
        /// Its writing pass.
        pass: Pass,
        /// Its operator round (0 for the original).
        round: Round,
        /// When it completed.
        #[serde(with = "crate::time::rfc3339")]
        #[schemars(with = "crate::domain::Timestamp")]
        at: Timestamp,
        /// What it did, as a sentence.
        text: String,
    },
    /// An operator decided on a strategy or a draft.
    Decision {
        /// Strategy or draft.
        subject: ApprovalSubject,
        /// `approved`, `rejected`, `changes_requested`, `edited` or `rounds_exhausted`.
        decision: String,
        /// Who decided.
        by: OperatorId,
        /// When.
        #[serde(with = "crate::time::rfc3339")]
        #[schemars(with = "crate::domain::Timestamp")]
        at: Timestamp,
        /// The decision, as a sentence.
        text: String,
    },
    /// Where the job is now: sent first, then whenever the job moves.
    Status {
        /// The job.
        job: JobId,
        /// Its status.
        status: JobStatus,
        /// The stored version of the job this describes; it only grows.
        version: u64,
        /// When the status was reached.
        #[serde(with = "crate::time::rfc3339")]
        #[schemars(with = "crate::domain::Timestamp")]
        at: Timestamp,
        /// What is happening, or what the job waits for, as a sentence.
        text: String,
        /// The decision the job waits for, when it is at a gate.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        awaiting: Option<ApprovalSubject>,
        /// Whether the job has stopped for good (following it ends here).
        terminal: bool,
    },
}

/// A job's progress so far, oldest first, ending with its [`JobEvent::Status`]: the polling
/// form of the event stream, for a client without Server-Sent Events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobEvents {
    /// The job.
    pub job: JobId,
    /// The events.
    pub events: Vec<JobEvent>,
}

/// What a follower of a job's events has had: each step and decision (once each, however
/// often they are sent again), and the last status's version. The operator API's stream, the
/// typed client's `follow` and `harmonia status --watch` each pass on only what is new.
#[derive(Clone, Debug, Default)]
pub struct SeenEvents {
    events: std::collections::HashSet<String>,
    version: Option<u64>,
    stopped: bool,
}

impl SeenEvents {
    /// Whether `event` is new: a step or decision not had before, or a status of a later
    /// version of the job.
    pub fn first_time(&mut self, event: &JobEvent) -> bool {
        match event {
            JobEvent::Status { version, terminal, .. } => {
                self.stopped = *terminal;
                let new = self.version.is_none_or(|v| *version > v);
                self.version = Some(self.version.map_or(*version, |v| v.max(*version)));
                new
            }
            other => self.events.insert(serde_json::to_string(other).unwrap_or_default()),
        }
    }

    /// The version of the job's last status had, if any.
    pub fn version(&self) -> Option<u64> {
        self.version
    }

    /// Whether the last status had says the job stopped for good.
    pub fn stopped(&self) -> bool {
        self.stopped
    }
}

impl JobStatus {
    /// What is happening to a job in this status, or what it waits for, as a sentence; `pass`
    /// and `round` are the job's.
    pub fn sentence(self, pass: Pass, round: Round) -> String {
        let round_note = |what: &str| match round.is_original() {
            true => format!("{what}."),
            false => format!("{what} (operator round {} of {}).", round.get(), Round::MAX.get()),
        };
        match self {
            JobStatus::Ingested => "Nimi is reading the source for evidence.".into(),
            JobStatus::Analyzed => "Ryan is writing the strategy.".into(),
            JobStatus::AwaitingStrategyApproval => round_note("The strategy is waiting for your decision"),
            JobStatus::StrategyChangesRequested => round_note("Ryan is writing the strategy again, as asked"),
            JobStatus::StrategyApproved => "Temi is planning the posts.".into(),
            JobStatus::Planned if pass == Pass::REVISION => "Noni is revising the draft, pass 2.".into(),
            JobStatus::Planned => "Noni is drafting the post.".into(),
            JobStatus::Drafted => format!("Dara is reviewing the draft, pass {}.", pass.get()),
            JobStatus::RevisionRequested => "Dara asked for a revision; Noni is revising the draft, pass 2.".into(),
            JobStatus::Reviewed => "Policy is checking the draft.".into(),
            JobStatus::AwaitingDraftApproval => round_note("The draft is waiting for your decision"),
            JobStatus::DraftChangesRequested => round_note("Noni is writing the draft again, as asked"),
            JobStatus::Scheduled => "The draft is approved and scheduled for its posting window.".into(),
            JobStatus::DraftApproved => "The draft is approved; it is being published.".into(),
            JobStatus::Publishing => "The post is being published.".into(),
            JobStatus::PublishUnknown => {
                "Whether the post went out is not yet known; it is being read back to find out.".into()
            }
            JobStatus::Published => "The post is published; it is being read back to verify it.".into(),
            JobStatus::Verified => "The post is published and verified.".into(),
            JobStatus::StrategyRejected => "The strategy was rejected; the job has ended.".into(),
            JobStatus::DraftRejected => "The draft was rejected; the job has ended.".into(),
            JobStatus::PolicyBlocked => "Policy blocked the draft; the job has ended.".into(),
            JobStatus::NeedsHuman => "The job needs a person: it stopped where no step can take it further.".into(),
            JobStatus::Cancelled => "The scheduled post was cancelled; it will not be published.".into(),
            JobStatus::Failed => "The job failed; nothing was published.".into(),
        }
    }
}

impl Stage {
    /// What this stage's step did when it completed, as a sentence.
    pub fn completed_sentence(self, pass: Pass, round: Round) -> String {
        let what = match self {
            Stage::Ingest => "The source was checked and stored",
            Stage::Analyze => "Nimi found the evidence moments and angles",
            Stage::Strategize => "Ryan wrote the strategy",
            Stage::Operator => "The operator's decision was carried out",
            Stage::Plan => "Temi planned the posts and chose one",
            Stage::Draft if pass == Pass::REVISION => "Noni wrote the revision",
            Stage::Draft => "Noni wrote the draft",
            Stage::Review => "Dara reviewed the draft",
            Stage::Policy => "Policy checked the draft",
            Stage::Publish => "The post was published",
            Stage::Verify => "The post was read back from its platform",
        };
        let review = match self {
            Stage::Review => format!(", pass {}", pass.get()),
            _ => String::new(),
        };
        match round.is_original() {
            true => format!("{what}{review}."),
            false => format!("{what}{review} (operator round {}).", round.get()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_and_stage_reads_as_a_sentence() {
        use strum::IntoEnumIterator;
        for status in JobStatus::iter() {
            for (pass, round) in [(Pass::FIRST, Round::ORIGINAL), (Pass::REVISION, Round::MAX)] {
                let text = status.sentence(pass, round);
                assert!(text.ends_with('.') && text.starts_with(char::is_uppercase), "{status:?}: {text}");
                assert!(!text.contains('_'), "{text}");
            }
        }
        for stage in Stage::ALL {
            let text = stage.completed_sentence(Pass::FIRST, Round::ORIGINAL);
            assert!(text.ends_with('.') && text.starts_with(char::is_uppercase), "{text}");
        }
        assert_eq!(
            JobStatus::Drafted.sentence(Pass::REVISION, Round::ORIGINAL),
            "Dara is reviewing the draft, pass 2."
        );
        assert_eq!(
            JobStatus::AwaitingDraftApproval.sentence(Pass::FIRST, Round::MAX),
            "The draft is waiting for your decision (operator round 3 of 3)."
        );
    }

    #[test]
    fn an_event_carries_its_kind() {
        let at = chrono::DateTime::parse_from_rfc3339("2026-12-07T10:00:00Z").expect("time").to_utc();
        let event = JobEvent::Step {
            stage: Stage::Draft,
            pass: Pass::FIRST,
            round: Round::ORIGINAL,
            at,
            text: Stage::Draft.completed_sentence(Pass::FIRST, Round::ORIGINAL),
        };
        let json = serde_json::to_value(&event).expect("json");
        assert_eq!(json["kind"], "step");
        assert_eq!(json["stage"], "draft");
        assert_eq!(serde_json::from_value::<JobEvent>(json).expect("back"), event);
    }
}
