//! Nova, the read-only liaison (`spec/tool-contracts.md`), as its own HTTP function.
//!
//! `POST /v1/ask {"question"}` → the validated answer, the skill Nova used, the tool calls it
//! made with their exact envelopes, and the evidence ids it cited. The workspace comes from the
//! caller's credential. Nova loads exactly one of its five skills before any data tool, calls
//! only that skill's tools, and its answer is accepted only if the validator finds every cited
//! id returned in this invocation, errors reported exactly, "no data" only when nothing came
//! back, retries only of retryable errors and at most once, no mutation claims, and no
//! record-level claim backed by dataset evidence alone. A rejected answer is a typed error.
//!
//! Layout: [`tools`] (the six tools, each returning exactly the tool envelope), [`data`]
//! (trend-signal import from JSON or CSV), [`ask`] and [`app`].

pub mod data;
pub mod tools;

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, FromRef, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use harmonia_agents::io::{Answer, NovaInput, RoleInput};
use harmonia_agents::skills::LoadEvent;
use harmonia_agents::{InvocationSeed, Runtime};
use harmonia_auth::{Credentials, Identity};
use harmonia_contracts::event::Stage;
use harmonia_contracts::ids::JobId;
use harmonia_contracts::trace::TraceParent;
use harmonia_contracts::{Code, Error};
use harmonia_http::{ApiError, Caller, JsonBody, Trace};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Largest `/v1/ask` body.
pub const MAX_ASK_BYTES: usize = 16 * 1024;
/// Longest question, in characters.
pub const MAX_QUESTION_CHARS: usize = 2000;

/// One tool call as it happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Tool name.
    pub name: String,
    /// The exact envelope it returned.
    pub envelope: Value,
}

/// A validated answer with its trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Asked {
    /// The answer.
    pub answer: Answer,
    /// The one skill loaded.
    pub skill: Option<String>,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Evidence ids the answer cites.
    pub evidence_ids: Vec<String>,
}

/// Ask Nova a question in the caller's workspace.
pub async fn ask(runtime: &Runtime, who: &Identity, question: &str, trace: TraceParent) -> Result<Asked, Error> {
    let question = question.trim();
    if question.is_empty() || question.chars().count() > MAX_QUESTION_CHARS {
        return Err(Error::new(Code::InvalidRequest, "the question must be 1-2000 characters"));
    }
    let seed = InvocationSeed {
        workspace: who.workspace.clone(),
        user: who.operator.clone(),
        job: JobId::generate(),
        stage: Stage::Operator,
        input: RoleInput::Nova(NovaInput { question: question.to_owned() }),
        trace,
    };
    let invocation = runtime.run_task(&seed).await.map_err(|e| match e.contract() {
        Some(c) => Error::from_code(c.code),
        None => Error::from_code(Code::StoreUnavailable),
    })?;
    let answer: Answer = invocation.state_delta.require("answer").map_err(|e| Error::from_code(e.code))?;
    let skill = invocation.steps.iter().find_map(|s| match &s.event {
        LoadEvent::Skill(name) => Some(name.clone()),
        _ => None,
    });
    let tool_calls = invocation
        .steps
        .iter()
        .filter_map(|s| match (&s.event, &s.result) {
            (LoadEvent::DataTool(name), Some(envelope)) => {
                Some(ToolCall { name: name.clone(), envelope: envelope.clone() })
            }
            _ => None,
        })
        .collect();
    let mut evidence_ids: Vec<String> =
        answer.claims.iter().flat_map(|c| c.evidence.iter().map(ToString::to_string)).collect();
    evidence_ids.sort();
    evidence_ids.dedup();
    Ok(Asked { answer, skill, tool_calls, evidence_ids })
}

/// What the routes share.
#[derive(Clone)]
pub struct NovaState {
    /// The runtime with Nova's tools registered.
    pub runtime: Arc<Runtime>,
    /// Who may ask.
    pub credentials: Arc<Credentials>,
}

impl FromRef<NovaState> for Arc<Credentials> {
    fn from_ref(state: &NovaState) -> Self {
        state.credentials.clone()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AskBody {
    question: String,
}

async fn ask_route(
    State(state): State<NovaState>,
    Caller(who): Caller,
    Trace(trace): Trace,
    JsonBody(body): JsonBody<AskBody>,
) -> Result<Json<Asked>, ApiError> {
    Ok(Json(ask(&state.runtime, &who, &body.question, trace).await?))
}

/// Nova's router: `POST /v1/ask` and `GET /healthz`; anything else is a JSON 404 or 405.
pub fn app(state: NovaState) -> Router {
    harmonia_http::json_fallbacks(
        Router::new().route("/healthz", get(|| async { "ok" })).route("/v1/ask", post(ask_route)),
    )
    .layer(DefaultBodyLimit::max(MAX_ASK_BYTES))
    .with_state(state)
}

/// Register Nova's six tools on a runtime.
pub fn with_tools(runtime: Runtime) -> Runtime {
    tools::all().into_iter().fold(runtime, Runtime::with_tool)
}

#[cfg(test)]
mod http_tests;
#[cfg(test)]
mod tests;
