//! `POST /v1/ask` on the operator function: the console's questions, forwarded to the Nova
//! function.
//!
//! Nova is its own function with its own URL, and the console may call only its own origin
//! (CSP `connect-src 'self'`), so the operator function passes each question on. It checks the
//! caller first (credential, or console session with its CSRF token), so nothing unauthenticated
//! travels further, and hands Nova the caller's own `Authorization`, session cookie, CSRF
//! token and `Origin`, with the host the request was sent to (`X-Forwarded-Host`): Nova checks
//! them again against the same store and answers in the caller's workspace only. On Cloud Run the Nova service admits only callers with an ID token for its URL, which
//! the operator function's service account mints and sends in `X-Serverless-Authorization`
//! (Cloud Run checks that header and passes `Authorization` through untouched). Nova's answer,
//! or its typed error, comes back as it was.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, FromRef, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::routing::post;
use google_cloud_auth::credentials::idtoken::{self, IDTokenCredentials};
use harmonia_auth::Credentials;
use harmonia_contracts::{Code, Error};
use harmonia_http::caller::{CSRF_HEADER, FORWARDED_HOST};
use harmonia_http::{ApiError, Caller};

/// How long Nova may take to answer: a model's tool loop, well inside a browser's patience.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest answer passed back (Nova's answers are a few kilobytes).
const MAX_ANSWER_BYTES: usize = 1024 * 1024;
/// The request headers Nova needs to know the caller and the trace.
const FORWARDED: [HeaderName; 5] = [
    header::AUTHORIZATION,
    header::COOKIE,
    HeaderName::from_static(CSRF_HEADER),
    header::ORIGIN,
    HeaderName::from_static("traceparent"),
];

/// Where Nova answers, and how to reach it.
#[derive(Clone)]
pub struct NovaLink {
    ask_url: String,
    http: reqwest::Client,
    /// ID tokens for Nova's URL, when it is served over TLS (Cloud Run); a plain-http URL is a
    /// Nova on the same machine or network, reached without one.
    id_tokens: Option<IDTokenCredentials>,
}

impl NovaLink {
    /// The link to the Nova function at `base` (an http or https URL, as
    /// `harmonia_host::Config::nova_url` holds it).
    pub fn new(base: &str) -> Result<Self, Error> {
        let id_tokens = if base.starts_with("https://") {
            Some(idtoken::Builder::new(base).build().map_err(|_| {
                Error::new(
                    Code::InvalidConfig,
                    "HARMONIA_NOVA_URL is https, but no credentials can mint ID tokens for it",
                )
            })?)
        } else {
            None
        };
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(ANSWER_TIMEOUT)
            .build()
            .map_err(|_| Error::from_code(Code::Internal))?;
        Ok(Self { ask_url: format!("{base}/v1/ask"), http, id_tokens })
    }
}

#[derive(Clone)]
struct Forward {
    link: Arc<NovaLink>,
    credentials: Arc<Credentials>,
}

impl FromRef<Forward> for Arc<Credentials> {
    fn from_ref(state: &Forward) -> Self {
        state.credentials.clone()
    }
}

/// `POST /v1/ask`, forwarded to Nova by `link`; `credentials` check the caller first.
pub fn routes(link: NovaLink, credentials: Arc<Credentials>) -> Router {
    Router::new()
        .route("/v1/ask", post(ask))
        .layer(DefaultBodyLimit::max(harmonia_nova::MAX_ASK_BYTES))
        .with_state(Forward { link: Arc::new(link), credentials })
}

async fn ask(
    State(state): State<Forward>,
    Caller(_): Caller,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let unreachable = || Error::new(Code::DependencyUnavailable, "Nova could not be reached; ask again in a moment.");
    let link = &state.link;
    let mut request = link.http.post(&link.ask_url).header(header::CONTENT_TYPE, "application/json").body(body);
    for name in &FORWARDED {
        for value in headers.get_all(name) {
            request = request.header(name, value);
        }
    }
    // Nova checks a console request's Origin against the host it was sent to: this one's.
    if let Some(host) = headers.get(FORWARDED_HOST).or_else(|| headers.get(header::HOST)) {
        request = request.header(FORWARDED_HOST, host);
    }
    if let Some(tokens) = &link.id_tokens {
        let token = tokens.id_token().await.map_err(|e| {
            tracing::warn!(transient = e.is_transient(), "no ID token for the Nova function");
            unreachable()
        })?;
        request = request.header("x-serverless-authorization", format!("Bearer {token}"));
    }
    let mut answer = request.send().await.map_err(|e| {
        tracing::warn!(timeout = e.is_timeout(), connect = e.is_connect(), "the Nova function did not answer");
        unreachable()
    })?;
    let status = StatusCode::from_u16(answer.status().as_u16()).map_err(|_| unreachable())?;
    // Nova's body is JSON in the shared shape, answer or error: anything else (a front end's
    // own error page) is not passed to the browser.
    let json =
        answer.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !json {
        tracing::warn!(status = status.as_u16(), "the Nova function answered without JSON");
        return Err(unreachable().into());
    }
    let bytes = harmonia_contracts::body::read(&mut answer, MAX_ANSWER_BYTES).await.map_err(|_| unreachable())?;
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))
        .body(Body::from(bytes))
        .map_err(|_| Error::from_code(Code::Internal).into())
}

#[cfg(test)]
mod tests;
