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
//! Layout: [`tools`] (the six tools, each returning exactly the tool envelope; trend signals are
//! the ones the caller's workspace imported, `harmonia_pipeline::imports::signals`), [`ask()`]
//! and [`app`].

mod ask;
pub mod tools;

pub use ask::{Asked, MAX_QUESTION_CHARS, ToolCall, ask, checked as checked_question};

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, FromRef, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use harmonia_agents::Runtime;
use harmonia_auth::Credentials;
use harmonia_http::{ApiError, Caller, JsonBody, Trace};
use serde::Deserialize;

/// Largest `/v1/ask` body.
pub const MAX_ASK_BYTES: usize = 16 * 1024;
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

/// The body of `POST /v1/ask`: `{"question"}`; the question is checked by [`checked_question`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AskBody {
    question: String,
}

impl AskBody {
    /// The question as sent, before [`checked_question`] trims and bounds it.
    pub fn question(&self) -> &str {
        &self.question
    }
}

async fn ask_route(
    State(state): State<NovaState>,
    Caller(who): Caller,
    Trace(trace): Trace,
    JsonBody(body): JsonBody<AskBody>,
) -> Result<Json<Asked>, ApiError> {
    Ok(Json(ask(&state.runtime, &who, body.question(), trace).await?))
}

/// Nova's router: `POST /v1/ask` and `GET /healthz`; anything else is a JSON 404 or 405.
pub fn app(state: NovaState) -> Router {
    // The fallbacks go on last: a wrong method is answered only for routes already there.
    harmonia_http::json_fallbacks(Router::new().route("/healthz", get(|| async { "ok" })).merge(ask_routes(state)))
}

/// `POST /v1/ask` alone, with its body bound and no fallback: what a server hosting Nova
/// beside other routes (`harmonia serve`, beside the operator API and the console) merges in.
pub fn ask_routes(state: NovaState) -> Router {
    Router::new().route("/v1/ask", post(ask_route)).layer(DefaultBodyLimit::max(MAX_ASK_BYTES)).with_state(state)
}

/// Register Nova's six tools on a runtime.
pub fn with_tools(runtime: Runtime) -> Runtime {
    tools::all().into_iter().fold(runtime, Runtime::with_tool)
}

#[cfg(test)]
mod http_tests;
#[cfg(test)]
mod tests;
