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
//! (trend-signal import from JSON or CSV), [`ask()`] and [`app`].

mod ask;
pub mod data;
pub mod tools;

pub use ask::{Asked, MAX_QUESTION_CHARS, ToolCall, ask};

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::rejection::JsonRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use harmonia_agents::Runtime;
use harmonia_auth::Credentials;
use harmonia_contracts::trace::TraceParent;
use harmonia_contracts::{Code, Error};
use serde::Deserialize;
use serde_json::json;

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

/// An error response with the safe body only.
pub struct ApiError(Error);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.0.code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, Json(json!({ "error": self.0.body() }))).into_response()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AskBody {
    question: String,
}

async fn ask_route(
    State(state): State<NovaState>,
    headers: HeaderMap,
    body: Result<Json<AskBody>, JsonRejection>,
) -> Result<Json<Asked>, ApiError> {
    let who = state
        .credentials
        .authenticate(headers.get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()))
        .map_err(ApiError)?;
    let body = match body {
        Ok(Json(b)) => b,
        Err(JsonRejection::BytesRejection(_)) => return Err(ApiError(Error::from_code(Code::PayloadTooLarge))),
        Err(_) => return Err(ApiError(Error::from_code(Code::InvalidRequest))),
    };
    let trace = headers
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(TraceParent::new_root);
    ask(&state.runtime, &who, &body.question, trace).await.map(Json).map_err(ApiError)
}

/// Nova's router.
pub fn app(state: NovaState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/v1/ask", post(ask_route))
        .layer(DefaultBodyLimit::max(MAX_ASK_BYTES))
        .with_state(state)
}

/// Register Nova's six tools on a runtime.
pub fn with_tools(runtime: Runtime) -> Runtime {
    tools::all().into_iter().fold(runtime, Runtime::with_tool)
}

#[cfg(test)]
mod tests;
