use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Platform, SnapshotOffset, Timestamp};
use crate::error::Code;
use crate::event::Stage;
use crate::ids::{FactId, JobId, PostId, SignalId, WorkspaceId};
use crate::roles::Role;
use crate::tool::Provenance;
use crate::trace::{SpanId, TraceId};

/// Measured metrics of one published post: a row an operator imported (history from before
/// Harmonia), or an engagement snapshot the dispatcher read from the platform some time after
/// the post was verified (`offset`). Stored metrics are only a claim: they count as verified
/// performance when `post` is a verified publication of the same workspace (the rule lives in
/// `harmonia_agents::eligibility`), whatever the file they came from says. A count the
/// platform does not report is absent (`null`), never zero.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PostMetrics {
    /// Platform post id.
    pub post: PostId,
    /// The job that produced it, when it was published by Harmonia and the source knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobId>,
    /// Platform.
    pub platform: Platform,
    /// When it went live.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub published_at: Timestamp,
    /// When these numbers were read.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub measured_at: Timestamp,
    /// For a snapshot read from the platform: how long after verification it was due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<SnapshotOffset>,
    /// Impressions, when the platform reports them.
    pub impressions: Option<u64>,
    /// Likes (favourites) and other reactions.
    pub reactions: u64,
    /// Comments (replies).
    pub comments: u64,
    /// Shares (reposts, reblogs).
    pub shares: u64,
    /// Quote posts, when the platform reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quotes: Option<u64>,
    /// Link clicks, when the platform reports them.
    pub clicks: Option<u64>,
    /// Where the numbers came from (an analytics export, a platform API, a sample file).
    #[schemars(length(min = 1, max = 200))]
    pub source: String,
    /// Live or mock.
    pub provenance: Provenance,
}

impl PostMetrics {
    /// The record's id in its collection and as evidence (after `metric-`): the post's id, and
    /// for a snapshot its offset (`3lxyz.24h`).
    pub fn record_id(&self) -> String {
        match self.offset {
            Some(offset) => format!("{}.{offset}", self.post),
            None => self.post.to_string(),
        }
    }

    /// The id a specialist, Nova or a memory fact cites this record by: `metric-` and its
    /// record id.
    pub fn evidence_id(&self) -> crate::ids::EvidenceId {
        crate::ids::EvidenceId::stable(&format!("metric-{}", self.record_id()))
    }

    /// Every interaction counted: reactions, comments, shares, and quotes and clicks where the
    /// platform reports them.
    pub fn interactions(&self) -> u64 {
        self.reactions + self.comments + self.shares + self.quotes.unwrap_or(0) + self.clicks.unwrap_or(0)
    }

    /// Interactions per impression (at most 1), when impressions are known and not zero.
    pub fn engagement_rate(&self) -> Option<f64> {
        let seen = self.impressions.filter(|n| *n > 0)?;
        Some((self.interactions() as f64 / seen as f64).min(1.0))
    }
}

/// A public trend signal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrendSignal {
    /// Id.
    pub id: SignalId,
    /// Topic.
    #[schemars(length(min = 1, max = 200))]
    pub topic: String,
    /// One-line summary.
    #[schemars(length(min = 1, max = 1000))]
    pub summary: String,
    /// Where it was observed (publisher or feed name).
    #[schemars(length(min = 1, max = 200))]
    pub source: String,
    /// Public URL, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 2048))]
    pub url: Option<String>,
    /// Relative strength, 0–100.
    #[schemars(range(max = 100))]
    pub score: u8,
    /// When it was observed.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub observed_at: Timestamp,
    /// Live or mock.
    pub provenance: Provenance,
}

/// A memory-bank fact. Memory is context, never authority: a fact reaches Nimi and Ryan only
/// when the eligibility rule (`harmonia_agents::eligibility`) admits it — learnt from verified
/// publications of the same workspace, live, recent enough and not expired — never by a flag.
/// Facts derived from verified performance name the metric records they rest on (`evidence`,
/// the posts behind them in `posts`) and how many posts they summarise (`sample_size`); each
/// recomputation that changes one is a new `version` of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryFact {
    /// Id.
    pub id: FactId,
    /// The fact: a statement with its numbers.
    #[schemars(length(min = 1, max = 1000))]
    pub text: String,
    /// Where it came from (e.g. a verified post, verified performance, an operator note).
    #[schemars(length(min = 1, max = 200))]
    pub origin: String,
    /// The published post it was learnt from, when it was learnt from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post: Option<PostId>,
    /// The posts whose metric records it rests on, when it was derived from them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 500))]
    pub posts: Vec<PostId>,
    /// The metric records it rests on (`metric-…` evidence ids).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 500))]
    pub evidence: Vec<crate::ids::EvidenceId>,
    /// How many posts it summarises.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_size: Option<u32>,
    /// Live or mock.
    pub provenance: Provenance,
    /// When it was recorded (for a derived fact, when this version was computed).
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub recorded_at: Timestamp,
    /// When it stops being offered, when that is earlier than the eligibility rule's age limit
    /// (a fact the latest recomputation no longer supports expires then).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::time::rfc3339_option")]
    #[schemars(with = "Option<crate::domain::Timestamp>")]
    pub expires_at: Option<Timestamp>,
    /// Its version: 1, then one more at each recomputation that changed it.
    #[serde(default = "first_version")]
    #[schemars(range(min = 1))]
    pub version: u32,
}

fn first_version() -> u32 {
    1
}

/// What an activity record measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// The coordinator routed a task.
    Route,
    /// A specialist produced its output.
    Invoke,
    /// A tool call (only with a real trace context).
    ToolCall,
    /// A grounded web search, run as its own child invocation of the specialist that asked
    /// for it (the record's agent).
    Research,
}

/// Invocation outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum ActivityOutcome {
    /// Accepted.
    Success,
    /// Failed with a stable code.
    Failure {
        /// Stable code.
        code: Code,
    },
}

/// Token usage counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenUsage {
    /// Prompt tokens.
    pub input_tokens: u32,
    /// Output tokens.
    pub output_tokens: u32,
}

impl TokenUsage {
    /// Input and output together.
    pub fn total(&self) -> u64 {
        u64::from(self.input_tokens) + u64::from(self.output_tokens)
    }
}

/// The metadata-only record of one specialist invocation. No field can hold prompts,
/// responses, transcripts, drafts, credentials or provider bodies: every field is an id,
/// an enum, a number, a time or a pattern-restricted model name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ActivityRecord {
    /// Workspace.
    pub tenant: WorkspaceId,
    /// Job.
    pub job: JobId,
    /// Operation.
    pub operation: Operation,
    /// Role invoked.
    pub agent: Role,
    /// Pipeline stage.
    pub stage: Stage,
    /// Model name, e.g. `gemini-2.5-flash` or `offline`.
    #[schemars(length(min = 1, max = 64), regex(pattern = r"^[a-z0-9][a-z0-9._-]{0,63}$"))]
    pub model: String,
    /// Start.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub started_at: Timestamp,
    /// End.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub ended_at: Timestamp,
    /// Duration, microseconds.
    pub duration_us: u64,
    /// Token counts.
    pub usage: TokenUsage,
    /// How many model calls the invocation made (each turn of its loop is one; a tool call's
    /// record makes none). Records written before it was counted read as 0.
    #[serde(default)]
    pub model_calls: u32,
    /// How many corrective turns the runtime gave the model when an answer missed the role's
    /// contract (`HARMONIA_MODEL_REPAIRS`). Records written before repairs existed read as 0.
    #[serde(default)]
    pub repairs: u32,
    /// The code of each miss a corrective turn answered, in order (as many as `repairs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repaired: Vec<Code>,
    /// Outcome.
    pub outcome: ActivityOutcome,
    /// W3C trace id.
    pub trace_id: TraceId,
    /// W3C span id of this invocation (or tool call).
    pub span_id: SpanId,
    /// W3C span id of its parent: the stage event (or, for a tool call, the invocation).
    pub parent_span_id: SpanId,
}
