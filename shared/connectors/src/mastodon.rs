//! Mastodon, over its REST API with an access token of the account.
//!
//! - A post is `POST /api/v1/statuses` with the publication's idempotency key as the
//!   `Idempotency-Key` header: the instance answers a repeated key with the status it created
//!   the first time, so a retried call cannot post twice.
//! - Read-back is by status id: `GET /api/v1/statuses/{id}/source`, whose `text` is the status
//!   as written (its `content` is rendered HTML). Mastodon cannot look a status up by key, so a
//!   claim whose receipt has no id reads back as missing, and verification sends once more with
//!   the same key, which the instance answers with the first status if there was one.
//! - `channels check` is `GET /api/v1/accounts/verify_credentials`, then `GET /api/v2/instance`
//!   for the instance's status limit, which the workspace's channel must not exceed.

use std::time::Duration;

use async_trait::async_trait;
use harmonia_contracts::Code;
use harmonia_contracts::domain::ConnectorKind;
use harmonia_contracts::ids::{PostId, WorkspaceId};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::{Value, json};

use super::engagement::{Asked, MeasureFailed, Measured, Measurement, decode_mastodon_counts};
use super::trends::{MAX_TRENDS, PublicTrend, decode_mastodon_links, decode_mastodon_tags};
use super::{Checked, Connector, Found, Lookup, Outgoing, Posted, ReadBackFailed, Refusal, Reply, Sent};

/// The longest answer read from an instance (256 KiB): a status or an account is a few
/// kilobytes. A longer one is not believed.
pub const MAX_MASTODON_RESPONSE_BYTES: usize = 256 << 10;

/// Who may see a status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    /// Everyone, in public timelines.
    #[default]
    Public,
    /// Everyone, but kept out of public timelines.
    Unlisted,
    /// Followers only.
    Private,
}

impl Visibility {
    fn as_str(self) -> &'static str {
        match self {
            Visibility::Public => "public",
            Visibility::Unlisted => "unlisted",
            Visibility::Private => "private",
        }
    }
}

/// Where and as whom to post.
#[derive(Clone)]
pub struct MastodonConfig {
    /// The instance, e.g. `https://mastodon.social`.
    pub instance: String,
    /// An access token of the account with the `write:statuses` and `read:statuses` scopes.
    pub access_token: SecretString,
    /// Who sees the posts.
    pub visibility: Visibility,
    /// Timeout of each request.
    pub timeout: Duration,
}

impl std::fmt::Debug for MastodonConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MastodonConfig")
            .field("instance", &self.instance)
            .field("access_token", &"<redacted>")
            .field("visibility", &self.visibility)
            .finish()
    }
}

/// The Mastodon connector.
#[derive(Debug)]
pub struct Mastodon {
    config: MastodonConfig,
    http: reqwest::Client,
}

/// A status as the instance answers it (the fields read; the rest is ignored).
#[derive(Deserialize)]
struct Status {
    id: String,
    #[serde(default)]
    url: Option<String>,
}

/// A status's source: the text as written.
#[derive(Deserialize)]
struct Source {
    id: String,
    text: String,
}

/// A status answer's id and public URL, if the bytes are one.
pub fn decode_status(bytes: &[u8]) -> Option<(PostId, Option<String>)> {
    if bytes.len() > MAX_MASTODON_RESPONSE_BYTES {
        return None;
    }
    let status: Status = serde_json::from_slice(bytes).ok()?;
    let url = status.url.filter(|u| u.starts_with("https://") || u.starts_with("http://"));
    Some((status.id.parse().ok()?, url))
}

/// A status answer's `in_reply_to_id`: `Some(None)` for a status that replies to nothing,
/// `None` when the bytes are not a status.
pub fn decode_in_reply_to(bytes: &[u8]) -> Option<Option<PostId>> {
    if bytes.len() > MAX_MASTODON_RESPONSE_BYTES {
        return None;
    }
    let status: Value = serde_json::from_slice(bytes).ok()?;
    status.get("id")?.as_str()?;
    match status.get("in_reply_to_id") {
        None | Some(Value::Null) => Some(None),
        Some(parent) => Some(Some(parent.as_str()?.parse().ok()?)),
    }
}

/// A status source answer's id and text, if the bytes are one.
pub fn decode_source(bytes: &[u8]) -> Option<(PostId, String)> {
    if bytes.len() > MAX_MASTODON_RESPONSE_BYTES {
        return None;
    }
    let source: Source = serde_json::from_slice(bytes).ok()?;
    Some((source.id.parse().ok()?, source.text))
}

/// An instance answer's status limit (`configuration.statuses.max_characters`), if the bytes
/// are one and state a positive limit.
pub fn decode_max_characters(bytes: &[u8]) -> Option<u32> {
    if bytes.len() > MAX_MASTODON_RESPONSE_BYTES {
        return None;
    }
    let instance: Value = serde_json::from_slice(bytes).ok()?;
    let max = instance.pointer("/configuration/statuses/max_characters")?.as_u64()?;
    u32::try_from(max).ok().filter(|m| *m > 0)
}

impl Mastodon {
    /// A connector posting as `config`'s account; no call is made until the first post.
    pub fn new(config: MastodonConfig) -> Result<Self, harmonia_contracts::Error> {
        let http = reqwest::Client::builder().timeout(config.timeout).build().map_err(|_| {
            harmonia_contracts::Error::new(Code::InvalidConfig, "the Mastodon HTTP client could not be built")
        })?;
        let config = MastodonConfig { instance: config.instance.trim_end_matches('/').to_owned(), ..config };
        Ok(Self { config, http })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.config.instance)
    }

    /// The instance's status limit (`GET /api/v2/instance`, a public call: no token is sent);
    /// `None` when it does not say, as an instance older than 4.0 does not.
    async fn max_characters(&self) -> Option<u32> {
        match Self::answer(self.http.get(self.url("/api/v2/instance"))).await? {
            (200, body) => decode_max_characters(&body),
            _ => None,
        }
    }

    /// The answer's status and body, read under the bound; `None` when there is no readable
    /// answer.
    async fn answer(request: reqwest::RequestBuilder) -> Option<(u16, Vec<u8>)> {
        let reply = Reply::read(request.send().await.ok()?, MAX_MASTODON_RESPONSE_BYTES, "Mastodon").await?;
        Some((reply.status, reply.body))
    }

    /// A GET of `path` with the account's token.
    fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.http.get(self.url(path)).bearer_auth(self.config.access_token.expose_secret())
    }
}

#[async_trait]
impl Connector for Mastodon {
    fn kind(&self) -> ConnectorKind {
        ConnectorKind::Mastodon
    }

    async fn create(&self, _workspace: &WorkspaceId, post: &Outgoing) -> Sent {
        let request = self
            .http
            .post(self.url("/api/v1/statuses"))
            .bearer_auth(self.config.access_token.expose_secret())
            .header("idempotency-key", &post.idempotency_key)
            .json(&json!({
                "status": post.body,
                "visibility": self.config.visibility.as_str(),
                "in_reply_to_id": post.reply.as_ref().map(|r| r.parent.post.as_str()),
            }));
        match Self::answer(request).await {
            Some((200..=299, body)) => match decode_status(&body) {
                Some((post, url)) => Sent::Applied(Posted { post, url, record: None }),
                None => Sent::Unknown,
            },
            Some((401 | 403, _)) => Sent::Rejected(Code::ConnectorAuth),
            // Throttled or failing: the status may or may not exist; the key decides on retry.
            Some((429 | 500..=599, _)) | None => Sent::Unknown,
            // The instance refused this status as invalid.
            Some((400 | 422, _)) => Sent::Refused(Refusal::Invalid),
            Some(_) => Sent::Refused(Refusal::Failed),
        }
    }

    async fn read_back(&self, lookup: Lookup<'_>) -> Result<Found, ReadBackFailed> {
        let Some(id) = lookup.posted else { return Ok(Found::Missing) };
        match Self::answer(self.get(&format!("/api/v1/statuses/{id}/source"))).await {
            Some((200, body)) => {
                let (post, text) = decode_source(&body).ok_or(ReadBackFailed)?;
                if post != *id {
                    return Err(ReadBackFailed);
                }
                // The source has no thread: the status says what it replies to.
                let replying_to = match Self::answer(self.get(&format!("/api/v1/statuses/{id}"))).await {
                    Some((200, status)) => decode_in_reply_to(&status).ok_or(ReadBackFailed)?,
                    _ => return Err(ReadBackFailed),
                };
                Ok(Found::Post { post, body: text, record: None, replying_to })
            }
            Some((404, _)) => Ok(Found::Missing),
            _ => Err(ReadBackFailed),
        }
    }

    async fn check(&self) -> Result<Checked, Code> {
        match Self::answer(self.get("/api/v1/accounts/verify_credentials")).await {
            Some((200, body)) if serde_json::from_slice::<Value>(&body).is_ok_and(|v| v.get("id").is_some()) => {
                Ok(Checked::Accepted { max_characters: self.max_characters().await })
            }
            Some((401 | 403, _)) => Err(Code::ConnectorAuth),
            _ => Err(Code::ConnectorFailed),
        }
    }

    async fn engagement(&self, post: Asked<'_>) -> Measurement {
        match Self::answer(self.get(&format!("/api/v1/statuses/{}", post.posted.post))).await {
            Some((200, body)) => decode_mastodon_counts(&body).map(Measured::Counts).ok_or(MeasureFailed),
            Some((404 | 410, _)) => Ok(Measured::Gone),
            _ => Err(MeasureFailed),
        }
    }

    async fn trends(&self) -> Result<Vec<PublicTrend>, MeasureFailed> {
        let mut found = Vec::new();
        for (path, decode) in [
            ("/api/v1/trends/tags", decode_mastodon_tags as fn(&[u8]) -> Option<Vec<PublicTrend>>),
            ("/api/v1/trends/links", decode_mastodon_links),
        ] {
            let request = self.http.get(self.url(path)).query(&[("limit", MAX_TRENDS)]);
            match Self::answer(request).await {
                Some((200, body)) => found.extend(decode(&body).ok_or(MeasureFailed)?),
                // An instance with trends turned off, or not showing them to the public.
                Some((401 | 403 | 404, _)) => {}
                _ => return Err(MeasureFailed),
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests;
