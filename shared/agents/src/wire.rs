//! What every HTTP model provider's client shares ([`crate::gemini`], [`crate::openai`]): one
//! JSON `POST` per attempt, the answer read under [`MAX_RESPONSE_BYTES`], a refused call
//! classified by its status and the provider's error code, and retries of throttling and
//! outages only — jittered exponential backoff that waits at least the `Retry-After` the
//! provider sent, and gives up at once when it asks for longer than the client waits. Every
//! attempt of one client takes its turn of a [`Pace`] the client's calls share: the
//! requests-a-minute limit (`HARMONIA_MODEL_RPM`), and the provider's last `Retry-After`, which
//! holds every call rather than only the one it answered.
//!
//! A failure is logged with its HTTP status and the provider's error code (a plain token read
//! from the error body), never the body itself.

use std::num::NonZeroU32;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

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
    /// and the step is retried later. Also the longest a call waits for its turn under
    /// [`Limits::rpm`].
    pub max_retry_after: Duration,
    /// The most requests a minute this client sends (`HARMONIA_MODEL_RPM`), shared by every
    /// role and job in the process; `None`: no pace but the provider's.
    pub rpm: Option<NonZeroU32>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
            max_attempts: 3,
            backoff: Duration::from_millis(500),
            max_retry_after: Duration::from_secs(30),
            rpm: None,
        }
    }
}

/// What every call of one client shares, so that the roles of a job and concurrent jobs in one
/// process wait their turn rather than each running into the provider's limit: the pace of
/// [`Limits::rpm`], and the time until which the provider asked every caller to wait (its last
/// `Retry-After`).
#[derive(Debug)]
pub struct Pace {
    interval: Option<Duration>,
    longest_wait: Duration,
    state: Mutex<PaceState>,
}

#[derive(Debug, Default)]
struct PaceState {
    /// When the next call may start under the pace.
    next: Option<Instant>,
    /// Until when the provider asked every caller to wait.
    held_until: Option<Instant>,
}

impl Pace {
    /// The pace `limits` set.
    pub fn new(limits: &Limits) -> Self {
        Self {
            interval: limits.rpm.map(|rpm| Duration::from_secs(60) / rpm.get()),
            longest_wait: limits.max_retry_after,
            state: Mutex::new(PaceState::default()),
        }
    }

    /// Wait for this call's turn; `Throttled` at once (taking no turn) when it would come later
    /// than the longest wait, so the step is retried later rather than held.
    pub async fn turn(&self) -> Result<(), model::Error> {
        let wait = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            let now = Instant::now();
            let mut at = state.held_until.map_or(now, |held| held.max(now));
            if self.interval.is_some() {
                at = state.next.map_or(at, |next| next.max(at));
            }
            let wait = at.saturating_duration_since(now);
            if wait > self.longest_wait {
                return Err(model::Error::Throttled);
            }
            if let Some(interval) = self.interval {
                state.next = Some(at + interval);
            }
            wait
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        Ok(())
    }

    /// The provider asked to wait `asked`: every call of this client waits with it.
    pub fn hold(&self, asked: Duration) {
        let until = Instant::now() + asked;
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.held_until = Some(state.held_until.map_or(until, |held| held.max(until)));
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

/// `POST` `body` as JSON to `url` with `headers`, each attempt in its turn of `pace`, retried
/// as the module says.
#[allow(clippy::too_many_arguments)] // one call's whole description, passed through from two clients
pub(crate) async fn post(
    http: &reqwest::Client,
    provider: &Provider,
    model: &str,
    limits: &Limits,
    pace: &Pace,
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
    let attempt = || async {
        pace.turn().await.map_err(Failed::new)?;
        once(http, provider, model, url, headers.clone(), body).await.inspect_err(|f| {
            if let Some(asked) = f.retry_after.filter(|asked| *asked <= limits.max_retry_after) {
                pace.hold(asked);
            }
        })
    };
    attempt
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

#[cfg(test)]
mod pace_tests {
    use super::*;

    fn paced(rpm: Option<u32>) -> Pace {
        Pace::new(&Limits { rpm: rpm.and_then(NonZeroU32::new), ..Limits::default() })
    }

    #[tokio::test(start_paused = true)]
    async fn calls_take_turns_one_interval_apart_and_wait_out_a_hold() {
        let pace = std::sync::Arc::new(paced(Some(120))); // one call every 500 ms
        let began = Instant::now();
        let turns: Vec<_> = (0..4)
            .map(|_| {
                let pace = pace.clone();
                tokio::spawn(async move { pace.turn().await.map(|()| began.elapsed()) })
            })
            .collect();
        let mut at = Vec::new();
        for turn in turns {
            at.push(turn.await.expect("task").expect("a turn"));
        }
        at.sort();
        assert_eq!(at, [0, 500, 1000, 1500].map(Duration::from_millis));

        // Without a pace, only a hold makes a call wait.
        let free = paced(None);
        let began = Instant::now();
        free.turn().await.expect("turn");
        assert_eq!(began.elapsed(), Duration::ZERO);
        free.hold(Duration::from_secs(2));
        free.turn().await.expect("turn");
        assert_eq!(began.elapsed(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn a_turn_further_away_than_the_longest_wait_is_throttled_at_once_and_takes_no_slot() {
        let slow = paced(Some(1)); // one call a minute
        slow.turn().await.expect("the first call goes at once");
        let began = Instant::now();
        assert_eq!(slow.turn().await, Err(model::Error::Throttled));
        assert_eq!(began.elapsed(), Duration::ZERO, "refused without waiting");
        let held = paced(None);
        held.hold(Duration::from_secs(31));
        assert_eq!(held.turn().await, Err(model::Error::Throttled));
    }
}
