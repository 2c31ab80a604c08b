//! The domain model of one job, from source to verified post.
//!
//! Each submodule holds one document family. Every type denies unknown fields; bounded
//! strings and lists carry their bounds in the JSON Schema, which is what specialist outputs
//! and imported files are validated against before deterministic code accepts them.

/// A whole number from 1 to 5 (a plan item's priority, a review score), checked on the way in
/// (`TryFrom<u8>` and serde refuse anything else as `out_of_range`, naming `$what`), so nothing
/// downstream checks it again. Defined before the modules that use it.
macro_rules! one_to_five {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, schemars::JsonSchema)]
        #[serde(transparent)]
        pub struct $name(#[schemars(range(min = 1, max = 5))] u8);

        impl $name {
            /// The number, from 1 to 5.
            pub fn get(self) -> u8 {
                self.0
            }
        }

        impl TryFrom<u8> for $name {
            type Error = $crate::Error;
            fn try_from(n: u8) -> Result<Self, $crate::Error> {
                if (1..=5).contains(&n) {
                    Ok(Self(n))
                } else {
                    Err($crate::Error::new($crate::Code::OutOfRange, concat!($what, " must be 1-5")))
                }
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                Self::try_from(<u8 as serde::Deserialize>::deserialize(d)?).map_err(|e| serde::de::Error::custom(e.message))
            }
        }
    };
}

mod analysis;
mod blob;
mod calendar;
mod config;
mod config_file;
mod hash;
mod job;
mod planning;
mod progress;
mod publication;
mod records;
mod research;
mod review;
mod schedule;
mod source;
pub mod speech;
mod strategy;
mod workspace;

pub use analysis::{Analysis, Angle, AngleKind, Moment};
pub use blob::{BlobRef, Sha256Hex};
pub use calendar::{CalendarImport, CalendarItem, CalendarPost};
pub use config::{
    Cadence, Channel, Day, EngagementSettings, LocalTime, ModelSettings, PostingWindow, SnapshotOffset, TimeZoneName,
    WorkspaceConfig,
};
pub use hash::content_hash;
pub use job::{FailedStep, Job, JobFailure, JobStatus};
pub use planning::{
    AssetReadiness, BlockedDependency, CalendarEntry, Capacity, Commitment, ContentFormat, Deferral, Plan, PlanItem,
    PlanningSnapshot, PostingWindowObservation, Priority, UtcWindow,
};
pub use progress::{JobEvent, JobEvents, SeenEvents};
pub use publication::{
    Approval, ApprovalSubject, ConnectorKind, Decision, Publication, PublicationClaim, PublicationReceipt,
    ReceiptOutcome, RecordRef, ThreadPost, Verification, VerificationOutcome,
};
pub use records::{ActivityOutcome, ActivityRecord, MemoryFact, Operation, PostMetrics, TokenUsage, TrendSignal};
pub use research::ResearchEvidence;
pub use review::{
    Assessment, Assessments, Dimension, PolicyOutcome, PolicyResult, PolicyRule, PolicyViolation, Review, ReviewIssue,
    Score, Severity, Verdict,
};
pub use schedule::{MAX_SCHEDULE_DECISIONS, Schedule, ScheduleAction, ScheduleDecision, ScheduleState};
pub use source::{
    FlagKind, Frame, LanguageTag, SOURCE_INLINE_MAX_BYTES, SOURCE_MAX_BYTES, Source, SourceBody, SourceContent,
    SourceInput, SourcePart, StoredSource, TranscriptSegment, UntrustedSpan, frame_flagged, quoted_span,
    segment_flagged, untrusted_spans,
};
pub use speech::{Speech, Utterance, locate, match_form};
pub use strategy::{Brief, Claim, Draft, MAX_THREAD_POSTS, Strategy};
pub use workspace::{Platform, Workspace, WorkspaceMode, WorkspaceVersion};

/// A point in time, always UTC.
pub type Timestamp = chrono::DateTime<chrono::Utc>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_and_scores_are_one_to_five_and_refusals_name_them() {
        assert_eq!(Priority::try_from(1).map(Priority::get).ok(), Some(1));
        assert_eq!(serde_json::from_str::<Score>("5").map(Score::get).ok(), Some(5));
        for n in [0, 6] {
            assert_eq!(Priority::try_from(n).map_err(|e| e.message).err().as_deref(), Some("priority must be 1-5"));
            assert_eq!(Score::try_from(n).map_err(|e| e.code).err(), Some(crate::Code::OutOfRange));
        }
        let refused = serde_json::from_str::<Score>("6").expect_err("out of range").to_string();
        assert!(refused.contains("score must be 1-5"), "{refused}");
    }
}
