//! The operator API's typed client: what `harmonia --cloud` and the end-to-end tests use to act
//! on a deployment as an operator, never by writing its store.
//!
//! - [`api`] holds the wire types, which the server's handlers return too.
//! - [`Client`] sends one typed request per route with the operator's [`Auth`] (an operator
//!   credential or a Google ID token, both as `Authorization: Bearer`), reads the server's
//!   `{"error":{code,category,message,retryable}}` back into a typed [`Error`], and retries
//!   what is safe to retry: every request refused with 429 (after its `Retry-After`) or never
//!   delivered, a proxy's 502 or 503 (the request never reached the API), and a read or an
//!   idempotent write on a 5xx the server marks retryable or a proxy's 504. A decision is
//!   never sent twice after the server may have recorded it.
//! - [`login`] keeps an operator's API address and credential in a file only they can read
//!   (`harmonia login`), and [`Client::from_env`] finds them (`HARMONIA_API_URL`,
//!   `HARMONIA_CREDENTIAL`, else that file).

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use harmonia_contracts::domain::ApprovalSubject;
use harmonia_contracts::error::ErrorBody;
use harmonia_contracts::ids::{JobId, OperatorId};
use harmonia_contracts::{Code, Error};
use reqwest::{Method, StatusCode, header};
use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub mod api;
mod follow;
pub mod login;

pub use follow::Followed;

use api::*;

/// The largest answer read (a job's detail is the largest, a few hundred kilobytes at most).
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// How many times a request is sent at most.
const MAX_ATTEMPTS: usize = 4;

/// The longest `Retry-After` honoured: a longer one ends the request as it was answered.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// Who the client acts as. Both are sent as `Authorization: Bearer`; the server tells them
/// apart and maps either to one operator of one workspace.
#[derive(Clone)]
pub enum Auth {
    /// An operator credential (`hop_<workspace>/<operator>/<secret>`), issued by
    /// `harmonia operator add` or `POST /v1/operators`.
    Credential(SecretString),
    /// A Google-signed ID token for the operator function's audience, whose principal the
    /// deployment maps to an operator.
    IdToken(SecretString),
}

impl Auth {
    /// `text` as what it is: an operator credential by its `hop_` prefix, else an ID token.
    pub fn from_text(text: &str) -> Self {
        let text = text.trim();
        if text.starts_with("hop_") {
            Auth::Credential(SecretString::from(text.to_owned()))
        } else {
            Auth::IdToken(SecretString::from(text.to_owned()))
        }
    }

    fn bearer(&self) -> &str {
        match self {
            Auth::Credential(s) | Auth::IdToken(s) => s.expose_secret(),
        }
    }
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Auth::Credential(_) => "Auth::Credential(..)",
            Auth::IdToken(_) => "Auth::IdToken(..)",
        })
    }
}

/// A request's body.
enum Body<'a> {
    None,
    Json(Vec<u8>),
    Raw { content_type: &'a str, bytes: &'a [u8] },
}

/// One attempt's failure, and whether another attempt may help.
struct Failed {
    error: Error,
    retry: bool,
    retry_after: Option<Duration>,
}

/// The operator API's client, for one deployment and one operator.
#[derive(Clone, Debug)]
pub struct Client {
    base: String,
    auth: Auth,
    /// An invoker's ID token for Cloud Run's IAM check, sent in `X-Serverless-Authorization`
    /// (Cloud Run checks it and passes `Authorization` on to the function).
    invoker: Option<SecretString>,
    http: reqwest::Client,
    backoff: Duration,
}

impl Client {
    /// A client of the operator API at `base` (`https://…`, or `http://` for a local one),
    /// acting with `auth`. An address that is not an http(s) URL is `invalid_config`.
    pub fn new(base: &str, auth: Auth) -> Result<Self, Error> {
        let parsed = url::Url::parse(base.trim()).ok().filter(|u| matches!(u.scheme(), "http" | "https"));
        let Some(parsed) = parsed.filter(|u| u.host_str().is_some()) else {
            return Err(Error::new(
                Code::InvalidConfig,
                "HARMONIA_API_URL must be the operator API's http(s) address, for example https://operator-abc-uc.a.run.app",
            ));
        };
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(120))
            .user_agent(concat!("harmonia-client/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::new(Code::Internal, "the HTTP client could not be built").with_cause(e))?;
        let base = parsed.as_str().trim_end_matches('/').to_owned();
        Ok(Self { base, auth, invoker: None, http, backoff: Duration::from_millis(200) })
    }

    /// The client `harmonia --cloud` uses: the address in `HARMONIA_API_URL` (else the one
    /// `harmonia login` stored) and the credential in `HARMONIA_CREDENTIAL` (else the stored
    /// one, when it was stored for that address), with `HARMONIA_ID_TOKEN` as the invoker's ID
    /// token when the service checks invokers. Without a credential it is `unauthenticated`,
    /// before anything is sent.
    pub fn from_env() -> Result<Self, Error> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let (url, credential) = (env("HARMONIA_API_URL"), env("HARMONIA_CREDENTIAL"));
        // The stored login is read only when the environment does not name both.
        let stored = if url.is_some() && credential.is_some() { None } else { login::load()? };
        let url = match (url, &stored) {
            (Some(url), _) => url,
            (None, Some(stored)) => stored.url.clone(),
            (None, None) => {
                return Err(Error::new(
                    Code::InvalidConfig,
                    "Set HARMONIA_API_URL to the operator API's address, or run `harmonia login URL`.",
                ));
            }
        };
        let auth = match credential {
            Some(text) => Auth::from_text(&text),
            None => match stored.filter(|s| same_address(&s.url, &url)) {
                Some(stored) => Auth::from_text(stored.credential.expose_secret()),
                None => {
                    return Err(Error::new(
                        Code::Unauthenticated,
                        "No operator credential for this deployment: set HARMONIA_CREDENTIAL, or run `harmonia login`. Nothing was sent.",
                    ));
                }
            },
        };
        let client = Self::new(&url, auth)?;
        Ok(match env("HARMONIA_ID_TOKEN") {
            Some(token) => client.with_invoker(SecretString::from(token.trim().to_owned())),
            None => client,
        })
    }

    /// The same client with `token` as the invoker's ID token for a Cloud Run service that
    /// checks its invokers (`HARMONIA_ID_TOKEN` in [`Client::from_env`]).
    pub fn with_invoker(mut self, token: SecretString) -> Self {
        self.invoker = Some(token);
        self
    }

    /// The same client at another function's address (the ingest function's, to submit a
    /// source where the operator API does not take them), with the same operator.
    pub fn at(&self, base: &str) -> Result<Self, Error> {
        let mut other = Self::new(base, self.auth.clone())?;
        other.invoker = self.invoker.clone();
        other.backoff = self.backoff;
        Ok(other)
    }

    /// The address requests go to.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The same client with `backoff` as the first wait between attempts (tests shorten it).
    pub fn with_backoff(mut self, backoff: Duration) -> Self {
        self.backoff = backoff;
        self
    }

    /// `POST /v1/sources` (to the operator API or the ingest function): a new job from
    /// `source`. `key` is its `Idempotency-Key`: with one, a request sent again (after a lost
    /// answer) answers the same job, so the client may send it again itself.
    pub async fn submit(&self, source: &NewSource, key: Option<&str>) -> Result<Submitted, Error> {
        self.send(Method::POST, "/v1/sources", json_body(source)?, key).await
    }

    /// `GET /v1/me`: who the credential is.
    pub async fn me(&self) -> Result<Me, Error> {
        self.get("/v1/me").await
    }

    /// `GET /v1/jobs`.
    pub async fn jobs(&self) -> Result<JobList, Error> {
        self.get("/v1/jobs").await
    }

    /// `GET /v1/jobs/{job}`.
    pub async fn job(&self, job: &JobId) -> Result<JobReply, Error> {
        self.get(&format!("/v1/jobs/{job}")).await
    }

    /// `GET /v1/jobs/{job}/events`, polled: the job's progress so far, ending with its status.
    pub async fn events(&self, job: &JobId) -> Result<JobEvents, Error> {
        self.get(&format!("/v1/jobs/{job}/events")).await
    }

    /// `GET /v1/jobs/{job}/detail`.
    pub async fn detail(&self, job: &JobId) -> Result<JobDetail, Error> {
        self.get(&format!("/v1/jobs/{job}/detail")).await
    }

    /// Every activity record of `job`, page after page.
    pub async fn activity(&self, job: &JobId) -> Result<Vec<harmonia_contracts::domain::ActivityRecord>, Error> {
        let mut records = Vec::new();
        let mut page = Some(0);
        while let Some(p) = page {
            let answer: ActivityPage = self.get(&format!("/v1/activity?job={job}&limit=200&page={p}")).await?;
            records.extend(answer.activity);
            page = answer.next_page;
        }
        Ok(records)
    }

    /// `POST /v1/jobs/{job}/decisions`: approve, reject or request changes to `subject` at
    /// exactly `version`.
    pub async fn decide(&self, job: &JobId, body: &DecisionBody) -> Result<DecisionReply, Error> {
        self.post(&format!("/v1/jobs/{job}/decisions"), body).await
    }

    /// Approve `subject` of `job` at exactly `version`.
    pub async fn approve(&self, job: &JobId, subject: ApprovalSubject, version: &str) -> Result<DecisionReply, Error> {
        let body = DecisionBody {
            subject,
            decision: DecisionKind::Approve,
            version: version.to_owned(),
            reason: None,
            feedback: None,
        };
        self.decide(job, &body).await
    }

    /// `POST /v1/jobs/{job}/edits`.
    pub async fn edit(&self, job: &JobId, body: &EditBody) -> Result<EditReply, Error> {
        self.post(&format!("/v1/jobs/{job}/edits"), body).await
    }

    /// `POST /v1/jobs/{job}/retry`.
    pub async fn retry(&self, job: &JobId) -> Result<RetryReply, Error> {
        self.call(Method::POST, &format!("/v1/jobs/{job}/retry"), Body::None).await
    }

    /// `GET /v1/schedule`.
    pub async fn schedule(&self) -> Result<ScheduleList, Error> {
        self.get("/v1/schedule").await
    }

    /// `POST /v1/jobs/{job}/reschedule`.
    pub async fn reschedule(&self, job: &JobId, body: &RescheduleBody) -> Result<ScheduleReply, Error> {
        self.post(&format!("/v1/jobs/{job}/reschedule"), body).await
    }

    /// `POST /v1/jobs/{job}/publish-now`.
    pub async fn publish_now(&self, job: &JobId) -> Result<ScheduleReply, Error> {
        self.call(Method::POST, &format!("/v1/jobs/{job}/publish-now"), Body::None).await
    }

    /// `POST /v1/jobs/{job}/cancel`.
    pub async fn cancel(&self, job: &JobId) -> Result<ScheduleReply, Error> {
        self.call(Method::POST, &format!("/v1/jobs/{job}/cancel"), Body::None).await
    }

    /// `GET /v1/workspace`.
    pub async fn workspace(&self) -> Result<WorkspaceReply, Error> {
        self.get("/v1/workspace").await
    }

    /// `PUT /v1/workspace` with the configuration file's TOML text.
    pub async fn put_workspace(&self, toml: &str) -> Result<WorkspaceStored, Error> {
        let body = Body::Raw { content_type: "application/toml", bytes: toml.as_bytes() };
        self.call(Method::PUT, "/v1/workspace", body).await
    }

    /// `GET /v1/operators` (admins only).
    pub async fn operators(&self) -> Result<OperatorList, Error> {
        self.get("/v1/operators").await
    }

    /// `POST /v1/operators` (admins only): the new operator's credential, shown this once.
    pub async fn add_operator(&self, body: &NewOperator) -> Result<NewCredential, Error> {
        self.post("/v1/operators", body).await
    }

    /// `DELETE /v1/operators/{name}` (admins only).
    pub async fn revoke_operator(&self, name: &OperatorId) -> Result<Revoked, Error> {
        self.call(Method::DELETE, &format!("/v1/operators/{name}"), Body::None).await
    }

    /// `POST /v1/imports/…` with the file's bytes as `content_type`.
    pub async fn import(&self, route: ImportRoute, content_type: &str, bytes: &[u8]) -> Result<Imported, Error> {
        self.call(Method::POST, route.path(), Body::Raw { content_type, bytes }).await
    }

    /// `GET /v1/jobs/{job}/metrics`: the engagement snapshots of `job`'s post.
    pub async fn metrics(&self, job: &JobId) -> Result<JobMetrics, Error> {
        self.get(&format!("/v1/jobs/{job}/metrics")).await
    }

    /// `GET /v1/workspace/memory`: the workspace's remembered facts.
    pub async fn memory(&self) -> Result<MemoryList, Error> {
        self.get("/v1/workspace/memory").await
    }

    /// `GET /v1/calendar`: the default range (a week back, five weeks ahead).
    pub async fn calendar(&self) -> Result<CalendarList, Error> {
        self.get("/v1/calendar").await
    }

    /// `GET /v1/calendar?from=&to=`: the posts going out in `[from, to)`.
    pub async fn calendar_between(
        &self,
        from: harmonia_contracts::domain::Timestamp,
        to: harmonia_contracts::domain::Timestamp,
    ) -> Result<CalendarList, Error> {
        let at = |t: harmonia_contracts::domain::Timestamp| t.format("%Y-%m-%dT%H:%M:%SZ").to_string();
        self.get(&format!("/v1/calendar?from={}&to={}", at(from), at(to))).await
    }

    async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, Error> {
        self.call(Method::GET, path, Body::None).await
    }

    async fn post<T: DeserializeOwned, B: Serialize>(&self, path: &str, body: &B) -> Result<T, Error> {
        self.call(Method::POST, path, json_body(body)?).await
    }

    async fn call<T: DeserializeOwned>(&self, method: Method, path: &str, body: Body<'_>) -> Result<T, Error> {
        self.send(method, path, body, None).await
    }

    /// Send `method path` with `body` (and `key` as its `Idempotency-Key`) until it is answered
    /// or may not be sent again.
    async fn send<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Body<'_>,
        key: Option<&str>,
    ) -> Result<T, Error> {
        let policy = ExponentialBuilder::new()
            .with_min_delay(self.backoff)
            .with_max_delay(Duration::from_secs(5))
            .with_jitter()
            .with_max_times(MAX_ATTEMPTS - 1);
        let attempt = || self.once(&method, path, &body, key);
        attempt
            .retry(policy)
            .when(|f: &Failed| f.retry)
            .adjust(|f: &Failed, backoff| match f.retry_after {
                Some(asked) if asked > MAX_RETRY_AFTER => None,
                Some(asked) => backoff.map(|wait| wait.max(asked)),
                None => backoff,
            })
            .notify(|f: &Failed, wait| {
                tracing::info!(code = %f.error.code, wait_ms = wait.as_millis() as u64, "operator API request retried");
            })
            .await
            .map_err(|f| f.error)
    }

    async fn once<T: DeserializeOwned>(
        &self,
        method: &Method,
        path: &str,
        body: &Body<'_>,
        key: Option<&str>,
    ) -> Result<T, Failed> {
        // A read, a write whose repetition stores nothing new (the same configuration), or one
        // whose key makes a repetition answer the first one's result.
        let idempotent = matches!(*method, Method::GET | Method::PUT) || key.is_some();
        let mut request = self
            .http
            .request(method.clone(), format!("{}{path}", self.base))
            .bearer_auth(self.auth.bearer())
            .header(header::ACCEPT, "application/json");
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        if let Some(invoker) = &self.invoker {
            request = request.header("x-serverless-authorization", format!("Bearer {}", invoker.expose_secret()));
        }
        request = match body {
            Body::None => request,
            Body::Json(bytes) => request.header(header::CONTENT_TYPE, "application/json").body(bytes.clone()),
            Body::Raw { content_type, bytes } => {
                request.header(header::CONTENT_TYPE, *content_type).body(bytes.to_vec())
            }
        };
        let mut response = request.send().await.map_err(|e| Failed {
            error: Error::new(Code::ApiUnavailable, format!("The operator API at {} could not be reached.", self.base)),
            // A connection never made delivered nothing; anything later may have been received.
            retry: e.is_connect() || idempotent,
            retry_after: None,
        })?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let bytes = harmonia_contracts::body::read(&mut response, MAX_ANSWER_BYTES).await.map_err(|_| Failed {
            error: Error::new(Code::ApiUnavailable, "The operator API's answer could not be read whole."),
            retry: idempotent,
            retry_after: None,
        })?;
        if status.is_success() {
            return serde_json::from_slice(&bytes).map_err(|_| Failed {
                error: Error::new(
                    Code::Internal,
                    format!(
                        "The operator API's answer to {method} {} is not what this client reads: is it the deployment's version?",
                        route_of(path)
                    ),
                ),
                retry: false,
                retry_after: None,
            });
        }
        Err(refusal(status, &bytes, idempotent, retry_after))
    }
}

/// The error of a non-2xx answer, and whether to send the request again.
fn refusal(status: StatusCode, bytes: &[u8], idempotent: bool, retry_after: Option<Duration>) -> Failed {
    #[derive(serde::Deserialize)]
    struct Wire {
        error: ErrorBody,
    }
    let throttled = status == StatusCode::TOO_MANY_REQUESTS;
    match serde_json::from_slice::<Wire>(bytes) {
        Ok(Wire { error }) => Failed {
            retry: throttled || (idempotent && error.retryable && status.is_server_error()),
            error: Error::new(error.code, error.message),
            retry_after,
        },
        // Not the API's own answer: a proxy, a load balancer or a server starting up.
        Err(_) => Failed {
            error: Error::new(
                Code::ApiUnavailable,
                format!("The operator API answered HTTP {} without its error body.", status.as_u16()),
            ),
            // A 502 or 503 from in front of the API never reached it; a 504 may have.
            retry: throttled
                || matches!(status, StatusCode::BAD_GATEWAY | StatusCode::SERVICE_UNAVAILABLE)
                || (idempotent && status == StatusCode::GATEWAY_TIMEOUT),
            retry_after,
        },
    }
}

/// `body` as a JSON request body.
fn json_body<'a>(body: &impl Serialize) -> Result<Body<'a>, Error> {
    serde_json::to_vec(body)
        .map(Body::Json)
        .map_err(|e| Error::new(Code::Internal, "the request body could not be written as JSON").with_cause(e))
}

/// `path` without its query, to name a route in a message.
fn route_of(path: &str) -> &str {
    path.split('?').next().unwrap_or(path)
}

/// Whether two API addresses are the same deployment (a trailing slash aside).
fn same_address(a: &str, b: &str) -> bool {
    a.trim().trim_end_matches('/') == b.trim().trim_end_matches('/')
}

#[cfg(test)]
mod tests;
