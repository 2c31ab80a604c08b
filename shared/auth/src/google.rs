//! Google-signed ID tokens, as Cloud Run callers present them when Harmonia is deployed.
//!
//! A token is accepted only if it is an RS256 JWT signed by a key of the published key set,
//! its issuer is Google, its audience is the service's, it has not expired, and its verified
//! email is mapped to an operator and a workspace (a [`Principal`]). Such a caller has the
//! role [`Role::Operator`]: admin actions need an admin operator credential from the store. Signature and claim checks are `jsonwebtoken`'s;
//! the key set is fetched from a URL (Google's certificates by default) and cached by
//! [`KeySet`].

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use harmonia_contracts::body::{self, ReadError, TooLarge};
use harmonia_contracts::ids::{OperatorId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, errors::ErrorKind};
use serde::{Deserialize, Serialize};
use tokio::sync::{Mutex, RwLock};

use crate::{Identity, Role};

/// Who a verified email is: an entry of the principals file
/// (`{"ana@example.com": {"operator": "ana", "workspace": "brand"}}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Principal {
    /// The operator the email acts as.
    pub operator: OperatorId,
    /// The only workspace it can see.
    pub workspace: WorkspaceId,
}

/// Clock skew tolerated on `exp`, seconds.
const LEEWAY_SECS: u64 = 60;
const ISSUERS: [&str; 2] = ["https://accounts.google.com", "accounts.google.com"];
/// Least time between two fetches of the key set, whatever the tokens ask for: a flood of
/// tokens with unknown key ids cannot turn into a flood of requests to the key endpoint.
const MIN_REFRESH: Duration = Duration::from_secs(30);
/// Longest time a fetched key set is trusted, whatever its `Cache-Control` says.
const MAX_AGE_CAP: Duration = Duration::from_secs(24 * 3600);
/// How long the key endpoint may take to answer.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

fn refused() -> Error {
    Error::from_code(Code::Unauthenticated)
}

fn unavailable() -> Error {
    Error::new(Code::DependencyUnavailable, "the ID-token signing keys could not be fetched")
}

/// The keys of the last fetch, when they stop being fresh, and when the endpoint was last asked.
#[derive(Default)]
struct Cached {
    keys: HashMap<String, DecodingKey>,
    fresh_until: Option<Instant>,
    fetched_at: Option<Instant>,
    /// Whether the last fetch failed: then nothing is served until a fetch succeeds.
    failed: bool,
}

impl Cached {
    fn is_fresh(&self, now: Instant) -> bool {
        self.fresh_until.is_some_and(|until| now < until)
    }

    fn may_fetch(&self, now: Instant, min_refresh: Duration) -> bool {
        self.fetched_at.is_none_or(|at| now.duration_since(at) >= min_refresh)
    }
}

/// A JWKS fetched from a URL and cached: refreshed when its `Cache-Control: max-age` runs out
/// and when a token names a key id it does not hold (a rotation), but never more often than
/// once per [`KeySet::with_min_refresh`] interval (30 s by default).
pub struct KeySet {
    url: String,
    http: reqwest::Client,
    min_refresh: Duration,
    cached: RwLock<Cached>,
    /// Held while fetching, so concurrent requests wait for one fetch instead of each making one.
    fetching: Mutex<()>,
    /// How many times the endpoint was asked (for tests and metrics).
    fetches: std::sync::atomic::AtomicU64,
}

impl fmt::Debug for KeySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeySet").field("url", &self.url).field("min_refresh", &self.min_refresh).finish_non_exhaustive()
    }
}

/// `max-age` of a `Cache-Control` value, capped; `None` when absent or when caching is refused.
fn max_age(cache_control: Option<&str>) -> Option<Duration> {
    let directives: Vec<&str> = cache_control?.split(',').map(str::trim).collect();
    if directives.iter().any(|d| d.eq_ignore_ascii_case("no-store") || d.eq_ignore_ascii_case("no-cache")) {
        return None;
    }
    directives
        .iter()
        .find_map(|d| d.strip_prefix("max-age=").and_then(|secs| secs.trim_matches('"').parse::<u64>().ok()))
        .map(|secs| Duration::from_secs(secs).min(MAX_AGE_CAP))
}

impl KeySet {
    /// A key set served at `url` (http or https); nothing is fetched until a token needs a key.
    pub fn new(url: &str) -> Result<Self, Error> {
        let invalid = || Error::new(Code::InvalidConfig, "the key set URL must be an http or https URL");
        let parsed: reqwest::Url = url.parse().map_err(|_| invalid())?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(invalid());
        }
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .build()
            .map_err(|e| Error::new(Code::InvalidConfig, "the key set HTTP client could not be built").with_cause(e))?;
        Ok(Self {
            url: url.to_owned(),
            http,
            min_refresh: MIN_REFRESH,
            cached: RwLock::new(Cached::default()),
            fetching: Mutex::new(()),
            fetches: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The same key set with another least interval between fetches.
    pub fn with_min_refresh(mut self, min_refresh: Duration) -> Self {
        self.min_refresh = min_refresh;
        self
    }

    /// How many times the key endpoint has been asked.
    pub fn fetches(&self) -> u64 {
        self.fetches.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The key `kid`: from the cache while it is fresh, else after a (rate-limited) refresh.
    /// An unknown key is `unauthenticated`; an unreachable endpoint `dependency_unavailable`.
    pub async fn key(&self, kid: &str) -> Result<DecodingKey, Error> {
        {
            let cached = self.cached.read().await;
            if cached.is_fresh(Instant::now())
                && let Some(key) = cached.keys.get(kid)
            {
                return Ok(key.clone());
            }
        }
        let _fetching = self.fetching.lock().await;
        // Another request may have refreshed while this one waited for the lock.
        let now = Instant::now();
        {
            let cached = self.cached.read().await;
            if cached.is_fresh(now)
                && let Some(key) = cached.keys.get(kid)
            {
                return Ok(key.clone());
            }
            if !cached.may_fetch(now, self.min_refresh) {
                return match (cached.failed, cached.keys.get(kid)) {
                    (true, _) => Err(unavailable()),
                    // Past max-age, but fetched within the interval: still the newest there is.
                    (false, Some(key)) => Ok(key.clone()),
                    (false, None) => Err(refused()),
                };
            }
        }
        let fetched = self.fetch().await;
        let mut cached = self.cached.write().await;
        cached.fetched_at = Some(now);
        cached.failed = fetched.is_err();
        let (keys, ttl) = fetched?;
        cached.keys = keys;
        cached.fresh_until = Some(now + ttl.unwrap_or(self.min_refresh));
        cached.keys.get(kid).cloned().ok_or_else(refused)
    }

    async fn fetch(&self) -> Result<(HashMap<String, DecodingKey>, Option<Duration>), Error> {
        self.fetches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut response = self.http.get(&self.url).send().await.map_err(|e| {
            tracing::warn!(event = "jwks_fetch_failed", timeout = e.is_timeout(), "key set endpoint unreachable");
            unavailable()
        })?;
        if !response.status().is_success() {
            tracing::warn!(event = "jwks_fetch_failed", status = response.status().as_u16(), "key set fetch refused");
            return Err(unavailable());
        }
        let ttl = max_age(response.headers().get(reqwest::header::CACHE_CONTROL).and_then(|v| v.to_str().ok()));
        let too_long = |e: TooLarge| {
            tracing::warn!(event = "jwks_invalid", limit = e.limit, "the key set is longer than its limit");
            unavailable()
        };
        let body = body::read(&mut response, MAX_KEY_SET_BYTES).await.map_err(|e| match e {
            ReadError::TooLarge(e) => too_long(e),
            ReadError::Broken => {
                tracing::warn!(event = "jwks_fetch_failed", "the key set could not be read");
                unavailable()
            }
        })?;
        let keys = decode_key_set(&body).ok_or_else(|| {
            tracing::warn!(event = "jwks_invalid", "the key set is not a JWKS document");
            unavailable()
        })?;
        tracing::debug!(event = "jwks_fetched", keys = keys.len(), "fetched the ID-token key set");
        Ok((keys, ttl))
    }
}

/// The longest key set read (64 KiB; Google's is about 2 KiB): a longer body is refused
/// before it is buffered past this, like a body that is not a key set.
pub const MAX_KEY_SET_BYTES: usize = 64 << 10;

/// The RS256 signing keys of a JWKS document, by key id; `None` when the body is not a JWKS
/// document. Keys without an id, and keys of other families, are skipped: only an RSA key
/// with an id can verify a Google ID token.
pub fn decode_key_set(body: &[u8]) -> Option<HashMap<String, DecodingKey>> {
    let set: JwkSet = serde_json::from_slice(body).ok()?;
    let mut keys = HashMap::new();
    for jwk in &set.keys {
        let (Some(kid), Ok(key)) = (&jwk.common.key_id, DecodingKey::from_jwk(jwk)) else { continue };
        if matches!(key.family(), jsonwebtoken::AlgorithmFamily::Rsa) {
            keys.insert(kid.clone(), key);
        }
    }
    Some(keys)
}

/// The claims Harmonia reads (the library checks `iss`, `aud` and `exp`).
#[derive(Deserialize)]
struct Claims {
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    email_verified: Option<bool>,
}

/// Verifies Google ID tokens and maps their emails to identities.
pub struct GoogleIdTokens {
    keys: Arc<KeySet>,
    audience: String,
    principals: HashMap<String, Principal>,
}

impl fmt::Debug for GoogleIdTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GoogleIdTokens")
            .field("keys", &self.keys)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

impl GoogleIdTokens {
    /// Tokens signed by `keys` for `audience`, with emails (any case) mapped to principals.
    pub fn new(keys: KeySet, audience: &str, principals: HashMap<String, Principal>) -> Self {
        let principals = principals.into_iter().map(|(email, who)| (email.to_ascii_lowercase(), who)).collect();
        Self { keys: Arc::new(keys), audience: audience.to_owned(), principals }
    }

    /// The key set tokens are checked against.
    pub fn keys(&self) -> &KeySet {
        &self.keys
    }

    /// The id of the key a token claims to be signed with: what [`GoogleIdTokens::verify`]
    /// reads of an untrusted token before any signature check. A token whose header is not
    /// base64url JSON, is not RS256 or names no key is `unauthenticated`.
    pub fn key_id(token: &str) -> Result<String, Error> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| refused())?;
        if header.alg != Algorithm::RS256 {
            return Err(refused());
        }
        header.kid.ok_or_else(refused)
    }

    /// Whether `token` has the shape of a JWT.
    pub fn looks_like(token: &str) -> bool {
        token.split('.').count() == 3
    }

    /// The identity of a valid token, with the role [`Role::Operator`]. A refused token is
    /// `unauthenticated`, or
    /// `token_expired`, `token_wrong_audience`, `token_wrong_issuer`, `token_email_unverified`
    /// for a correctly signed token that fails that check; a valid token of an unmapped email
    /// is `authorization`.
    pub async fn verify(&self, token: &str) -> Result<Identity, Error> {
        let kid = Self::key_id(token)?;
        let key = self.keys.key(&kid).await?;
        let mut validation = Validation::new(Algorithm::RS256);
        validation.leeway = LEEWAY_SECS;
        validation.set_audience(&[&self.audience]);
        validation.set_issuer(&ISSUERS);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let claims = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|e| match e.kind() {
                ErrorKind::ExpiredSignature => Error::from_code(Code::TokenExpired),
                ErrorKind::InvalidAudience => Error::from_code(Code::TokenWrongAudience),
                ErrorKind::InvalidIssuer => Error::from_code(Code::TokenWrongIssuer),
                _ => refused(),
            })?
            .claims;
        if claims.email_verified != Some(true) {
            return Err(Error::from_code(Code::TokenEmailUnverified));
        }
        let email = claims.email.ok_or_else(refused)?.to_ascii_lowercase();
        let principal = self.principals.get(&email).ok_or_else(|| Error::from_code(Code::Authorization))?;
        Ok(Identity {
            operator: principal.operator.clone(),
            workspace: principal.workspace.clone(),
            role: Role::Operator,
        })
    }
}

#[cfg(test)]
mod tests;
