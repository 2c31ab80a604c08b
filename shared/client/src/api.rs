//! The operator API's wire types: every request body a client sends and every answer the
//! server gives, as the server serializes them and [`crate::Client`] reads them. The server's
//! handlers return these types, so a change to either side is a change to both, checked by
//! the compiler rather than by a test that reads JSON keys.

use harmonia_auth::Role;
use harmonia_auth::operators::{Issued, OperatorSummary};
use harmonia_contracts::domain::{
    ActivityRecord, Approval, ApprovalSubject, CalendarImport, Draft, Job, Schedule, Timestamp, WorkspaceVersion,
};
use harmonia_contracts::ids::{OperatorId, WorkspaceId};
use harmonia_pipeline::imports::ImportKind;
use harmonia_pipeline::retry::Retry;
use serde::{Deserialize, Serialize};

pub use harmonia_auth::Identity as Me;
/// A job's progress: `GET /v1/jobs/{job}/events`, streamed or polled.
pub use harmonia_contracts::domain::{JobEvent, JobEvents};
pub use harmonia_pipeline::detail::JobDetail;

/// A source's wire format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceFormat {
    /// Harmonia's JSON source document.
    Json,
    /// A WebVTT transcript.
    Webvtt,
    /// An SRT transcript.
    Srt,
}

/// The body of `POST /v1/sources`: a source to make a job of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewSource {
    /// How `content` is written.
    pub format: SourceFormat,
    /// The source text.
    pub content: String,
    /// A title, for transcripts that carry none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The transcript's language (BCP 47), `en` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

/// The answer to `POST /v1/sources` (201): the new job (the same one again for a retry with
/// the same `Idempotency-Key`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Submitted {
    /// The job.
    pub job: Job,
}

/// `GET /v1/jobs`: the workspace's jobs, newest first, and every status a job can have (in
/// the lifecycle's order), so a client filters by the server's names rather than a copy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobList {
    /// The jobs.
    pub jobs: Vec<Job>,
    /// Every status, by name.
    pub statuses: Vec<String>,
}

/// `GET /v1/jobs/{job}`: one job, and the version awaiting a decision when it waits for one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobReply {
    /// The job.
    pub job: Job,
    /// The content hash a decision must name now, if the job waits for one.
    pub awaiting_version: Option<String>,
}

/// What a decision does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Approve the version.
    Approve,
    /// Reject it, with a reason.
    Reject,
    /// Ask its role for another version, with feedback.
    RequestChanges,
}

/// The body of `POST /v1/jobs/{job}/decisions`. Each kind takes only its own field: a reason
/// for a rejection, feedback for a request for changes, neither for an approval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    /// What is decided on.
    pub subject: ApprovalSubject,
    /// The decision.
    pub decision: DecisionKind,
    /// The exact version decided on (its content hash, or 8 or more of its first characters).
    pub version: String,
    /// Why it is rejected (1 to 500 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What to change (1 to 2,000 characters); context for the role, never an instruction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
}

/// The answer to a decision: its attributed record, and the job as it stands after it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionReply {
    /// The decision as recorded, with who took it.
    pub approval: Approval,
    /// The job now.
    pub job: Job,
    /// Why the work the decision released did not all start, when it did not: the decision
    /// stands; sending the same decision again carries the work on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished: Option<harmonia_contracts::ErrorBody>,
}

/// The body of `POST /v1/jobs/{job}/edits`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditBody {
    /// The exact draft version edited.
    pub version: String,
    /// The new text, exactly as it is to be posted: the whole post, or with `post` the text of
    /// that one post of a thread.
    pub body: String,
    /// For a thread: which of its posts `body` replaces (1 for the first). A thread is edited
    /// one post at a time, a single post whole (`invalid_request` otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post: Option<u32>,
}

/// The answer to an edit (201): the decision record, the operator's draft, and the job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditReply {
    /// The edit's record.
    pub approval: Approval,
    /// The operator's draft, the version an approval must now name.
    pub draft: Draft,
    /// The job now.
    pub job: Job,
}

/// The answer to `POST /v1/jobs/{job}/retry`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryReply {
    /// The job, no longer failed.
    pub job: Job,
    /// The retry's record: the failure it cleared, who asked and when.
    pub retry: Retry,
}

/// `GET /v1/activity?job=ID&limit=N&page=P`: one page of the job's activity records.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActivityPage {
    /// The records, in the order the invocations started.
    pub activity: Vec<ActivityRecord>,
    /// The next page's number, while more remain.
    pub next_page: Option<u32>,
}

/// `GET /v1/workspace/activity?agent=&stage=&outcome=&limit=&page=`: the workspace's latest
/// activity records (every job's and Nova's), newest first, a page at a time, with each day's
/// figures over every kept record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceActivity {
    /// This page's records, newest first.
    pub activity: Vec<ActivityRecord>,
    /// The next page's number, while more remain.
    pub next_page: Option<u32>,
    /// How many records the filter kept, over every page.
    pub total: usize,
    /// Each day with a kept record, newest first, in the workspace's time zone.
    pub days: Vec<harmonia_pipeline::activity::Day>,
    /// Whether only the latest 1,000 records were read (older ones are not counted).
    pub capped: bool,
    /// The workspace's IANA time zone, which the days are in.
    pub time_zone: String,
    /// Every agent, for the filter.
    pub agents: Vec<harmonia_contracts::Role>,
    /// Every stage, for the filter.
    pub stages: Vec<harmonia_contracts::event::Stage>,
}

/// `GET /v1/jobs/{job}/metrics`: the engagement snapshots of the job's post, read from its
/// platform after it was verified, earliest first, with the workspace's offsets.
pub use harmonia_pipeline::engagement::JobMetrics;

/// `GET /v1/workspace/memory`: the workspace's remembered facts, newest first, with their
/// evidence and whether each is offered to specialists now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryList {
    /// The facts.
    pub facts: Vec<harmonia_pipeline::engagement::memory::FactView>,
}

/// `GET /v1/schedule`: the approved posts not yet out, soonest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleList {
    /// The entries.
    pub schedule: Vec<Schedule>,
}

/// The body of `POST /v1/jobs/{job}/reschedule`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RescheduleBody {
    /// The new time (RFC 3339).
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub at: Timestamp,
}

/// The answer to a reschedule, a publish-now or a cancel: the post's schedule and the job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleReply {
    /// The post's schedule after the change.
    pub schedule: Schedule,
    /// The job now.
    pub job: Job,
    /// What the change set going that did not start, when something did not: the change
    /// stands, and the dispatcher carries the post on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfinished: Option<harmonia_contracts::ErrorBody>,
}

/// `GET /v1/workspace`: the current configuration version, and the same configuration as a
/// TOML file to edit and send back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceReply {
    /// The current version.
    pub workspace: WorkspaceVersion,
    /// The configuration as TOML.
    pub file: String,
}

/// The answer to `PUT /v1/workspace`: the version now current, and whether the file changed
/// anything (201 for a workspace's first version).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceStored {
    /// The current version.
    pub workspace: WorkspaceVersion,
    /// `false` when the file equals the current version, and nothing was stored.
    pub changed: bool,
}

/// The body of `POST /v1/operators`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewOperator {
    /// The operator's name.
    pub name: OperatorId,
    /// `operator` unless given.
    #[serde(default = "operator_role")]
    pub role: Role,
}

fn operator_role() -> Role {
    Role::Operator
}

/// The answer to `POST /v1/operators` (201): the credential, shown this once.
pub type NewCredential = Issued;

/// `GET /v1/operators`: every operator of the workspace, never a digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorList {
    /// The operators.
    pub operators: Vec<OperatorSummary>,
}

/// The answer to `DELETE /v1/operators/{name}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Revoked {
    /// The operator, now revoked.
    pub operator: OperatorSummary,
}

/// The answer to an import: every row of the file was stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Imported {
    /// What was imported.
    pub import: ImportKind,
    /// The workspace it went into.
    pub workspace: WorkspaceId,
    /// How many rows were stored.
    pub stored: usize,
    /// One sentence for an operator.
    pub message: String,
}

impl From<harmonia_pipeline::imports::Summary> for Imported {
    fn from(summary: harmonia_pipeline::imports::Summary) -> Self {
        Self { message: summary.sentence(), import: summary.kind, workspace: summary.workspace, stored: summary.stored }
    }
}

/// `GET /v1/calendar?from=&to=`: the workspace's approved posts going out in the range, in UTC
/// and in its time zone, with its posting windows and its imported calendar entries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalendarList {
    /// The workspace's IANA time zone, which `at_local` and the windows are in.
    pub time_zone: String,
    /// The range's start (UTC).
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub from: harmonia_contracts::domain::Timestamp,
    /// The range's end, not included (UTC).
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub to: harmonia_contracts::domain::Timestamp,
    /// The approved posts going out in the range, soonest first.
    pub posts: Vec<harmonia_contracts::domain::CalendarPost>,
    /// When posts may go out, in `time_zone`.
    pub windows: Vec<harmonia_contracts::domain::PostingWindow>,
    /// The imported entries (posts scheduled elsewhere, blackout dates), whatever their time.
    pub entries: Vec<CalendarImport>,
}

/// What an import file holds, as its route names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportRoute {
    /// `POST /v1/imports/metrics` (`text/csv`).
    Metrics,
    /// `POST /v1/imports/signals` (`text/csv` or `application/json`).
    Signals,
    /// `POST /v1/imports/calendar` (`text/csv`).
    Calendar,
}

impl ImportRoute {
    /// The route's path.
    pub fn path(self) -> &'static str {
        match self {
            ImportRoute::Metrics => "/v1/imports/metrics",
            ImportRoute::Signals => "/v1/imports/signals",
            ImportRoute::Calendar => "/v1/imports/calendar",
        }
    }
}
