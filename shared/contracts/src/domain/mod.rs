//! The domain model of one job, from source to verified post.
//!
//! Each submodule holds one document family. Every type denies unknown fields; bounded
//! strings and lists carry their bounds in the JSON Schema, which is what specialist outputs
//! and imported files are validated against before deterministic code accepts them.

mod analysis;
mod calendar;
mod config;
mod config_file;
mod hash;
mod job;
mod planning;
mod publication;
mod records;
mod review;
mod source;
mod strategy;
mod workspace;

pub use analysis::{Analysis, Angle, AngleKind, Moment};
pub use calendar::{CalendarImport, CalendarItem};
pub use config::{Cadence, Channel, Day, LocalTime, PostingWindow, TimeZoneName, WorkspaceConfig};
pub use hash::content_hash;
pub use job::{Job, JobFailure, JobStatus};
pub use planning::{
    AssetReadiness, BlockedDependency, CalendarEntry, Capacity, Commitment, ContentFormat, Plan, PlanItem,
    PlanningSnapshot, PostingWindowObservation, Priority, UtcWindow,
};
pub use publication::{
    Approval, ApprovalSubject, ConnectorKind, Decision, Publication, PublicationClaim, PublicationReceipt,
    ReceiptOutcome, Verification, VerificationOutcome,
};
pub use records::{ActivityOutcome, ActivityRecord, MemoryFact, Operation, PostMetrics, TokenUsage, TrendSignal};
pub use review::{
    Assessment, Assessments, Dimension, PolicyOutcome, PolicyResult, PolicyRule, PolicyViolation, Review, ReviewIssue,
    Score, Severity, Verdict,
};
pub use source::{Frame, LanguageTag, SOURCE_MAX_BYTES, Source, SourceInput, TranscriptSegment};
pub use strategy::{Brief, Claim, Draft, Strategy};
pub use workspace::{Platform, Workspace, WorkspaceMode, WorkspaceVersion};

/// A point in time, always UTC.
pub type Timestamp = chrono::DateTime<chrono::Utc>;
