//! The domain model of one job, from source to verified post.
//!
//! Each submodule holds one document family. Every type denies unknown fields; bounded
//! strings and lists carry their bounds in the JSON Schema, which is what specialist outputs
//! and imported files are validated against before deterministic code accepts them.

mod analysis;
mod job;
mod planning;
mod publication;
mod records;
mod review;
mod source;
mod strategy;
mod workspace;

pub use analysis::{Analysis, Angle, AngleKind, Moment};
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
pub use workspace::{Platform, Workspace, WorkspaceMode};

/// A point in time, always UTC.
pub type Timestamp = chrono::DateTime<chrono::Utc>;

/// Lowercase hex SHA-256 of the canonical JSON of `value` (object keys sorted, no spaces).
pub fn content_hash<T: serde::Serialize>(value: &T) -> String {
    use sha2::Digest;
    let mut canonical = String::new();
    if let Ok(v) = serde_json::to_value(value) {
        write_canonical(&v, &mut canonical);
    }
    hex::encode(sha2::Sha256::digest(canonical.as_bytes()))
}

// Sorted explicitly: another crate may switch serde_json to insertion order.
fn write_canonical(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut keys: Vec<_> = map.keys().collect();
            keys.sort_unstable();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}
