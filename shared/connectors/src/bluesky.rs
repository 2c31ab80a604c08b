//! Bluesky, over the AT Protocol's XRPC API on the account's PDS.
//!
//! - A session comes from `com.atproto.server.createSession` with an app password; an expired
//!   access token is renewed by `com.atproto.server.refreshSession` (then, if that is refused
//!   too, by a new session), once per call.
//! - A post is `com.atproto.repo.createRecord` of an `app.bsky.feed.post` whose record key is
//!   a TID derived from the publication's idempotency key ([`record_key`]), so every attempt
//!   for one publication names the same record and the repository refuses a second one.
//! - The text carries facets for its links and mentions, with UTF-8 byte offsets ([`facets`]);
//!   a mention whose handle does not resolve stays plain text.
//! - Read-back is `com.atproto.repo.getRecord` on that key. A PDS answers a create under a key
//!   already taken with a 500, indistinguishable from an outage by status alone; so a failed
//!   create is always resolved by reading the key back, never by creating again.

use std::time::Duration;

use async_trait::async_trait;
use harmonia_contracts::Code;
use harmonia_contracts::body;
use harmonia_contracts::domain::{ConnectorKind, RecordRef};
use harmonia_contracts::ids::{PostId, WorkspaceId};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::engagement::{Asked, MeasureFailed, Measurement, bluesky_posts};
use super::trends::{MAX_TRENDS, PublicTrend, bluesky_trending};
use super::{Checked, Connector, Found, Lookup, Outgoing, Posted, ReadBackFailed, Refusal, Sent};

/// The collection posts are records of.
pub const POST_COLLECTION: &str = "app.bsky.feed.post";

/// The longest XRPC answer read (256 KiB): a session, a record or an error is a few
/// kilobytes. A longer one is not believed.
pub const MAX_XRPC_RESPONSE_BYTES: usize = 256 << 10;

/// Where and as whom to post.
#[derive(Clone)]
pub struct BlueskyConfig {
    /// The account's PDS, e.g. `https://bsky.social`.
    pub service: String,
    /// The account's handle or DID.
    pub identifier: String,
    /// An app password of the account (never the account password).
    pub app_password: SecretString,
    /// Timeout of each request.
    pub timeout: Duration,
}

impl std::fmt::Debug for BlueskyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlueskyConfig")
            .field("service", &self.service)
            .field("identifier", &self.identifier)
            .field("app_password", &"<redacted>")
            .finish()
    }
}

#[derive(Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Session {
    did: String,
    access_jwt: String,
    refresh_jwt: String,
}

/// The Bluesky connector.
pub struct Bluesky {
    config: BlueskyConfig,
    http: reqwest::Client,
    session: Mutex<Option<Session>>,
}

impl std::fmt::Debug for Bluesky {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bluesky").field("config", &self.config).finish_non_exhaustive()
    }
}

/// What an XRPC call came to.
enum Answer {
    /// 2xx, with the body.
    Ok(Value),
    /// 4xx or 5xx, with the status and the error name (`error`) of the body.
    Refused(u16, String),
    /// No readable answer: the connection failed, timed out, or the body was not JSON.
    Lost,
}

impl Answer {
    fn expired(&self) -> bool {
        matches!(self, Answer::Refused(400 | 401, e) if e == "ExpiredToken" || e == "InvalidToken")
    }
}

/// Why no session could be had.
#[derive(Debug, PartialEq, Eq)]
enum NoSession {
    /// The credentials were refused.
    Auth,
    /// The PDS did not answer usefully.
    Unreachable,
}

const TID_ALPHABET: &[u8; 32] = b"234567abcdefghijklmnopqrstuvwxyz";
/// 2023-01-01T00:00:00Z, and seven years, in microseconds: the span derived record keys'
/// timestamps fall in, so they sort like real ones.
const TID_EPOCH_US: u64 = 1_672_531_200_000_000;
const TID_SPAN_US: u64 = 7 * 365 * 86_400 * 1_000_000;

/// The record key (a TID: 13 characters of base32-sortable, a 53-bit microsecond timestamp
/// and a 10-bit clock id) for a publication's idempotency key. A pure function of the key:
/// every attempt of one publication names the same record.
pub fn record_key(idempotency_key: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(idempotency_key.as_bytes());
    let word = |at: usize| u64::from_be_bytes(digest[at..at + 8].try_into().unwrap_or([0; 8]));
    let micros = TID_EPOCH_US + word(0) % TID_SPAN_US;
    let clock = word(8) & 0x3FF;
    let n = (micros << 10) | clock;
    (0..13).map(|i| TID_ALPHABET[((n >> (60 - 5 * i)) & 31) as usize] as char).collect()
}

/// A candidate mention in `text`: `@handle` at the start or after a space or an opening
/// bracket, a handle being at least two dot-separated labels of letters, digits and hyphens.
/// Returns (byte start of the `@`, byte end, handle).
pub fn mentions(text: &str) -> Vec<(usize, usize, &str)> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices('@') {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| !(c.is_whitespace() || c == '(' || c == '[')) {
            continue;
        }
        let rest = &text[at + 1..];
        let len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-')).unwrap_or(rest.len());
        let handle = rest[..len].trim_end_matches('.');
        let labels: Vec<&str> = handle.split('.').collect();
        let valid = labels.len() >= 2
            && handle.len() <= 253
            && labels.iter().all(|l| !l.is_empty() && l.len() <= 63 && !l.starts_with('-') && !l.ends_with('-'))
            && labels.last().is_some_and(|tld| tld.starts_with(|c: char| c.is_ascii_alphabetic()));
        if valid {
            out.push((at, at + 1 + handle.len(), handle));
        }
    }
    out
}

/// The facets of `text`: one link facet per link the policy's link reader finds (a bare
/// domain links to `https://` it), and one mention facet per mention whose handle `resolve`
/// turned into a DID. Offsets are UTF-8 byte offsets into `text`, as the AT Protocol wants.
pub fn facets(text: &str, resolved: &[(String, String)]) -> Vec<Value> {
    let mut out = Vec::new();
    for link in harmonia_policy::links(text) {
        let start = link.as_ptr() as usize - text.as_ptr() as usize;
        let uri = if link.contains("://") { link.to_owned() } else { format!("https://{link}") };
        out.push(json!({
            "index": {"byteStart": start, "byteEnd": start + link.len()},
            "features": [{"$type": "app.bsky.richtext.facet#link", "uri": uri}],
        }));
    }
    for (start, end, handle) in mentions(text) {
        if let Some((_, did)) = resolved.iter().find(|(h, _)| h.eq_ignore_ascii_case(handle)) {
            out.push(json!({
                "index": {"byteStart": start, "byteEnd": end},
                "features": [{"$type": "app.bsky.richtext.facet#mention", "did": did}],
            }));
        }
    }
    out.sort_by_key(|f| f["index"]["byteStart"].as_u64());
    out
}

/// The record a `createRecord` answer names: an `at://` URI and a CID; `None` otherwise.
pub fn created_record(answer: &Value) -> Option<RecordRef> {
    let text = |key: &str| answer.get(key).and_then(Value::as_str).filter(|t| !t.is_empty()).map(str::to_owned);
    let uri = text("uri").filter(|u| u.starts_with("at://"))?;
    Some(RecordRef { uri, cid: text("cid")? })
}

/// A `getRecord` answer: the record it names and the post's text (empty when it has none).
pub fn read_record(answer: &Value) -> Option<(RecordRef, String)> {
    let text = answer.get("value").and_then(|r| r.get("text")).and_then(Value::as_str).unwrap_or("").to_owned();
    Some((created_record(answer)?, text))
}

/// The post a record read back replies to: the record key of its `reply.parent` URI, when it
/// is a reply.
pub fn reply_parent(answer: &Value) -> Option<PostId> {
    let uri = answer.pointer("/value/reply/parent/uri")?.as_str()?;
    let rest = uri.strip_prefix("at://")?;
    let (_, rkey) = rest.rsplit_once(&format!("/{POST_COLLECTION}/"))?;
    rkey.parse().ok()
}

impl Bluesky {
    /// A connector posting as `config`'s account; no call is made until the first post.
    pub fn new(config: BlueskyConfig) -> Result<Self, harmonia_contracts::Error> {
        let http = reqwest::Client::builder().timeout(config.timeout).build().map_err(|_| {
            harmonia_contracts::Error::new(Code::InvalidConfig, "the Bluesky HTTP client could not be built")
        })?;
        let config = BlueskyConfig { service: config.service.trim_end_matches('/').to_owned(), ..config };
        Ok(Self { config, http, session: Mutex::new(None) })
    }

    fn url(&self, method: &str) -> String {
        format!("{}/xrpc/{method}", self.config.service)
    }

    async fn answer(request: reqwest::RequestBuilder) -> Answer {
        let Ok(mut response) = request.send().await else { return Answer::Lost };
        let status = response.status().as_u16();
        let Ok(body) = body::read(&mut response, MAX_XRPC_RESPONSE_BYTES).await else { return Answer::Lost };
        let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if (200..300).contains(&status) {
            return if value.is_object() { Answer::Ok(value) } else { Answer::Lost };
        }
        let error = value.get("error").and_then(Value::as_str).unwrap_or("").to_owned();
        tracing::warn!(status, provider_code = %error, "the PDS refused a call");
        Answer::Refused(status, error)
    }

    async fn create_session(&self) -> Result<Session, NoSession> {
        let body = json!({"identifier": self.config.identifier, "password": self.config.app_password.expose_secret()});
        match Self::answer(self.http.post(self.url("com.atproto.server.createSession")).json(&body)).await {
            Answer::Ok(v) => serde_json::from_value(v).map_err(|_| NoSession::Unreachable),
            Answer::Refused(400 | 401 | 403, _) => Err(NoSession::Auth),
            _ => Err(NoSession::Unreachable),
        }
    }

    /// The current session, creating one when there is none.
    async fn session(&self) -> Result<Session, NoSession> {
        let mut held = self.session.lock().await;
        if let Some(s) = held.as_ref() {
            return Ok(s.clone());
        }
        let fresh = self.create_session().await?;
        *held = Some(fresh.clone());
        Ok(fresh)
    }

    /// A renewed session after `stale` was refused as expired: refreshed, or new.
    async fn renew(&self, stale: &Session) -> Result<Session, NoSession> {
        let mut held = self.session.lock().await;
        if let Some(s) = held.as_ref().filter(|s| s.access_jwt != stale.access_jwt) {
            return Ok(s.clone());
        }
        let refresh = self.http.post(self.url("com.atproto.server.refreshSession")).bearer_auth(&stale.refresh_jwt);
        let fresh = match Self::answer(refresh).await {
            Answer::Ok(v) => match serde_json::from_value(v) {
                Ok(s) => s,
                Err(_) => self.create_session().await?,
            },
            _ => self.create_session().await?,
        };
        *held = Some(fresh.clone());
        Ok(fresh)
    }

    /// `call` with the session's access token, renewed once if it has expired.
    async fn authorised<F>(&self, call: F) -> Result<(Session, Answer), NoSession>
    where
        F: Fn(&Session) -> reqwest::RequestBuilder,
    {
        let session = self.session().await?;
        let answer = Self::answer(call(&session)).await;
        if !answer.expired() {
            return Ok((session, answer));
        }
        let session = self.renew(&session).await?;
        let answer = Self::answer(call(&session)).await;
        Ok((session, answer))
    }

    async fn resolve(&self, handle: &str) -> Option<String> {
        let request = self.http.get(self.url("com.atproto.identity.resolveHandle")).query(&[("handle", handle)]);
        match Self::answer(request).await {
            Answer::Ok(v) => v.get("did").and_then(Value::as_str).map(str::to_owned),
            _ => None,
        }
    }

    /// Read the record under `rkey` of the session's repository.
    async fn get_record(&self, rkey: &str) -> Result<Found, ReadBackFailed> {
        let (_, answer) = self
            .authorised(|s| {
                self.http.get(self.url("com.atproto.repo.getRecord")).bearer_auth(&s.access_jwt).query(&[
                    ("repo", s.did.as_str()),
                    ("collection", POST_COLLECTION),
                    ("rkey", rkey),
                ])
            })
            .await
            .map_err(|_| ReadBackFailed)?;
        match answer {
            Answer::Ok(v) => {
                let (record, body) = read_record(&v).ok_or(ReadBackFailed)?;
                let post: PostId = rkey.parse().map_err(|_| ReadBackFailed)?;
                Ok(Found::Post { post, body, record: Some(record), replying_to: reply_parent(&v) })
            }
            Answer::Refused(400, e) if e == "RecordNotFound" => Ok(Found::Missing),
            _ => Err(ReadBackFailed),
        }
    }

    /// The public URL of the post `rkey` by `did`.
    fn public_url(did: &str, rkey: &str) -> String {
        format!("https://bsky.app/profile/{did}/post/{rkey}")
    }
}

#[async_trait]
impl Connector for Bluesky {
    fn kind(&self) -> ConnectorKind {
        ConnectorKind::Bluesky
    }

    async fn create(&self, _workspace: &WorkspaceId, post: &Outgoing) -> Sent {
        let rkey = record_key(&post.idempotency_key);
        let mut resolved = Vec::new();
        for (_, _, handle) in mentions(&post.body) {
            if let Some(did) = self.resolve(handle).await {
                resolved.push((handle.to_owned(), did));
            }
        }
        let mut record = json!({
            "$type": POST_COLLECTION,
            "text": post.body,
            "createdAt": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        });
        let facets = facets(&post.body, &resolved);
        if !facets.is_empty() {
            record["facets"] = Value::Array(facets);
        }
        if let Some(reply) = &post.reply {
            // A reply names its thread's first post and its parent by URI and CID.
            let (Some(root), Some(parent)) = (&reply.root.record, &reply.parent.record) else {
                return Sent::Refused(Refusal::Invalid);
            };
            record["reply"] = json!({
                "root": {"uri": root.uri, "cid": root.cid},
                "parent": {"uri": parent.uri, "cid": parent.cid},
            });
        }
        let created = self
            .authorised(|s| {
                self.http.post(self.url("com.atproto.repo.createRecord")).bearer_auth(&s.access_jwt).json(&json!({
                    "repo": s.did, "collection": POST_COLLECTION, "rkey": rkey, "record": record,
                }))
            })
            .await;
        let (session, answer) = match created {
            Ok(done) => done,
            Err(NoSession::Auth) => return Sent::Rejected(Code::ConnectorAuth),
            // Nothing was sent: verification reads the key back and sends once more.
            Err(NoSession::Unreachable) => return Sent::Unknown,
        };
        let Ok(post_id) = rkey.parse::<PostId>() else { return Sent::Refused(Refusal::Failed) };
        match answer {
            Answer::Ok(v) => match created_record(&v) {
                Some(record) => Sent::Applied(Posted {
                    post: post_id,
                    url: Some(Self::public_url(&session.did, &rkey)),
                    record: Some(record),
                }),
                _ => Sent::Unknown,
            },
            Answer::Refused(401 | 403, _) => Sent::Rejected(Code::ConnectorAuth),
            // A 4xx other than a taken key: the post itself was refused.
            Answer::Refused(400, _) => Sent::Refused(Refusal::Invalid),
            Answer::Refused(429, _) => Sent::Refused(Refusal::Throttled(None)),
            Answer::Refused(status, _) if status < 500 => Sent::Refused(Refusal::Failed),
            // A 5xx (which is also what a key already taken gets) or no answer: read back.
            Answer::Refused(..) | Answer::Lost => match self.get_record(&rkey).await {
                Ok(Found::Post { body, record, .. }) if body == post.body => {
                    Sent::Applied(Posted { post: post_id, url: Some(Self::public_url(&session.did, &rkey)), record })
                }
                _ => Sent::Unknown,
            },
        }
    }

    async fn read_back(&self, lookup: Lookup<'_>) -> Result<Found, ReadBackFailed> {
        self.get_record(&record_key(lookup.idempotency_key)).await
    }

    async fn check(&self) -> Result<Checked, Code> {
        match self.create_session().await {
            Ok(session) => {
                *self.session.lock().await = Some(session);
                Ok(Checked::Accepted { max_characters: None })
            }
            Err(NoSession::Auth) => Err(Code::ConnectorAuth),
            Err(NoSession::Unreachable) => Err(Code::ConnectorFailed),
        }
    }

    async fn engagement(&self, post: Asked<'_>) -> Measurement {
        // The record the receipt names: its `at://` URI is what the AppView knows it by.
        let uri = post.posted.record.as_ref().map(|r| r.uri.as_str()).ok_or(MeasureFailed)?;
        let (_, answer) = self
            .authorised(|s| {
                self.http.get(self.url("app.bsky.feed.getPosts")).bearer_auth(&s.access_jwt).query(&[("uris", uri)])
            })
            .await
            .map_err(|_| MeasureFailed)?;
        match answer {
            Answer::Ok(v) => bluesky_posts(&v, uri).ok_or(MeasureFailed),
            _ => Err(MeasureFailed),
        }
    }

    async fn trends(&self) -> Result<Vec<PublicTrend>, MeasureFailed> {
        let (_, answer) = self
            .authorised(|s| {
                let limit = MAX_TRENDS.to_string();
                self.http
                    .get(self.url("app.bsky.unspecced.getTrendingTopics"))
                    .bearer_auth(&s.access_jwt)
                    .query(&[("limit", limit.as_str())])
            })
            .await
            .map_err(|_| MeasureFailed)?;
        match answer {
            Answer::Ok(v) => bluesky_trending(&v).ok_or(MeasureFailed),
            _ => Err(MeasureFailed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_key_is_a_valid_tid_and_a_pure_function_of_the_idempotency_key() {
        let key = record_key("ws:draft-1:0123456789abcdef");
        assert_eq!(key, record_key("ws:draft-1:0123456789abcdef"));
        assert_ne!(key, record_key("ws:draft-2:0123456789abcdef"));
        assert_eq!(key.len(), 13);
        assert!(key.starts_with(|c: char| "234567abcdefghij".contains(c)), "{key}");
        assert!(key.bytes().all(|b| TID_ALPHABET.contains(&b)), "{key}");
        // Its timestamp lies in the span real TIDs do.
        let n = key.bytes().fold(0u64, |n, b| (n << 5) | TID_ALPHABET.iter().position(|&a| a == b).unwrap_or(0) as u64);
        let micros = n >> 10;
        assert!((TID_EPOCH_US..TID_EPOCH_US + TID_SPAN_US).contains(&micros));
    }

    #[test]
    fn facets_name_the_exact_bytes_of_links_and_resolved_mentions() {
        let text = "Café notes — see video.example.com/talk and https://example.org/a?b=1, thanks @alice.test and @nobody.test!";
        let resolved = [("alice.test".to_owned(), "did:plc:alice".to_owned())];
        let found = facets(text, &resolved);
        let spans: Vec<(&str, &Value)> = found
            .iter()
            .map(|f| {
                let (s, e) =
                    (f["index"]["byteStart"].as_u64().unwrap_or(0), f["index"]["byteEnd"].as_u64().unwrap_or(0));
                (&text[s as usize..e as usize], &f["features"][0])
            })
            .collect();
        assert_eq!(spans.len(), 3, "{found:?}");
        assert_eq!(spans[0].0, "video.example.com/talk");
        assert_eq!(spans[0].1["uri"], "https://video.example.com/talk");
        assert_eq!(spans[1].0, "https://example.org/a?b=1");
        assert_eq!(spans[2].0, "@alice.test");
        assert_eq!(spans[2].1["did"], "did:plc:alice");
        assert!(found.iter().all(|f| f["index"]["byteEnd"].as_u64() > f["index"]["byteStart"].as_u64()));
    }

    #[test]
    fn only_an_at_uri_with_a_cid_is_believed_as_a_record() {
        let good =
            json!({"uri": "at://did:plc:a/app.bsky.feed.post/3kabcdefghij2", "cid": "bafy1", "value": {"text": "Hi."}});
        assert_eq!(read_record(&good).map(|(r, t)| (r.cid, t)), Some(("bafy1".to_owned(), "Hi.".to_owned())));
        for bad in [
            json!({"uri": "https://example.com/post", "cid": "bafy1"}),
            json!({"uri": "at://did:plc:a/app.bsky.feed.post/x", "cid": ""}),
            json!({"uri": 7, "cid": "bafy1"}),
            json!({"error": "InternalServerError"}),
        ] {
            assert_eq!(created_record(&bad), None, "{bad}");
        }
    }

    #[test]
    fn a_mention_needs_a_handle_with_a_domain_after_a_space_or_the_start() {
        let handles = |t: &'static str| mentions(t).into_iter().map(|(_, _, h)| h).collect::<Vec<_>>();
        assert_eq!(
            handles("@a.test hi (@b.example.org) mail@c.test @nodot @d.test."),
            ["a.test", "b.example.org", "d.test"]
        );
        assert!(handles("@-bad.test @x.1").is_empty());
    }
}
