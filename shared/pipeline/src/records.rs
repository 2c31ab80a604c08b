//! Collections and the records the pipeline stores (all workspace-scoped).

use base64::Engine as _;
use chrono::{DateTime, Utc};
use harmonia_bus::{Name, OutboundMessage};
use harmonia_contracts::Error;
use harmonia_contracts::domain::{
    Analysis, Approval, ApprovalSubject, Plan, ResearchEvidence, Source, StoredSource, Strategy,
};
use harmonia_contracts::event::{Pass, Round, Stage};
use harmonia_contracts::ids::{DocId, EvidenceId, JobId, PlanItemId, SourceId, WorkspaceId};
use harmonia_store::{Collection, MAX_QUERY_LIMIT, Query, Store, decode_each, scan};
use serde::{Deserialize, Serialize};

/// Workspaces (the workspace document lives in its own scope under its own id; see
/// [`Collection::WORKSPACES`] for where backends keep it).
pub const WORKSPACES: Collection = Collection::WORKSPACES;
/// Immutable workspace configuration versions, by zero-padded version number
/// ([`crate::workspace::version_id`]).
pub const WORKSPACE_VERSIONS: Collection = Collection::new("workspace_versions");
/// Validated sources ([`StoredSource`]: a long source's transcript and frames are a blob,
/// read with [`source`]).
pub const SOURCES: Collection = Collection::new("sources");
/// Jobs.
pub const JOBS: Collection = Collection::new("jobs");
/// Nimi analyses, by job.
pub const ANALYSES: Collection = Collection::new("analyses");
/// Ryan strategies, by job: the current version (what an approval names and what planning and
/// writing read).
pub const STRATEGIES: Collection = Collection::new("strategies");
/// Every strategy version of a job, by [`strategy_version_id`]: the original and one per
/// operator round, kept so the operator sees what each round changed.
pub const STRATEGY_VERSIONS: Collection = Collection::new("strategy_versions");
/// Temi plans with the selected item, by job.
pub const PLANS: Collection = Collection::new("plans");
/// Noni drafts, by draft id.
pub const DRAFTS: Collection = Collection::new("drafts");
/// Dara reviews, by draft id.
pub const REVIEWS: Collection = Collection::new("reviews");
/// Policy results, by draft id.
pub const POLICY_RESULTS: Collection = Collection::new("policy_results");
/// Human decisions.
pub const APPROVALS: Collection = Collection::new("approvals");
/// Approved drafts' places in the schedule, by job ([`crate::gates::schedule`]).
pub const SCHEDULES: Collection = Collection::new("schedules");
/// Stage-completed markers, by `<job>.<stage>.<pass>` (`.r<round>` appended in an operator
/// round).
pub const MARKERS: Collection = Collection::new("stage_markers");
/// In-flight claims of (job, stage, pass), so a duplicate delivery waits instead of running
/// the same step (and its model call) concurrently.
pub const RUNNING: Collection = Collection::new("stage_running");
/// Uploads to the sources bucket that could not become a job
/// ([`IngestFailure`](crate::steps::IngestFailure)), one per object generation.
pub const INGEST_FAILURES: Collection = Collection::new("ingest_failures");
/// Dead-lettered messages.
pub const DEAD_LETTERS: Collection = Collection::new("dead_letters");
pub use harmonia_agents::eligibility::POST_METRICS;
/// Trend signals a workspace imported.
pub const TREND_SIGNALS: Collection = Collection::new("trend_signals");
/// The planning snapshot each job planned from, by job: written once, so a redelivered plan
/// event plans from the same frozen snapshot.
pub const JOB_SNAPSHOTS: Collection = Collection::new("job_snapshots");
/// The workspace's imported calendar: scheduled posts and blackout dates.
pub const CALENDAR: Collection = Collection::new("calendar_entries");
/// Accepted grounded-search results, one per job and `web-*` evidence id
/// ([`ResearchEvidence`]): written with the output of the invocation whose search found them,
/// read by policy and the job view.
pub const RESEARCH: Collection = Collection::new("research_evidence");
/// Spans of a job's source that an operator's edit quoted and no moment of the job holds, by
/// [`source_quote_id`] ([`SourceQuote`]): the evidence the edit's claims cite for them.
pub const SOURCE_QUOTES: Collection = Collection::new("source_quotes");
/// Operators' retries of failed steps ([`crate::retry::Retry`]), by job.
pub const RETRIES: Collection = Collection::new("retries");
pub use harmonia_agents::research::{MEMORY, PUBLICATIONS};
pub use harmonia_agents::runtime::ACTIVITY;
pub use harmonia_agents::tools::PLANNING_SNAPSHOTS;

/// The document id of any id-like value. Ids share the document-id alphabet, so this is
/// usually the value itself; a composed id too long for a document id gets a stable, shorter
/// one ([`DocId::stable`]), never a random one that would lose idempotency.
pub fn doc_id(id: impl std::fmt::Display) -> DocId {
    DocId::stable(&id.to_string())
}

/// The document id of `job`'s source quote `evidence`.
pub fn source_quote_id(job: &JobId, evidence: &EvidenceId) -> DocId {
    doc_id(format!("{job}.{evidence}"))
}

/// A span of a job's source an operator's edit quoted, kept as a moment of its own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceQuote {
    /// Job.
    pub job: JobId,
    /// The span as a moment (its id starts with `q-`): the source's own characters and the
    /// range of the cues it touches.
    pub moment: harmonia_contracts::domain::Moment,
    /// Where it was said.
    pub said: MomentSaid,
    /// The operator whose edit quoted it.
    pub quoted_by: harmonia_contracts::ids::OperatorId,
    /// When.
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub quoted_at: DateTime<Utc>,
}

/// The id of the evidence an edit's quote of a source span is: `q-`, where its first cue
/// starts (ms), and a digest of its text, so the same span is the same evidence.
pub fn source_quote_evidence(start_ms: u64, quote: &str) -> EvidenceId {
    use sha2::Digest as _;
    let digest = hex::encode(sha2::Sha256::digest(quote.as_bytes()));
    EvidenceId::stable(&format!("q-{start_ms}-{}", &digest[..12]))
}

/// Whether `evidence` names an edit's quote of the source.
pub fn is_source_quote(evidence: &EvidenceId) -> bool {
    evidence.as_str().starts_with("q-")
}

/// The document id of `job`'s research result `evidence`.
pub fn research_id(job: &JobId, evidence: &EvidenceId) -> DocId {
    doc_id(format!("{job}.{evidence}"))
}

/// Every research result of `job`, read page by page. A stored result that does not decode
/// is skipped and counted ([`decode_each`]); whatever cites it then does not resolve.
pub async fn research_of(
    store: &dyn Store,
    workspace: &WorkspaceId,
    job: &JobId,
) -> Result<Vec<ResearchEvidence>, harmonia_store::Error> {
    let query = Query::all(MAX_QUERY_LIMIT).filter("job", job.to_string())?;
    Ok(decode_each(RESEARCH, &scan(store, workspace, RESEARCH, query).await?))
}

/// The whole source `id` of `workspace` (`None` when there is none): the document, and for a
/// long source the blob holding its transcript and frames, checked against its reference.
pub async fn source(
    store: &dyn Store,
    blobs: &dyn harmonia_blob::Blobs,
    workspace: &WorkspaceId,
    id: &SourceId,
) -> Result<Option<Source>, harmonia_contracts::Error> {
    let Some(doc) = store.get(workspace, SOURCES, &doc_id(id)).await? else { return Ok(None) };
    let stored: StoredSource = doc.decode()?;
    let blob = match stored.blob() {
        Some(blob) => Some(harmonia_blob::get(blobs, workspace, blob).await?),
        None => None,
    };
    stored.into_source(blob).map(Some)
}

/// Store what `source` needs beyond its document — for a long source, its transcript and
/// frames as a blob — and return the document to write. The blob is durable before this
/// returns, so a document that names it never exists without it.
pub async fn store_source_blob(
    blobs: &dyn harmonia_blob::Blobs,
    source: Source,
) -> Result<StoredSource, harmonia_contracts::Error> {
    let (stored, blob) = source.into_stored()?;
    if let Some(bytes) = blob {
        harmonia_blob::put(blobs, &stored.workspace, bytes).await?;
    }
    Ok(stored)
}

/// Which frozen planning snapshot a job planned from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSnapshot {
    /// Job.
    pub job: JobId,
    /// The snapshot (its id is its content hash).
    pub snapshot: harmonia_contracts::ids::SnapshotId,
}

/// Nimi's accepted analysis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnalysisRecord {
    /// Job.
    pub job: JobId,
    /// The analysis.
    pub analysis: Analysis,
    /// Where each moment was said (an analysis stored before this was kept has none, and its
    /// moments are read as their quotes alone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub said: Vec<MomentSaid>,
    /// What the source says in the spans ingest flagged, which no post may repeat.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flagged: Vec<FlaggedText>,
}

impl AnalysisRecord {
    /// `analysis` of `source`, each moment with where it was said, and the source's flagged
    /// texts.
    pub fn new(job: JobId, analysis: Analysis, source: &Source) -> Self {
        let speech = source.speech();
        let said = analysis
            .moments
            .iter()
            .filter_map(|m| MomentSaid::of(&speech, source, &m.evidence_id, &m.quote, m.start_ms, m.end_ms))
            .collect();
        let flagged = crate::flags::flags(source)
            .into_iter()
            .map(|f| FlaggedText { kind: f.kind, text: f.text, cues: f.cues })
            .collect();
        Self { job, analysis, said, flagged }
    }
}

pub use harmonia_policy::{FlaggedText, MomentSaid};

/// Ryan's strategy and the hash an approval must name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StrategyRecord {
    /// Job.
    pub job: JobId,
    /// The strategy.
    pub strategy: Strategy,
    /// Its content hash.
    pub content_hash: String,
    /// The operator round it was written in (absent for the original, round 0).
    #[serde(default, skip_serializing_if = "Round::is_original")]
    pub round: Round,
}

/// The id of a job's strategy version of `round`: `<job>.r<round>`.
pub fn strategy_version_id(job: &JobId, round: Round) -> DocId {
    doc_id(format!("{job}.r{}", round.get()))
}

/// Temi's plan and the item deterministic code selected.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanRecord {
    /// Job.
    pub job: JobId,
    /// The plan.
    pub plan: Plan,
    /// The selected item.
    pub selected: PlanItemId,
}

/// A stage-completed marker: written with the stage's output; holds the exact events to
/// publish next, so a redelivery re-publishes them unchanged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Marker {
    /// Job.
    pub job: JobId,
    /// Stage.
    pub stage: Stage,
    /// Pass.
    pub pass: Pass,
    /// Operator round (absent for the original, round 0).
    #[serde(default, skip_serializing_if = "Round::is_original")]
    pub round: Round,
    /// Next events (topic, base64 data, attributes).
    pub next: Vec<PendingMessage>,
    /// When.
    pub completed_at: DateTime<Utc>,
}

/// A message recorded for (re-)publication.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PendingMessage {
    /// Topic.
    pub topic: String,
    /// Base64 data.
    pub data: String,
    /// Attributes.
    pub attributes: std::collections::BTreeMap<String, String>,
}

/// The marker id of (job, stage, round, pass).
pub fn marker_id(job: &JobId, stage: Stage, round: Round, pass: Pass) -> DocId {
    doc_id(format!("{job}.{stage}.{}{}", pass.get(), round_suffix(round)))
}

/// The id of (job, stage, round, pass)'s in-flight claim.
pub fn running_id(job: &JobId, stage: Stage, round: Round, pass: Pass) -> DocId {
    doc_id(format!("{job}.{stage}.{}{}.running", pass.get(), round_suffix(round)))
}

/// `.r<round>` for an operator round; nothing for the original, whose ids keep their shape.
fn round_suffix(round: Round) -> String {
    if round.is_original() { String::new() } else { format!(".r{}", round.get()) }
}

impl From<&OutboundMessage> for PendingMessage {
    fn from(m: &OutboundMessage) -> Self {
        PendingMessage {
            topic: m.topic.to_string(),
            data: base64::engine::general_purpose::STANDARD.encode(&m.data),
            attributes: m.attributes.clone(),
        }
    }
}

impl PendingMessage {
    /// The message to publish again, or `None` when the record is corrupt (a topic that is
    /// not a name, data that is not base64).
    pub fn outbound(&self) -> Option<OutboundMessage> {
        Some(OutboundMessage {
            topic: self.topic.parse::<Name>().ok()?,
            data: base64::engine::general_purpose::STANDARD.decode(&self.data).ok()?,
            attributes: self.attributes.clone(),
        })
    }
}

/// A recorded dead letter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeadLetter {
    /// Message id.
    pub message_id: String,
    /// The subscription that gave up on it.
    pub source_subscription: String,
    /// The dead-letter subscription that delivered it here.
    pub subscription: String,
    /// Attributes.
    pub attributes: std::collections::BTreeMap<String, String>,
    /// Base64 data (stage events carry ids only).
    pub data: String,
    /// SHA-256 of the data.
    pub data_sha256: String,
    /// When it was published.
    pub published_at: DateTime<Utc>,
    /// When it was recorded.
    pub recorded_at: DateTime<Utc>,
}

/// Who is running a step, until when.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Running {
    /// A random owner token.
    pub owner: String,
    /// When the claim lapses (a crashed owner's claim is taken over after this).
    pub until: DateTime<Utc>,
    /// The process holding it, where processes can tell a live one from a dead one (the
    /// embedded default: its local queue's holder): a claim of a dead holder is taken over
    /// at once rather than when it lapses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
}

/// A stored decision and the event it released (re-published on resume).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRecord {
    /// The decision.
    pub approval: Approval,
    /// The event to publish (none for a rejection).
    pub next: Vec<PendingMessage>,
}

/// The id of a job's decision on `subject`.
pub fn approval_id(job: &JobId, subject: ApprovalSubject) -> DocId {
    doc_id(format!("{job}.{}", subject.as_str()))
}

/// The id of a job's round decision on `subject` that opened `round`: `<job>.<subject>.r<round>`.
pub fn round_decision_id(job: &JobId, subject: ApprovalSubject, round: Round) -> DocId {
    doc_id(format!("{job}.{}.r{}", subject.as_str(), round.get()))
}

/// The id of the record of a request for a round beyond the last.
pub(crate) fn exhausted_id(job: &JobId, subject: ApprovalSubject) -> DocId {
    doc_id(format!("{job}.{}.exhausted", subject.as_str()))
}

/// The record of the round decision that opened `round` at `subject`'s gate, if there is one.
pub async fn round_decision(
    store: &dyn Store,
    workspace: &WorkspaceId,
    job: &JobId,
    subject: ApprovalSubject,
    round: Round,
) -> Result<Option<ApprovalRecord>, Error> {
    let doc = store.get(workspace, APPROVALS, &round_decision_id(job, subject, round)).await.map_err(Error::from)?;
    doc.map(|d| d.decode().map_err(Error::from)).transpose()
}

/// Every decision record of a job, in the order they were taken: rounds and the final
/// approve or reject of each gate, and a request past the last round.
pub async fn decisions(store: &dyn Store, workspace: &WorkspaceId, job: &JobId) -> Result<Vec<ApprovalRecord>, Error> {
    let mut records = Vec::new();
    for subject in [ApprovalSubject::Strategy, ApprovalSubject::Draft] {
        let mut ids: Vec<DocId> =
            Round::all().filter_map(|r| r.next()).map(|r| round_decision_id(job, subject, r)).collect();
        ids.push(exhausted_id(job, subject));
        ids.push(crate::records::approval_id(job, subject));
        for id in ids {
            if let Some(doc) = store.get(workspace, APPROVALS, &id).await.map_err(Error::from)? {
                records.push(doc.decode::<ApprovalRecord>().map_err(Error::from)?);
            }
        }
    }
    records.sort_by_key(|r| r.approval.decided_at);
    Ok(records)
}

/// The id of `job`'s entry in an index of the `system` workspace (`due_publications`,
/// `due_snapshots`).
pub(crate) fn index_id(workspace: &WorkspaceId, job: &JobId) -> DocId {
    doc_id(format!("{workspace}.{job}"))
}

/// The entries of the `system` workspace's index `collection` (one per workspace and job),
/// earliest `due_at` first, at most `limit`, each decoded; an entry that does not decode is
/// logged (its id, never its data) and removed, so one bad entry never stops a tick.
pub(crate) async fn due_entries<T: serde::de::DeserializeOwned>(
    store: &dyn harmonia_store::Store,
    collection: Collection,
    limit: u32,
) -> Result<Vec<(T, u64)>, harmonia_contracts::Error> {
    use harmonia_contracts::Error;
    use harmonia_store::{Direction, Query, Write, WriteOp};
    let system = crate::steps::system_workspace();
    let query = Query::all(limit).order_by("due_at", Direction::Ascending).map_err(Error::from)?;
    let docs = store.query(&system, collection, &query).await.map_err(Error::from)?;
    let mut entries = Vec::new();
    for doc in docs {
        match doc.decode::<T>() {
            Ok(entry) => entries.push((entry, doc.version)),
            Err(_) => {
                tracing::warn!(collection = %collection, id = %doc.id, "an index entry does not decode; removing it");
                let op = WriteOp::Delete { expected_version: Some(doc.version) };
                let _ = store.commit(&system, vec![Write { collection, id: doc.id.clone(), op }]).await;
            }
        }
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_over_long_marker_id_is_stable_and_valid() {
        let job: JobId = "j".repeat(128).parse().expect("job");
        let r0 = Round::ORIGINAL;
        let first = marker_id(&job, Stage::Strategize, r0, Pass::FIRST);
        assert_eq!(first, marker_id(&job, Stage::Strategize, r0, Pass::FIRST));
        assert!(first.as_str().len() <= harmonia_contracts::ids::MAX_ID_LEN);
        assert_ne!(first, marker_id(&job, Stage::Strategize, r0, Pass::REVISION));
        assert_ne!(first, running_id(&job, Stage::Strategize, r0, Pass::FIRST));
        let r1 = r0.next().expect("round 1");
        assert_ne!(first, marker_id(&job, Stage::Strategize, r1, Pass::FIRST));
        let short: JobId = "job-1".parse().expect("job");
        assert_eq!(marker_id(&short, Stage::Plan, r0, Pass::FIRST).as_str(), "job-1.plan.1");
        assert_eq!(marker_id(&short, Stage::Draft, r1, Pass::REVISION).as_str(), "job-1.draft.2.r1");
        assert_eq!(doc_id("x".repeat(300)), doc_id("x".repeat(300)));
    }
}
