//! The ingest function: `POST /v1/sources` validates a submitted source (JSON, WebVTT or SRT)
//! with `harmonia_pipeline::steps::ingest` and creates its job in the caller's workspace.
//!
//! The operator API serves the same [`submit`] handler, so a source submitted to either
//! function is validated and answered identically. Requests are authenticated like the
//! operator API ([`harmonia_http::Caller`]); bodies are at most [`MAX_BODY_BYTES`]; errors are
//! `{"error":{code,category,message,retryable}}`.

use std::sync::Arc;

use axum::Json;
use axum::extract::{FromRef, State};
use axum::http::{HeaderMap, StatusCode};
use harmonia_auth::Credentials;
/// The body of `POST /v1/sources` (the typed client sends the same type).
pub use harmonia_client::api::NewSource;
use harmonia_client::api::{SourceFormat, Submitted};
use harmonia_contracts::domain::SourceInput;
use harmonia_contracts::{Code, Error};
use harmonia_http::{ApiError, Caller, JsonBody, Trace};
use harmonia_pipeline::Env;
use harmonia_pipeline::formats::{self, Format};
use harmonia_pipeline::steps::ingest;

/// Largest request body: a 4 MiB source, JSON-escaped, with its envelope.
pub const MAX_BODY_BYTES: usize = 9 * 1024 * 1024;

/// What the ingest routes share; the operator API serves with the same state.
#[derive(Clone)]
pub struct IngestState {
    /// The backends.
    pub env: Arc<Env>,
    /// Who may call.
    pub credentials: Arc<Credentials>,
}

impl IngestState {
    /// The state a hosted ingest or operator function serves with: its backends, and the
    /// credentials its configuration accepts.
    #[cfg(feature = "cloud")]
    pub fn hosted(env: Arc<Env>, config: &harmonia_host::Config) -> Result<Self, Error> {
        let credentials = harmonia_host::credentials(config, env.store.clone())?;
        Ok(Self { env, credentials })
    }
}

impl FromRef<IngestState> for Arc<Env> {
    fn from_ref(state: &IngestState) -> Self {
        state.env.clone()
    }
}

impl FromRef<IngestState> for Arc<Credentials> {
    fn from_ref(state: &IngestState) -> Self {
        state.credentials.clone()
    }
}

/// The ingest function's router: `POST /v1/sources`, `GET /healthz`, and the push endpoint of
/// the sources bucket's notifications (`POST /push/<prefix>source.uploaded`, Pub/Sub push
/// with the invoker's OIDC token, which Cloud Run checks); anything else is a JSON 404 or 405.
#[cfg(feature = "cloud")]
pub fn app(state: IngestState) -> axum::Router {
    use axum::Router;
    use axum::extract::DefaultBodyLimit;
    use axum::routing::{get, post};
    let uploads = harmonia_host::push_router(harmonia_host::Function::Ingest, &state.env);
    harmonia_http::json_fallbacks(
        Router::new()
            .route("/healthz", get(|| async { "ok" }))
            .route("/v1/sources", post(submit))
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
            .with_state(state)
            .merge(uploads),
    )
}

/// The validated source `body` submits: its content parsed in its format by [`formats::parse`]
/// (with its size limit), titled "Untitled source" and in English unless the body says
/// otherwise.
pub fn source_input(body: NewSource) -> Result<SourceInput, Error> {
    let title = body.title.unwrap_or_else(|| "Untitled source".into());
    let language = body.language.unwrap_or_else(|| "en".into());
    let format = match body.format {
        SourceFormat::Json => Format::Json,
        SourceFormat::Webvtt => Format::WebVtt,
        SourceFormat::Srt => Format::Srt,
    };
    formats::parse(body.content.as_bytes(), format, &title, &language)
}

/// The caller's `Idempotency-Key`, if sent: a retry with the same key answers the same job.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<&str>, Error> {
    headers
        .get("idempotency-key")
        .map(|v| {
            v.to_str().map_err(|e| Error::new(Code::InvalidRequest, "the idempotency key is not text").with_cause(e))
        })
        .transpose()
}

/// `POST /v1/sources` → `201 {"job"}`: parse and validate the source, then create its job in
/// the caller's workspace. Any state that gives the backends and the credentials can serve it.
pub async fn submit(
    State(env): State<Arc<Env>>,
    Caller(who): Caller,
    Trace(trace): Trace,
    headers: HeaderMap,
    JsonBody(request): JsonBody<NewSource>,
) -> Result<(StatusCode, Json<Submitted>), ApiError> {
    let input = source_input(request)?;
    let job = ingest(&env, &who.workspace, input, Some(trace), idempotency_key(&headers)?).await?;
    Ok((StatusCode::CREATED, Json(Submitted { job })))
}

#[cfg(test)]
mod tests;
