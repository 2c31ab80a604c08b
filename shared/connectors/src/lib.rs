//! Publishing connectors. The publish stage calls a connector once per approved draft, with an
//! idempotency key; verification reads back by the same key.
//!
//! - [`Sandbox`]: a local platform simulation kept in the store (so a restarted process sees
//!   the same "platform"); it can be told to fail, to time out (the post is made but the answer
//!   is lost) or to drop the request (nothing is posted, no answer). A repeated key returns the
//!   existing post, as a real idempotent API would.
//! - [`bluesky::Bluesky`]: the AT Protocol, a record per post under a key derived from the
//!   idempotency key (see its module).
//! - [`mastodon::Mastodon`]: `POST /api/v1/statuses` with an `Idempotency-Key`, read back by
//!   status id.
//! - [`Webhook`]: POSTs the post as JSON, signed to the Standard Webhooks spec
//!   (`webhook-id`: the idempotency key, the same on every attempt; `webhook-timestamp`;
//!   `webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`), with the key
//!   as `Idempotency-Key` too; read-back is a GET of `<url>/<idempotency key>` (the key one
//!   percent-encoded path segment), answered with a [`BridgePost`]. A receiver
//!   checks a delivery with [`SigningKey::verify`], which also enforces the replay window. It
//!   refuses a mock post before any call ([`admit`]).
//! - [`linkedin::Linkedin`] and [`x::X`]: LinkedIn's Posts API and X's API v2, with OAuth 2.0
//!   tokens ([`oauth`]); neither takes an idempotency key, so a lost answer is resolved by
//!   listing the account's posts (see their modules).
//!
//! A post of a thread after its first replies to the post before it ([`Outgoing::reply`]):
//! Bluesky's `reply.root` and `reply.parent` refs, Mastodon's `in_reply_to_id`, X's
//! `reply.in_reply_to_tweet_id`, a webhook's `reply` (its bridge's read-back names the parent
//! as `replying_to`); a LinkedIn post has no thread and is refused. Reading back
//! says what each post replies to ([`Found::Post`]).

pub mod accounts;
pub mod bluesky;
pub mod engagement;
pub mod linkedin;
pub mod mastodon;
pub mod oauth;
pub mod reach;
pub mod trends;
pub mod x;

#[cfg(test)]
mod testing;

use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use harmonia_contracts::body;
use harmonia_contracts::domain::{ConnectorKind, Platform, ReceiptOutcome, RecordRef, Timestamp};
use harmonia_contracts::ids::{DocId, PostId, WorkspaceId};
use harmonia_contracts::tool::Provenance;
use harmonia_contracts::{Code, Error};
use harmonia_store::{Collection, Store, create_if_absent, encode};
use hmac::{KeyInit, Mac};
use serde::{Deserialize, Serialize};

/// Where the sandbox keeps its simulated platform posts.
pub const SANDBOX_POSTS: Collection = Collection::new("sandbox_posts");

/// A post to publish.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outgoing {
    /// Key that makes a repeated call a no-op.
    pub idempotency_key: String,
    /// Platform.
    pub platform: Platform,
    /// Text.
    pub body: String,
    /// `live` only when the draft and every piece of evidence it rests on are live; a mock
    /// post goes to the sandbox only ([`admit`]).
    pub provenance: Provenance,
    /// For a post of a thread after its first: the posts it replies to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<ReplyTo>,
}

/// Where a post of a thread goes: under the thread's first post (its root) and the post before
/// it (its parent), as the platform named them when they were made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplyTo {
    /// The thread's first post.
    pub root: Posted,
    /// The post before this one.
    pub parent: Posted,
}

/// Whether `post` may go out through a connector of `kind`: mock content (written by the
/// offline model, or resting on its evidence) never reaches a connector other than the
/// sandbox, whatever the workspace's mode. [`Connector::send`] asks this before any call, so
/// the refusal holds even if policy was bypassed.
pub fn admit(kind: ConnectorKind, post: &Outgoing) -> Result<(), Code> {
    match (kind, post.provenance) {
        // An operator's own text is not mock: only what rests on mock content is held back.
        (ConnectorKind::Sandbox, _) | (_, Provenance::Live | Provenance::Operator) => Ok(()),
        (_, Provenance::Mock) => Err(Code::MockToLiveConnector),
    }
}

/// What the platform gave back for a post it holds (in a webhook's body, as the post a reply
/// goes under: `null` where the platform gave nothing).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Posted {
    /// The platform's post id.
    pub post: PostId,
    /// Its public URL, when the platform has one.
    pub url: Option<String>,
    /// On the AT Protocol: the record's `at://` URI and CID.
    pub record: Option<RecordRef>,
}

impl Posted {
    /// A post known by its id only.
    pub fn id(post: PostId) -> Self {
        Self { post, url: None, record: None }
    }

    /// The post a receipt says was made; `None` for any other outcome.
    pub fn applied(outcome: &ReceiptOutcome) -> Option<Self> {
        match outcome {
            ReceiptOutcome::Applied { post, url, record } => {
                Some(Self { post: post.clone(), url: url.clone(), record: record.clone() })
            }
            _ => None,
        }
    }
}

/// What the platform answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sent {
    /// Accepted: the post as the platform names it.
    Applied(Posted),
    /// No usable answer (timeout, lost response): only read-back can tell.
    Unknown,
    /// Refused by the platform: nothing was posted.
    Refused(Refusal),
    /// Refused before any call, or for the channel's credentials, with the reason's code (see
    /// [`admit`]).
    Rejected(Code),
}

/// Why a platform refused a post. Each is an answer the platform gave before it made anything:
/// nothing was posted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Refused, for no reason the connector can tell (`connector_failed`).
    Failed,
    /// Refused as invalid: HTTP 400 or 422 (`connector_refused`).
    Invalid,
    /// Refused as a duplicate of a post the account already holds (`connector_duplicate`).
    Duplicate,
    /// Rate-limited (HTTP 429), until the time the platform gave, when it gave one
    /// (`connector_throttled`).
    Throttled(Option<Timestamp>),
}

impl Refusal {
    /// The stable code a receipt records.
    pub fn code(self) -> Code {
        match self {
            Refusal::Failed => Code::ConnectorFailed,
            Refusal::Invalid => Code::ConnectorRefused,
            Refusal::Duplicate => Code::ConnectorDuplicate,
            Refusal::Throttled(_) => Code::ConnectorThrottled,
        }
    }

    /// When the platform allows posting again, when it said.
    pub fn retry_after(self) -> Option<Timestamp> {
        match self {
            Refusal::Throttled(until) => until,
            _ => None,
        }
    }
}

/// What a read-back looks for: the post a publication made under its idempotency key.
#[derive(Clone, Copy, Debug)]
pub struct Lookup<'a> {
    /// The workspace.
    pub workspace: &'a WorkspaceId,
    /// The publication's idempotency key.
    pub idempotency_key: &'a str,
    /// The post id the receipt holds, when it holds one (a platform that cannot look a post up
    /// by key reads it by id).
    pub posted: Option<&'a PostId>,
    /// The text the post was sent with, and the time its claim was made: a platform with
    /// neither keys nor ids to go by finds the post among the account's recent ones by them.
    pub body: &'a str,
    /// When the publication was claimed (no post of it can be older).
    pub since: Timestamp,
}

impl<'a> Lookup<'a> {
    /// A lookup of the post made under `idempotency_key` in `workspace`, with nothing else to
    /// go by yet.
    pub fn key(workspace: &'a WorkspaceId, idempotency_key: &'a str) -> Self {
        Self { workspace, idempotency_key, posted: None, body: "", since: chrono::DateTime::UNIX_EPOCH }
    }

    /// The same lookup, with the post id a receipt holds.
    pub fn posted(self, posted: Option<&'a PostId>) -> Self {
        Self { posted, ..self }
    }

    /// The same lookup, with the text sent and the time of the claim.
    pub fn sent(self, body: &'a str, since: Timestamp) -> Self {
        Self { body, since, ..self }
    }
}

/// What reading back found for a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// A post exists with this body.
    Post {
        /// Platform post id.
        post: PostId,
        /// Its text.
        body: String,
        /// On the AT Protocol: the record's `at://` URI and CID as read back.
        record: Option<RecordRef>,
        /// The post it replies to, when it is a reply (a post of a thread after its first).
        replying_to: Option<PostId>,
    },
    /// Nothing was posted under the key.
    Missing,
}

/// A platform's answer: its status and its body, read whole under a bound.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
}

impl Reply {
    /// `response` read under `max` bytes; `None` when it cannot be read whole. A refusal is
    /// logged by its status only: a platform's error text may quote the post.
    pub(crate) async fn read(mut response: reqwest::Response, max: usize, platform: &'static str) -> Option<Self> {
        let status = response.status().as_u16();
        let body = body::read(&mut response, max).await.ok()?;
        if !(200..300).contains(&status) {
            tracing::warn!(status, platform, "the platform refused a call");
        }
        Some(Self { status, body })
    }
}

/// Read-back failed; verification will retry.
#[derive(Debug, thiserror::Error)]
#[error("the platform could not be read back")]
pub struct ReadBackFailed;

/// A publishing connector.
#[async_trait]
pub trait Connector: Send + Sync {
    /// Which one.
    fn kind(&self) -> ConnectorKind;
    /// Publish once. The post is admitted first ([`admit`]): mock content never reaches a live
    /// platform, whatever the connector.
    async fn send(&self, workspace: &WorkspaceId, post: &Outgoing) -> Sent {
        match admit(self.kind(), post) {
            Ok(()) => self.create(workspace, post).await,
            Err(code) => Sent::Rejected(code),
        }
    }
    /// Make the post on the platform, once [`Connector::send`] admitted it.
    async fn create(&self, workspace: &WorkspaceId, post: &Outgoing) -> Sent;
    /// Read back the post `lookup` describes (see [`Lookup`]).
    async fn read_back(&self, lookup: Lookup<'_>) -> Result<Found, ReadBackFailed>;
    /// Check the credentials and that the platform answers, posting nothing: `connector_auth`
    /// when the credentials are refused, `connector_failed` when the platform cannot be
    /// reached.
    async fn check(&self) -> Result<Checked, Code>;
    /// Read the engagement of a post this connector published ([`engagement`]). Nothing is
    /// posted. A platform that offers none says so (the default).
    async fn engagement(&self, _post: engagement::Asked<'_>) -> engagement::Measurement {
        Ok(engagement::Measured::NotOffered)
    }
    /// The platform's public trends, most trending first ([`trends`]); none where it has none
    /// (the default).
    async fn trends(&self) -> Result<Vec<trends::PublicTrend>, engagement::MeasureFailed> {
        Ok(Vec::new())
    }
}

/// What a connector's check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checked {
    /// The platform answered and accepted the credentials; a Mastodon instance also says how
    /// many characters a status may have.
    Accepted {
        /// The instance's status limit, when it stated one.
        max_characters: Option<u32>,
    },
    /// There is nothing this connector can check without posting, and why (a sentence).
    NothingToCheck(&'static str),
}

/// How the sandbox behaves on the next sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SandboxMode {
    /// Post and answer.
    Succeed,
    /// Refuse.
    Fail,
    /// Post, but lose the answer (the caller sees a timeout).
    TimeOut,
    /// Lose the request: nothing posted, no answer.
    Drop,
}

#[derive(Serialize, Deserialize)]
struct SandboxPost {
    post: PostId,
    platform: Platform,
    body: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replying_to: Option<PostId>,
}

/// The local platform simulation.
pub struct Sandbox {
    store: std::sync::Arc<dyn Store>,
    modes: Mutex<Vec<SandboxMode>>,
}

impl Sandbox {
    /// A sandbox over `store` that succeeds unless told otherwise.
    pub fn new(store: std::sync::Arc<dyn Store>) -> Self {
        Self { store, modes: Mutex::new(Vec::new()) }
    }

    /// Behave as `mode` on the next send (queued; then back to succeeding).
    pub fn next(&self, mode: SandboxMode) {
        if let Ok(mut m) = self.modes.lock() {
            m.push(mode);
        }
    }

    /// How many sends have reached the platform for this workspace (every one: the posts are
    /// read page by page).
    pub async fn posts(&self, workspace: &WorkspaceId) -> Result<usize, harmonia_store::Error> {
        Ok(harmonia_store::scan_all(&*self.store, workspace, SANDBOX_POSTS).await?.len())
    }
}

fn key_id(key: &str) -> Option<DocId> {
    use sha2::Digest;
    format!("key-{}", &hex::encode(sha2::Sha256::digest(key.as_bytes()))[..40]).parse().ok()
}

#[async_trait]
impl Connector for Sandbox {
    fn kind(&self) -> ConnectorKind {
        ConnectorKind::Sandbox
    }

    async fn create(&self, workspace: &WorkspaceId, post: &Outgoing) -> Sent {
        let mode = self
            .modes
            .lock()
            .ok()
            .and_then(|mut m| (!m.is_empty()).then(|| m.remove(0)))
            .unwrap_or(SandboxMode::Succeed);
        if matches!(mode, SandboxMode::Fail) {
            return Sent::Refused(Refusal::Failed);
        }
        if matches!(mode, SandboxMode::Drop) {
            return Sent::Unknown;
        }
        let Some(id) = key_id(&post.idempotency_key) else { return Sent::Refused(Refusal::Failed) };
        let record = SandboxPost {
            post: PostId::generate(),
            platform: post.platform,
            body: post.body.clone(),
            replying_to: post.reply.as_ref().map(|r| r.parent.post.clone()),
        };
        let Ok(data) = encode(&record) else { return Sent::Refused(Refusal::Failed) };
        let stored = match create_if_absent(&*self.store, workspace, SANDBOX_POSTS, &id, data).await {
            Ok(created) => created.document().decode::<SandboxPost>().ok(),
            Err(_) => return Sent::Unknown,
        };
        match (mode, stored) {
            (SandboxMode::TimeOut, _) | (_, None) => Sent::Unknown,
            (_, Some(p)) => Sent::Applied(Posted::id(p.post)),
        }
    }

    async fn read_back(&self, lookup: Lookup<'_>) -> Result<Found, ReadBackFailed> {
        let id = key_id(lookup.idempotency_key).ok_or(ReadBackFailed)?;
        match self.store.get(lookup.workspace, SANDBOX_POSTS, &id).await.map_err(|_| ReadBackFailed)? {
            None => Ok(Found::Missing),
            Some(doc) => {
                let p: SandboxPost = doc.decode().map_err(|_| ReadBackFailed)?;
                Ok(Found::Post { post: p.post, body: p.body, record: None, replying_to: p.replying_to })
            }
        }
    }

    async fn check(&self) -> Result<Checked, Code> {
        Ok(Checked::NothingToCheck("the local sandbox has no credentials to check"))
    }

    async fn engagement(&self, post: engagement::Asked<'_>) -> engagement::Measurement {
        let id = key_id(post.idempotency_key).ok_or(engagement::MeasureFailed)?;
        match self.store.get(post.workspace, SANDBOX_POSTS, &id).await.map_err(|_| engagement::MeasureFailed)? {
            None => Ok(engagement::Measured::Gone),
            Some(_) => Ok(engagement::Measured::Counts(engagement::sandbox_engagement(post.idempotency_key, post.age))),
        }
    }
}

/// A signed HTTP webhook.
pub struct Webhook {
    url: String,
    key: SigningKey,
    http: reqwest::Client,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook").field("url", &self.url).finish_non_exhaustive()
    }
}

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// The webhook's HMAC-SHA256 signing key. It can only be built from a non-empty secret, so a
/// webhook can never sign with an empty (publicly known) key.
#[derive(Clone)]
pub struct SigningKey(HmacSha256);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(redacted)")
    }
}

/// How far a Standard Webhooks timestamp may lie from the receiver's clock (the spec's
/// suggested five minutes): an older delivery is a replay, a later one is refused too.
pub const REPLAY_WINDOW: Duration = Duration::from_secs(5 * 60);

/// Why a receiver refused a delivery.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unverified {
    /// A `webhook-*` header is missing or not in its shape.
    #[error("a webhook-id, webhook-timestamp or webhook-signature header is missing or malformed")]
    Malformed,
    /// The timestamp is outside the replay window.
    #[error("the delivery's timestamp is outside the replay window")]
    Stale,
    /// No `v1` signature matches.
    #[error("no signature matches")]
    Forged,
}

impl SigningKey {
    /// A key from the shared secret's bytes; an empty secret is refused with `invalid_config`.
    pub fn new(secret: &[u8]) -> Result<Self, Error> {
        let refused = || Error::new(Code::InvalidConfig, "the webhook signing secret must not be empty");
        if secret.is_empty() {
            return Err(refused());
        }
        <HmacSha256 as KeyInit>::new_from_slice(secret).map(Self).map_err(|_| refused())
    }

    /// A key from a secret as configured: `whsec_<base64>` (the Standard Webhooks form) is the
    /// base64 key, anything else its own bytes.
    pub fn from_secret(secret: &str) -> Result<Self, Error> {
        match secret.strip_prefix("whsec_") {
            Some(encoded) => {
                use base64::Engine;
                let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).map_err(|_| {
                    Error::new(Code::InvalidConfig, "a whsec_ webhook signing secret must be base64 after its prefix")
                })?;
                Self::new(&bytes)
            }
            None => Self::new(secret.as_bytes()),
        }
    }

    /// The `webhook-signature` value for message `id` sent at `timestamp` (Unix seconds):
    /// `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        use base64::Engine;
        let mac = self.signed(id, timestamp, body).finalize().into_bytes();
        format!("v1,{}", base64::engine::general_purpose::STANDARD.encode(mac))
    }

    /// The MAC over what Standard Webhooks signs: `{id}.{timestamp}.{body}`.
    fn signed(&self, id: &str, timestamp: i64, body: &[u8]) -> HmacSha256 {
        let mut mac = self.0.clone();
        mac.update(format!("{id}.{timestamp}.").as_bytes());
        mac.update(body);
        mac
    }

    /// What a receiver checks: the headers are there, the timestamp is within
    /// [`REPLAY_WINDOW`] of `now` (Unix seconds), and one of the space-separated `v1`
    /// signatures matches (compared in constant time).
    pub fn verify(&self, id: &str, timestamp: &str, signatures: &str, body: &[u8], now: i64) -> Result<(), Unverified> {
        use base64::Engine;
        let ts: i64 = timestamp.trim().parse().map_err(|_| Unverified::Malformed)?;
        if id.is_empty() || signatures.trim().is_empty() {
            return Err(Unverified::Malformed);
        }
        let window = i64::try_from(REPLAY_WINDOW.as_secs()).unwrap_or(i64::MAX);
        if (now - ts).abs() > window {
            return Err(Unverified::Stale);
        }
        let matches = signatures.split_whitespace().filter_map(|s| s.strip_prefix("v1,")).any(|sig| {
            let Ok(given) = base64::engine::general_purpose::STANDARD.decode(sig) else { return false };
            self.signed(id, ts, body).verify_slice(&given).is_ok()
        });
        if matches { Ok(()) } else { Err(Unverified::Forged) }
    }
}

impl Webhook {
    /// A webhook at `url` signing with `key`, with a request timeout.
    pub fn new(url: &str, key: SigningKey, timeout: Duration) -> Result<Self, Error> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| Error::new(Code::InvalidConfig, "the webhook HTTP client could not be built").with_cause(e))?;
        Ok(Self { url: url.trim_end_matches('/').to_owned(), key, http })
    }
}

#[derive(Deserialize)]
struct WebhookPost {
    post: String,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    replying_to: Option<String>,
}

/// What a bridge says of a post it made: its id, its text (empty when the bridge gave none),
/// and the post it replies to (a post of a thread after its first), when it says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BridgePost {
    /// The post id.
    pub post: PostId,
    /// Its text.
    pub body: String,
    /// The post it replies to.
    pub replying_to: Option<PostId>,
}

/// The longest answer read from a webhook bridge (256 KiB): a receipt or a read-back of one
/// post is a few kilobytes at most. A longer one is not believed.
pub const MAX_WEBHOOK_RESPONSE_BYTES: usize = 256 << 10;

/// A bridge's answer, `{"post": ID, "body"?: TEXT, "replying_to"?: ID}`; `None` when the bytes
/// are not that, or an id is not a post id.
pub fn decode_webhook_post(bytes: &[u8]) -> Option<BridgePost> {
    if bytes.len() > MAX_WEBHOOK_RESPONSE_BYTES {
        return None;
    }
    let answer: WebhookPost = serde_json::from_slice(bytes).ok()?;
    let replying_to = match answer.replying_to {
        Some(id) => Some(id.parse().ok()?),
        None => None,
    };
    Some(BridgePost { post: answer.post.parse().ok()?, body: answer.body.unwrap_or_default(), replying_to })
}

/// A bridge's answer read whole under [`MAX_WEBHOOK_RESPONSE_BYTES`], then decoded.
async fn read_webhook_post(mut response: reqwest::Response) -> Option<BridgePost> {
    decode_webhook_post(&body::read(&mut response, MAX_WEBHOOK_RESPONSE_BYTES).await.ok()?)
}

impl Webhook {
    /// The bridge's URL with `segments` after it, each one path segment (a key's `/`, as in a
    /// thread post's `…/2`, is percent-encoded, never a new segment).
    fn at(&self, segments: &[&str]) -> Option<url::Url> {
        let mut url = url::Url::parse(&self.url).ok()?;
        url.path_segments_mut().ok()?.pop_if_empty().extend(segments);
        Some(url)
    }
}

#[async_trait]
impl Connector for Webhook {
    fn kind(&self) -> ConnectorKind {
        ConnectorKind::Webhook
    }

    async fn create(&self, _workspace: &WorkspaceId, post: &Outgoing) -> Sent {
        let Ok(body) = serde_json::to_vec(post) else { return Sent::Refused(Refusal::Failed) };
        let timestamp = chrono::Utc::now().timestamp();
        let request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("idempotency-key", &post.idempotency_key)
            .header("webhook-id", &post.idempotency_key)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", self.key.sign(&post.idempotency_key, timestamp, &body))
            .body(body);
        match request.send().await {
            Err(_) => Sent::Unknown,
            // An answer that cannot be read leaves the outcome to verification's read-back.
            Ok(r) if r.status().is_success() => match read_webhook_post(r).await {
                Some(made) => Sent::Applied(Posted::id(made.post)),
                None => Sent::Unknown,
            },
            Ok(r) if r.status().is_server_error() => Sent::Unknown,
            Ok(_) => Sent::Refused(Refusal::Failed),
        }
    }

    async fn read_back(&self, lookup: Lookup<'_>) -> Result<Found, ReadBackFailed> {
        let r = self
            .http
            .get(self.at(&[lookup.idempotency_key]).ok_or(ReadBackFailed)?)
            .send()
            .await
            .map_err(|_| ReadBackFailed)?;
        if r.status().as_u16() == 404 {
            return Ok(Found::Missing);
        }
        if !r.status().is_success() {
            return Err(ReadBackFailed);
        }
        let held = read_webhook_post(r).await.ok_or(ReadBackFailed)?;
        Ok(Found::Post { post: held.post, body: held.body, record: None, replying_to: held.replying_to })
    }

    async fn check(&self) -> Result<Checked, Code> {
        Ok(Checked::NothingToCheck("the deployment's webhook cannot be checked without posting"))
    }

    async fn engagement(&self, post: engagement::Asked<'_>) -> engagement::Measurement {
        let url = self.at(&[post.idempotency_key, "metrics"]).ok_or(engagement::MeasureFailed)?;
        let mut r = self.http.get(url).send().await.map_err(|_| engagement::MeasureFailed)?;
        match r.status().as_u16() {
            404 | 405 | 501 => return Ok(engagement::Measured::NotOffered),
            410 => return Ok(engagement::Measured::Gone),
            200..=299 => {}
            _ => return Err(engagement::MeasureFailed),
        }
        let bytes = body::read(&mut r, engagement::MAX_ENGAGEMENT_RESPONSE_BYTES)
            .await
            .map_err(|_| engagement::MeasureFailed)?;
        let counts = engagement::decode_webhook_engagement(&bytes).ok_or(engagement::MeasureFailed)?;
        Ok(engagement::Measured::Counts(counts))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    use axum::Router;
    use axum::body::Bytes;
    use axum::extract::{Path, State};
    use axum::http::{HeaderMap, StatusCode};
    use axum::routing::{get, post};

    use super::*;

    const SECRET: &[u8] = b"webhook-secret-for-tests";

    #[derive(Clone, Default)]
    struct FakePlatform {
        /// The posts made, by key.
        posts: Arc<Mutex<HashMap<String, BridgePost>>>,
        calls: Arc<Mutex<u32>>,
    }

    async fn receive(State(p): State<FakePlatform>, headers: HeaderMap, body: Bytes) -> (StatusCode, String) {
        *p.calls.lock().expect("lock") += 1;
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        let key = SigningKey::new(SECRET).expect("key");
        let now = chrono::Utc::now().timestamp();
        let (id, ts, sig) = (header("webhook-id"), header("webhook-timestamp"), header("webhook-signature"));
        if key.verify(&id, &ts, &sig, &body, now).is_err()
            || Some(id.as_str()) != headers.get("idempotency-key").and_then(|v| v.to_str().ok())
        {
            return (StatusCode::UNAUTHORIZED, String::new());
        }
        let Some(key) = headers.get("idempotency-key").and_then(|v| v.to_str().ok()) else {
            return (StatusCode::BAD_REQUEST, String::new());
        };
        let post: Outgoing = match serde_json::from_slice(&body) {
            Ok(p) => p,
            Err(_) => return (StatusCode::BAD_REQUEST, String::new()),
        };
        let mut posts = p.posts.lock().expect("lock");
        let n = posts.len();
        let made = posts.entry(key.to_owned()).or_insert_with(|| BridgePost {
            post: format!("post-{n}").parse().expect("id"),
            body: post.body,
            replying_to: post.reply.map(|r| r.parent.post),
        });
        (StatusCode::OK, serde_json::json!({"post": made.post}).to_string())
    }

    async fn lookup(State(p): State<FakePlatform>, Path(key): Path<String>) -> (StatusCode, String) {
        match p.posts.lock().expect("lock").get(&key) {
            Some(made) => {
                let mut held = serde_json::json!({"post": made.post, "body": made.body});
                if let Some(parent) = &made.replying_to {
                    held["replying_to"] = serde_json::json!(parent);
                }
                (StatusCode::OK, held.to_string())
            }
            None => (StatusCode::NOT_FOUND, String::new()),
        }
    }

    /// Serve `app` on a free local port; the URL of its `/hook`.
    async fn serve(app: Router) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        url
    }

    async fn platform() -> (FakePlatform, String) {
        let p = FakePlatform::default();
        let app = Router::new().route("/hook", post(receive)).route("/hook/{key}", get(lookup)).with_state(p.clone());
        (p.clone(), serve(app).await)
    }

    /// The post every test sends, with `provenance`.
    fn hello(provenance: Provenance) -> Outgoing {
        Outgoing {
            idempotency_key: "ws:draft-1:abc".into(),
            platform: Platform::Linkedin,
            body: "Hello.".into(),
            provenance,
            reply: None,
        }
    }

    #[tokio::test]
    async fn webhook_signs_sends_with_the_key_and_reads_back() {
        let (platform, url) = platform().await;
        let ws: WorkspaceId = "ws".parse().expect("ws");
        let hook = Webhook::new(&url, SigningKey::new(SECRET).expect("key"), Duration::from_secs(5)).expect("client");
        let post = hello(Provenance::Live);
        let first = hook.send(&ws, &post).await;
        let again = hook.send(&ws, &post).await;
        assert!(matches!(&first, Sent::Applied(_)), "{first:?}");
        assert_eq!(first, again, "the same key answers the same post");
        assert_eq!(platform.posts.lock().expect("lock").len(), 1);
        assert_eq!(
            hook.read_back(Lookup::key(&ws, &post.idempotency_key)).await.ok(),
            Some(Found::Post {
                post: "post-0".parse().expect("id"),
                body: "Hello.".into(),
                record: None,
                replying_to: None
            })
        );
        assert_eq!(hook.read_back(Lookup::key(&ws, "ws:never")).await.ok(), Some(Found::Missing));
        let forged =
            Webhook::new(&url, SigningKey::new(b"wrong secret").expect("key"), Duration::from_secs(5)).expect("client");
        assert_eq!(
            forged.send(&ws, &Outgoing { idempotency_key: "k2".into(), ..post }).await,
            Sent::Refused(Refusal::Failed)
        );
        assert_eq!(platform.posts.lock().expect("lock").len(), 1, "an unsigned post is refused");
        // A post of a thread goes with what it replies to, and reads back with it (under its own
        // key, whose `/` stays within one path segment of the read-back URL).
        let Sent::Applied(first) = first else { unreachable!("applied above") };
        let reply = Outgoing {
            idempotency_key: "ws:draft-1:abc/2".into(),
            body: "And then.".into(),
            reply: Some(ReplyTo { root: first.clone(), parent: first.clone() }),
            ..hello(Provenance::Live)
        };
        assert!(matches!(hook.send(&ws, &reply).await, Sent::Applied(_)));
        let found = hook.read_back(Lookup::key(&ws, &reply.idempotency_key)).await.ok();
        assert!(
            matches!(&found, Some(Found::Post { replying_to: Some(parent), .. }) if *parent == first.post),
            "{found:?}"
        );
    }

    #[tokio::test]
    async fn a_bridge_answer_past_its_bound_or_not_a_post_is_never_believed() {
        // A bridge whose answers are a post id followed by 300 KiB of text.
        async fn huge() -> (StatusCode, String) {
            (StatusCode::OK, serde_json::json!({"post": "post-9", "body": "x".repeat(300 << 10)}).to_string())
        }
        let url = serve(Router::new().route("/hook", post(huge)).route("/hook/{key}", get(huge))).await;
        let ws: WorkspaceId = "ws".parse().expect("ws");
        let hook = Webhook::new(&url, SigningKey::new(SECRET).expect("key"), Duration::from_secs(5)).expect("client");
        let post = hello(Provenance::Live);
        assert_eq!(hook.send(&ws, &post).await, Sent::Unknown, "left to verification's read-back");
        assert!(hook.read_back(Lookup::key(&ws, &post.idempotency_key)).await.is_err());

        let id = |s: &str| s.parse::<PostId>().expect("id");
        assert_eq!(
            decode_webhook_post(br#"{"post": "post-1", "body": "Hi."}"#),
            Some(BridgePost { post: id("post-1"), body: "Hi.".to_owned(), replying_to: None })
        );
        assert_eq!(decode_webhook_post(br#"{"post": "post-1"}"#).map(|p| p.body), Some(String::new()));
        assert_eq!(
            decode_webhook_post(br#"{"post": "post-2", "body": "Hi.", "replying_to": "post-1"}"#)
                .map(|p| p.replying_to),
            Some(Some(id("post-1")))
        );
        let bad_reply = br#"{"post": "post-2", "replying_to": "no spaces allowed"}"#;
        for bad in [&b"{}"[..], b"", b"{\"post\": 7}", b"{\"post\": \"no spaces allowed\"}", b"\xff", bad_reply] {
            assert_eq!(decode_webhook_post(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[tokio::test]
    async fn a_bridges_metrics_endpoint_gives_the_counts_and_a_bridge_without_one_offers_none() {
        // A bridge that counts the post under key `ws:draft-1:abc`, knows no other, and one
        // that fails; another that has no metrics endpoint at all.
        async fn metrics(Path(key): Path<String>) -> (StatusCode, String) {
            match key.as_str() {
                "ws:draft-1:abc" => (StatusCode::OK, r#"{"likes": 7, "reposts": 2, "replies": 1}"#.to_owned()),
                "ws:failing" => (StatusCode::BAD_GATEWAY, String::new()),
                _ => (StatusCode::GONE, String::new()),
            }
        }
        let counted = serve(Router::new().route("/hook/{key}/metrics", get(metrics))).await;
        let (_, bare) = platform().await;
        let ws: WorkspaceId = "ws".parse().expect("ws");
        let posted = Posted::id("post-0".parse().expect("id"));
        let asked = |idempotency_key| engagement::Asked {
            workspace: &ws,
            idempotency_key,
            posted: &posted,
            age: chrono::Duration::hours(1),
        };
        let hook = |url: &str| {
            Webhook::new(url, SigningKey::new(SECRET).expect("key"), Duration::from_secs(5)).expect("client")
        };
        let counts = engagement::Engagement { likes: 7, reposts: 2, replies: 1, quotes: None };
        assert_eq!(
            hook(&counted).engagement(asked("ws:draft-1:abc")).await.ok(),
            Some(engagement::Measured::Counts(counts))
        );
        assert_eq!(hook(&counted).engagement(asked("ws:deleted")).await.ok(), Some(engagement::Measured::Gone));
        assert!(hook(&counted).engagement(asked("ws:failing")).await.is_err(), "tried again at the next tick");
        assert_eq!(hook(&bare).engagement(asked("ws:draft-1:abc")).await.ok(), Some(engagement::Measured::NotOffered));
    }

    #[tokio::test]
    async fn a_mock_post_is_refused_before_any_call_to_a_live_connector() {
        let (platform, url) = platform().await;
        let ws: WorkspaceId = "ws".parse().expect("ws");
        let hook = Webhook::new(&url, SigningKey::new(SECRET).expect("key"), Duration::from_secs(5)).expect("client");
        let mock = hello(Provenance::Mock);
        assert_eq!(hook.send(&ws, &mock).await, Sent::Rejected(Code::MockToLiveConnector));
        assert_eq!(*platform.calls.lock().expect("lock"), 0, "the platform was never called");
        assert_eq!(admit(ConnectorKind::Webhook, &mock), Err(Code::MockToLiveConnector));
        assert_eq!(admit(ConnectorKind::Sandbox, &mock), Ok(()), "the sandbox is where mock posts go");
        let live = Outgoing { provenance: Provenance::Live, ..mock };
        assert_eq!(admit(ConnectorKind::Webhook, &live), Ok(()));
    }

    #[test]
    fn signatures_follow_the_standard_webhooks_spec_and_the_receiver_enforces_the_replay_window() {
        // The spec's own test vector.
        let key = SigningKey::from_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").expect("key");
        let (id, ts, body) = ("msg_p5jXN8AQM9LWM0D4loKWxJek", 1_614_265_330, br#"{"test": 2432232314}"#);
        let signature = key.sign(id, ts, body);
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        let at = |now: i64| key.verify(id, "1614265330", &signature, body, now);
        assert_eq!(at(ts), Ok(()));
        assert_eq!(at(ts + 299), Ok(()), "inside the window");
        assert_eq!(at(ts + 301), Err(Unverified::Stale), "a replay after the window");
        assert_eq!(at(ts - 301), Err(Unverified::Stale), "a timestamp from the future");
        assert_eq!(
            key.verify(id, "1614265330", &format!("v1,bm9wZQ== {signature}"), body, ts),
            Ok(()),
            "any of several"
        );
        assert_eq!(key.verify(id, "1614265330", &signature, b"{}", ts), Err(Unverified::Forged));
        assert_eq!(key.verify("msg_other", "1614265330", &signature, body, ts), Err(Unverified::Forged));
        assert_eq!(key.verify(id, "soon", &signature, body, ts), Err(Unverified::Malformed));
        assert_eq!(key.verify(id, "1614265330", "", body, ts), Err(Unverified::Malformed));
        assert!(SigningKey::from_secret("whsec_***").is_err(), "a whsec_ secret is base64");
        assert_eq!(
            SigningKey::from_secret("plain").expect("key").sign("m", 1, b"x"),
            SigningKey::new(b"plain").expect("key").sign("m", 1, b"x")
        );
    }

    #[tokio::test]
    async fn the_sandbox_keeps_what_a_post_replies_to_and_reads_it_back() {
        let (_dir, store) = crate::testing::store();
        let sandbox = Sandbox::new(store);
        let ws: WorkspaceId = "ws".parse().expect("ws");
        let Sent::Applied(root) = sandbox.send(&ws, &hello(Provenance::Mock)).await else { panic!("applied") };
        let reply = Outgoing {
            idempotency_key: "ws:draft-1:abc.1".into(),
            reply: Some(ReplyTo { root: root.clone(), parent: root.clone() }),
            ..hello(Provenance::Mock)
        };
        assert!(matches!(sandbox.send(&ws, &reply).await, Sent::Applied(_)));
        let found = sandbox.read_back(Lookup::key(&ws, "ws:draft-1:abc.1")).await.expect("read");
        assert!(
            matches!(found, Found::Post { replying_to: Some(ref parent), .. } if *parent == root.post),
            "{found:?}"
        );
        let first = sandbox.read_back(Lookup::key(&ws, "ws:draft-1:abc")).await.expect("read");
        assert!(matches!(first, Found::Post { replying_to: None, .. }), "{first:?}");
    }

    #[test]
    fn an_empty_signing_secret_is_refused_at_construction() {
        assert_eq!(SigningKey::new(b"").err().map(|e| e.code), Some(Code::InvalidConfig));
        assert!(!format!("{:?}", SigningKey::new(b"Jefe").expect("key")).contains("Jefe"), "the key is not logged");
    }
}
