//! The model boundary: one request/response shape every backend speaks, modelled on Gemini's
//! `generateContent` (system instruction, turns of parts, function declarations, a response
//! schema), and the [`Model`] trait.

use async_trait::async_trait;
use harmonia_contracts::domain::TokenUsage;
use harmonia_contracts::tool::Provenance;
use harmonia_contracts::{Code, Role};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

use serde_json::Value;

/// Who produced a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Speaker {
    /// The runtime (the task, tool results).
    User,
    /// The model.
    Model,
}

/// One part of a turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// Text.
    Text(String),
    /// The model asks for a tool call.
    FunctionCall {
        /// Tool name.
        name: String,
        /// Arguments (a JSON object).
        args: Value,
    },
    /// A tool's result, sent back to the model.
    FunctionResponse {
        /// Tool name.
        name: String,
        /// The result (a JSON object).
        response: Value,
    },
}

/// One turn of the conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// Who.
    pub speaker: Speaker,
    /// What.
    pub parts: Vec<Part>,
}

/// A tool the model may call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionDeclaration {
    /// Name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments (an object schema).
    pub parameters: Value,
}

/// One model call.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelRequest {
    /// The role being invoked (the offline and scripted models key on it).
    pub role: Role,
    /// The role's instruction.
    pub system_instruction: String,
    /// The conversation so far.
    pub turns: Vec<Turn>,
    /// Tools the role may call (shared: a role's declarations are made once per runtime).
    pub tools: Arc<[FunctionDeclaration]>,
    /// JSON Schema the final answer must match (shared: a role's schema is built once).
    pub response_schema: Arc<Value>,
    /// A request-bound grounded web search (Gemini's `googleSearch` tool) instead of
    /// function declarations; used only by the isolated research child invocation.
    pub grounded_search: bool,
}

/// Grounding metadata returned with a grounded answer (web search), exactly as the provider
/// reported it. Nothing here is trusted: [`crate::research`] validates it before any result
/// is accepted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grounding {
    /// The pages the answer may rest on, referred to by index.
    pub chunks: Vec<GroundingChunk>,
    /// Which span of the answer rests on which chunks.
    pub supports: Vec<GroundingSupport>,
    /// Queries the model ran.
    pub queries: Vec<String>,
}

/// One page of a grounded answer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroundingChunk {
    /// Its address (empty when the provider gave none).
    pub uri: String,
    /// Its title.
    pub title: String,
}

/// One span of a grounded answer and the chunks it rests on. Numbers the provider sent that
/// are not indices (negative, fractional, missing where required) are kept as `usize::MAX`,
/// so validation refuses them instead of a parser guessing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroundingSupport {
    /// Which text part of the answer the span is in.
    pub part: usize,
    /// Byte offset where the span starts in that part (inclusive).
    pub start: usize,
    /// Byte offset where it ends (exclusive).
    pub end: usize,
    /// The span's text, when the provider repeated it.
    pub text: Option<String>,
    /// Indices into [`Grounding::chunks`].
    pub chunks: Vec<usize>,
}

/// One model answer.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelResponse {
    /// The answer's parts (text or function calls).
    pub parts: Vec<Part>,
    /// Token counts.
    pub usage: TokenUsage,
    /// Grounding metadata, when the answer was grounded.
    pub grounding: Option<Grounding>,
}

/// Why a model call failed. Never carries the provider's body: the `&'static str` details
/// are Harmonia's own words, for logs and `error.type`.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Throttled (HTTP 429) after the allowed retries.
    #[error("model throttled")]
    Throttled,
    /// The service failed (5xx, timeout, connection) after the allowed retries.
    #[error("model unavailable ({0})")]
    Unavailable(&'static str),
    /// The credentials were refused (HTTP 401 or 403, or an API key the provider rejects).
    #[error("model credentials refused")]
    Auth,
    /// The model is unknown to the provider (HTTP 404).
    #[error("model not found")]
    NotFound,
    /// The provider refused the request as malformed (another 4xx).
    #[error("model request refused as malformed")]
    BadRequest,
    /// The model refused to answer (a safety block, a refusing finish reason), or a local
    /// model has no answer for this request.
    #[error("model refused ({0})")]
    Refused(&'static str),
    /// The answer is not in the provider's documented format, is cut short, or is too long.
    #[error("model answer unreadable ({0})")]
    OutputInvalid(&'static str),
    /// A scripted or offline model has nothing to say for this request.
    #[error("no response available")]
    Exhausted,
}

impl Error {
    /// The stable code this failure crosses the runtime boundary as.
    pub fn code(&self) -> Code {
        match self {
            Error::Throttled => Code::ModelThrottled,
            Error::Unavailable(_) | Error::Exhausted => Code::ModelUnavailable,
            Error::Auth => Code::ModelAuth,
            Error::NotFound => Code::ModelNotFound,
            Error::BadRequest => Code::ModelBadRequest,
            Error::Refused(_) => Code::ModelRefused,
            Error::OutputInvalid(_) => Code::ModelOutputInvalid,
        }
    }
}

/// A language-model backend.
#[async_trait]
pub trait Model: Send + Sync {
    /// The model name recorded in activity (`[a-z0-9][a-z0-9._-]*`).
    fn name(&self) -> &str;
    /// Provenance of everything this backend produces.
    fn provenance(&self) -> Provenance;
    /// Who serves the model, as OpenTelemetry's `gen_ai.provider.name` (a well-known value
    /// such as `gcp.vertex_ai`, or `harmonia.*` for Harmonia's own backends).
    fn provider(&self) -> &'static str;
    /// Whether the backend can answer a grounded web search ([`ModelRequest::grounded_search`]);
    /// a role is offered `google_search` only when it can.
    fn grounded_search(&self) -> bool {
        true
    }
    /// One call.
    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, Error>;
}

/// A provider's model name as activity records it: lower case, `[a-z0-9._-]` (anything else
/// becomes `-`), at most 64 characters.
pub fn activity_name(model: &str) -> String {
    model
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' })
        .take(64)
        .collect()
}

/// What a wrapping model does with a request ([`Wrapped`]): answer it itself, or ask the
/// model it wraps and change the answer. Tests and benchmarks use it for a model that
/// counts, rewrites or holds its calls.
#[async_trait]
pub trait Wrapper: Send + Sync {
    /// Answer `request`; `inner` is the wrapped model.
    async fn generate(&self, inner: &dyn Model, request: &ModelRequest) -> Result<ModelResponse, Error>;
}

/// `inner` with its answers given by a [`Wrapper`]; its name, provenance and provider stay
/// `inner`'s.
pub struct Wrapped<W> {
    inner: std::sync::Arc<dyn Model>,
    wrapper: W,
}

impl<W: Wrapper> Wrapped<W> {
    /// `inner`, answering through `wrapper`.
    pub fn new(inner: std::sync::Arc<dyn Model>, wrapper: W) -> Self {
        Self { inner, wrapper }
    }
}

#[async_trait]
impl<W: Wrapper> Model for Wrapped<W> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn provenance(&self) -> Provenance {
        self.inner.provenance()
    }
    fn provider(&self) -> &'static str {
        self.inner.provider()
    }
    fn grounded_search(&self) -> bool {
        self.inner.grounded_search()
    }
    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, Error> {
        self.wrapper.generate(&*self.inner, request).await
    }
}
