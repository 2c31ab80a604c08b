//! What every HTTP model provider's client shares ([`crate::gemini`], [`crate::openai`]): one
//! JSON `POST` per attempt, the answer read under [`MAX_RESPONSE_BYTES`], a refused call
//! classified by its status and the provider's error code, and retries of throttling and
//! outages only — jittered exponential backoff that waits at least the `Retry-After` the
//! provider sent, and gives up at once when it asks for longer than the client waits.
//!
//! A failure is logged with its HTTP status and the provider's error code (a plain token read
//! from the error body), never the body itself.

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use harmonia_contracts::body::{self, ReadError};
use serde_json::Value;

use crate::model::{self, ModelResponse};

/// The longest answer read from a provider (4 MiB): a role's answer is a few kilobytes and
/// grounding metadata tens, so anything near this is not an answer. A longer body is refused
/// (`oversized response`) before it is buffered past this.
pub const MAX_RESPONSE_BYTES: usize = 4 << 20;

/// The longest error body read for its code (a provider's error body is well under a kilobyte).
const MAX_ERROR_BYTES: usize = 64 << 10;

/// How long and how often a client tries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Per-request timeout.
    pub timeout: Duration,
    /// Attempts for throttling and outages (at least 1).
    pub max_attempts: u32,
    /// First retry delay; doubles per attempt, with jitter.
    pub backoff: Duration,
    /// The longest `Retry-After` waited for: a longer one ends the call as throttled at once,
    /// and the step is retried later.
    pub max_retry_after: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
            max_attempts: 3,
            backoff: Duration::from_millis(500),
            max_retry_after: Duration::from_secs(30),
        }
    }
}

impl Limits {
    /// An HTTP client whose requests time out after [`Limits::timeout`].
    pub(crate) fn client(&self) -> Result<reqwest::Client, model::Error> {
        reqwest::Client::builder().timeout(self.timeout).build().map_err(|_| model::Error::Unavailable("http client"))
    }
}

/// The headers carrying a credential: `name: value`, marked sensitive so no debug output or
/// log shows it; a value that cannot be a header is `Auth`.
pub(crate) fn credential(
    name: reqwest::header::HeaderName,
    value: &str,
) -> Result<reqwest::header::HeaderMap, model::Error> {
    let mut value = reqwest::header::HeaderValue::from_str(value).map_err(|_| model::Error::Auth)?;
    value.set_sensitive(true);
    Ok(reqwest::header::HeaderMap::from_iter([(name, value)]))
}

/// How one provider's bodies are read.
pub(crate) struct Provider {
    /// OpenTelemetry's `gen_ai.provider.name`.
    pub name: &'static str,
    /// The provider's error code in an error body, when it has a plain one.
    pub error_code: fn(&[u8]) -> Option<String>,
    /// What a non-success status means, given that code.
    pub classify: fn(u16, Option<&str>) -> model::Error,
    /// The answer of a successful call.
    pub decode: fn(&[u8]) -> Result<ModelResponse, model::Error>,
}

/// One failed attempt, whether another may help, and how long the provider asked to wait.
struct Failed {
    error: model::Error,
    transient: bool,
    retry_after: Option<Duration>,
}

impl Failed {
    fn new(error: model::Error) -> Self {
        let transient = matches!(error, model::Error::Throttled | model::Error::Unavailable(_));
        Failed { error, transient, retry_after: None }
    }
}

/// A `Retry-After` value: delay seconds, or an HTTP date (as from now; a past date is no wait).
pub fn retry_after(value: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    Some((at.with_timezone(&chrono::Utc) - now).to_std().unwrap_or(Duration::ZERO))
}

/// `token` when it is a plain error code (letters, digits, `_`, `.`, `-`; at most 64), so
/// nothing a provider writes in prose can reach a log line.
pub(crate) fn plain_token(token: Option<&Value>) -> Option<String> {
    token
        .and_then(Value::as_str)
        .filter(|t| {
            !t.is_empty()
                && t.len() <= 64
                && t.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        })
        .map(str::to_owned)
}

/// `POST` `body` as JSON to `url` with `headers`, retried as the module says.
pub(crate) async fn post(
    http: &reqwest::Client,
    provider: &Provider,
    model: &str,
    limits: &Limits,
    url: &str,
    headers: reqwest::header::HeaderMap,
    body: &Value,
) -> Result<ModelResponse, model::Error> {
    let retries = usize::try_from(limits.max_attempts.max(1) - 1).unwrap_or(usize::MAX);
    let policy = ExponentialBuilder::new()
        .with_min_delay(limits.backoff)
        .with_factor(2.0)
        .with_jitter()
        .without_max_delay()
        .with_max_times(retries);
    (|| once(http, provider, model, url, headers.clone(), body))
        .retry(policy)
        .when(|f: &Failed| f.transient)
        .adjust(|f: &Failed, backoff| match f.retry_after {
            Some(asked) if asked > limits.max_retry_after => None,
            Some(asked) => backoff.map(|wait| wait.max(asked)),
            None => backoff,
        })
        .await
        .map_err(|f| f.error)
}

/// One attempt.
async fn once(
    http: &reqwest::Client,
    provider: &Provider,
    model: &str,
    url: &str,
    headers: reqwest::header::HeaderMap,
    body: &Value,
) -> Result<ModelResponse, Failed> {
    let mut response = http.post(url).headers(headers).json(body).send().await.map_err(|e| {
        let detail = if e.is_timeout() { "timeout" } else { "connection" };
        tracing::warn!(event = "model_call_failed", provider = provider.name, model, error = detail, code = %model::Error::Unavailable(detail).code(), "the model endpoint did not answer");
        Failed::new(model::Error::Unavailable(detail))
    })?;
    let status = response.status();
    if !status.is_success() {
        let asked = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| retry_after(v, chrono::Utc::now()));
        let provider_code = read(&mut response, MAX_ERROR_BYTES).await.ok().and_then(|b| (provider.error_code)(&b));
        let error = (provider.classify)(status.as_u16(), provider_code.as_deref());
        tracing::warn!(
            event = "model_call_failed",
            provider = provider.name,
            model,
            status = status.as_u16(),
            provider_code = provider_code.as_deref().unwrap_or("none"),
            code = %error.code(),
            "the model endpoint refused the call"
        );
        return Err(Failed { retry_after: asked, ..Failed::new(error) });
    }
    let bytes = read(&mut response, MAX_RESPONSE_BYTES).await.map_err(Failed::new)?;
    (provider.decode)(&bytes).map_err(|error| {
        tracing::warn!(event = "model_answer_refused", provider = provider.name, model, code = %error.code(), reason = %error, "the model's answer was not accepted");
        Failed { transient: false, ..Failed::new(error) }
    })
}

/// A body of at most `limit` bytes: longer is `OutputInvalid`, a broken transfer `Unavailable`.
async fn read(response: &mut reqwest::Response, limit: usize) -> Result<Vec<u8>, model::Error> {
    body::read(response, limit).await.map_err(|e| match e {
        ReadError::TooLarge(_) => model::Error::OutputInvalid("oversized response"),
        ReadError::Broken => model::Error::Unavailable("connection"),
    })
}
