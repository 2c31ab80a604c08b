use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Platform, Timestamp};
use crate::error::Code;
use crate::event::Stage;
use crate::ids::{FactId, JobId, PostId, SignalId, WorkspaceId};
use crate::roles::Role;
use crate::tool::Provenance;
use crate::trace::{SpanId, TraceId};

/// Measured metrics of one published post. Stored metrics are only a claim: they count as
/// verified performance when `post` is a verified publication of the same workspace (the rule
/// lives in `harmonia_agents::eligibility`), whatever the file they came from says.
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
    /// Impressions.
    pub impressions: u64,
    /// Likes and other reactions.
    pub reactions: u64,
    /// Comments.
    pub comments: u64,
    /// Shares and reposts.
    pub shares: u64,
    /// Link clicks.
    pub clicks: u64,
    /// Where the numbers came from (an analytics export, a platform API, a sample file).
    #[schemars(length(min = 1, max = 200))]
    pub source: String,
    /// Live or mock.
    pub provenance: Provenance,
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
/// when the eligibility rule (`harmonia_agents::eligibility`) admits it — learnt from a
/// verified publication of the same workspace, live, and recent enough — never by a flag.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryFact {
    /// Id.
    pub id: FactId,
    /// The fact.
    #[schemars(length(min = 1, max = 1000))]
    pub text: String,
    /// Where it came from (e.g. a verified post or an operator note).
    #[schemars(length(min = 1, max = 200))]
    pub origin: String,
    /// The published post it was learnt from, when it was learnt from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post: Option<PostId>,
    /// Live or mock.
    pub provenance: Provenance,
    /// When it was recorded.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub recorded_at: Timestamp,
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
