//! LinkedIn, over its Posts API (`/rest/posts`) with an OAuth 2.0 access token of a member, or
//! of an administrator of the organization that is the author ([`crate::oauth`] refreshes it).
//!
//! - A post is `POST /rest/posts` with the `LinkedIn-Version` and
//!   `X-Restli-Protocol-Version: 2.0.0` headers: the author's URN, the text as `commentary` in
//!   LinkedIn's "little" text format ([`little_text`]), public, in the main feed. The answer's
//!   `x-restli-id` header is the post's URN, kept as the receipt.
//! - Read-back is `GET /rest/posts/{urn}`; its commentary is turned back into the text it says
//!   ([`plain_text`]).
//! - LinkedIn takes no idempotency key. A create whose answer was lost is resolved before any
//!   retry by listing the author's recent posts (`GET /rest/posts?q=author`) and looking for the
//!   publication's marker: its own text, in a post created since its claim. Readers see nothing
//!   added, since the marker is the post itself; and the text names one post, because LinkedIn
//!   refuses a second post with the same text from one author (`DUPLICATE_POST`). So a retry
//!   follows only a listing that proves the post absent, and a retry that meets
//!   `DUPLICATE_POST` is resolved by listing again, never by posting twice.
//! - Refusals: a 401 that a refreshed token does not cure, or a 403, is `connector_auth`; a 426
//!   (a `LinkedIn-Version` no longer served) is `invalid_config`;
//!   `DUPLICATE_POST` is `connector_duplicate`; another 400 or 422 is `connector_refused`; a
//!   429 is `connector_throttled`, until its `Retry-After`, or else the next midnight UTC, when
//!   LinkedIn's daily quotas reset. A 5xx or no answer is unknown, for the listing to resolve.
//! - `channels check` lists the author's latest post (`count=1`), posting nothing; a 426 there
//!   (a `LinkedIn-Version` LinkedIn no longer serves) is `invalid_config`.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use harmonia_contracts::Code;
use harmonia_contracts::domain::ConnectorKind;
use harmonia_contracts::ids::{PostId, WorkspaceId};
use serde::Deserialize;
use serde_json::json;

use super::oauth::Session;
use super::{Checked, Connector, Found, Lookup, Outgoing, Posted, ReadBackFailed, Refusal, Reply, Sent};

/// The longest answer read from LinkedIn (512 KiB): a listing of 50 posts is well under it.
pub const MAX_LINKEDIN_RESPONSE_BYTES: usize = 512 << 10;

/// The `LinkedIn-Version` sent unless the channel names another (`YYYYMM`).
pub const DEFAULT_VERSION: &str = "202605";

/// How many of the author's latest posts a lost answer is looked for among.
pub const LISTED_POSTS: u32 = 50;

/// How much earlier than its claim a post may say it was created: the platform's clock is not
/// this machine's.
pub const CLOCK_SKEW: chrono::Duration = chrono::Duration::minutes(10);

/// Where and as whom to post.
#[derive(Clone, Debug)]
pub struct LinkedinConfig {
    /// The API's base URL, `https://api.linkedin.com`.
    pub api: String,
    /// The author: `urn:li:person:…` or `urn:li:organization:…`.
    pub author: String,
    /// The `LinkedIn-Version` header (`YYYYMM`).
    pub version: String,
    /// Timeout of each request.
    pub timeout: Duration,
}

/// The LinkedIn connector.
#[derive(Debug)]
pub struct Linkedin {
    config: LinkedinConfig,
    http: reqwest::Client,
    session: Session,
}

/// The characters LinkedIn's little text format reserves: each is escaped with a backslash to
/// be plain text.
const RESERVED: &[char] = &['\\', '|', '{', '}', '@', '[', ']', '(', ')', '<', '>', '#', '*', '_', '~'];

/// `text` as little-format commentary: every reserved character escaped, except the `#` that
/// opens a hashtag (at the start or after a space, followed by a letter or digit), which stays
/// a hashtag.
pub fn little_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut previous: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let hashtag =
            c == '#' && previous.is_none_or(char::is_whitespace) && chars.peek().is_some_and(|n| n.is_alphanumeric());
        if RESERVED.contains(&c) && !hashtag {
            out.push('\\');
        }
        out.push(c);
        previous = Some(c);
    }
    out
}

/// The text little-format `commentary` says: escapes undone, a hashtag template
/// (`{hashtag|\#|word}`) as `#word`, a mention (`@[Name](urn:…)`) as `@Name`.
pub fn plain_text(commentary: &str) -> String {
    let mut out = String::with_capacity(commentary.len());
    let mut rest = commentary;
    while let Some(c) = rest.chars().next() {
        if c == '\\' {
            let escaped = rest[1..].chars().next();
            out.push(escaped.unwrap_or('\\'));
            rest = &rest[1 + escaped.map_or(0, char::len_utf8)..];
        } else if let Some((tag, after)) = template(rest, "{hashtag|\\#|") {
            out.push('#');
            out.push_str(&plain_text(tag));
            rest = after;
        } else if let Some((name, after)) = mention(rest) {
            out.push('@');
            out.push_str(&plain_text(name));
            rest = after;
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// `{hashtag|\#|word}` at the start of `text`: the word and what follows the template.
fn template<'a>(text: &'a str, opening: &str) -> Option<(&'a str, &'a str)> {
    let inner = text.strip_prefix(opening)?;
    let end = inner.find('}')?;
    Some((&inner[..end], &inner[end + 1..]))
}

/// `@[Name](urn:…)` at the start of `text`: the name and what follows the mention.
fn mention(text: &str) -> Option<(&str, &str)> {
    let inner = text.strip_prefix("@[")?;
    let close = inner.find("](")?;
    let after = &inner[close + 2..];
    let end = after.find(')')?;
    after[..end].starts_with("urn:li:").then(|| (&inner[..close], &after[end + 1..]))
}

/// A post as the Posts API answers it (the fields read).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Post {
    id: String,
    #[serde(default)]
    author: Option<String>,
    #[serde(default)]
    commentary: Option<String>,
    #[serde(default)]
    created_at: Option<i64>,
}

/// A listing's page (the fields read).
#[derive(Deserialize)]
struct Listing {
    elements: Vec<Post>,
}

/// A post as read back: its URN, author, text (as [`plain_text`] reads its commentary) and
/// creation time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadPost {
    /// Its URN.
    pub urn: PostId,
    /// Its author's URN.
    pub author: Option<String>,
    /// Its text.
    pub text: String,
    /// When it was created.
    pub created_at: Option<DateTime<Utc>>,
}

impl From<Post> for Option<ReadPost> {
    fn from(post: Post) -> Self {
        Some(ReadPost {
            urn: post.id.parse().ok()?,
            author: post.author,
            text: plain_text(&post.commentary.unwrap_or_default()),
            created_at: post.created_at.and_then(DateTime::from_timestamp_millis),
        })
    }
}

/// A `GET /rest/posts/{urn}` answer, if the bytes are one.
pub fn decode_post(bytes: &[u8]) -> Option<ReadPost> {
    if bytes.len() > MAX_LINKEDIN_RESPONSE_BYTES {
        return None;
    }
    serde_json::from_slice::<Post>(bytes).ok()?.into()
}

/// A finder answer's posts (`{"elements": [...]}`), if the bytes are one; a post whose URN is
/// not an id is left out.
pub fn decode_listing(bytes: &[u8]) -> Option<Vec<ReadPost>> {
    if bytes.len() > MAX_LINKEDIN_RESPONSE_BYTES {
        return None;
    }
    let listing: Listing = serde_json::from_slice(bytes).ok()?;
    Some(listing.elements.into_iter().filter_map(Into::into).collect())
}

/// Whether a LinkedIn error answer says the post duplicates one the author holds
/// (`DUPLICATE_POST` among its input errors, or its message saying so).
pub fn is_duplicate(bytes: &[u8]) -> bool {
    if bytes.len() > MAX_LINKEDIN_RESPONSE_BYTES {
        return false;
    }
    let Ok(error) = serde_json::from_slice::<serde_json::Value>(bytes) else { return false };
    let coded = error
        .pointer("/errorDetails/inputErrors")
        .and_then(|e| e.as_array())
        .is_some_and(|errors| errors.iter().any(|e| e["code"] == "DUPLICATE_POST"));
    coded || error["message"].as_str().is_some_and(|m| m.contains("Content is a duplicate of"))
}

/// What a refused create means: `Ok` with the refusal, `Err` with the code of a refusal of the
/// credentials. `retry_after` is the `Retry-After` header's seconds, when sent.
pub fn refusal(status: u16, body: &[u8], retry_after: Option<u64>, now: DateTime<Utc>) -> Result<Refusal, Code> {
    match status {
        401 | 403 => Err(Code::ConnectorAuth),
        400 | 422 if is_duplicate(body) => Ok(Refusal::Duplicate),
        400 | 422 => Ok(Refusal::Invalid),
        // A `LinkedIn-Version` LinkedIn no longer serves: the channel's configuration.
        426 => Err(Code::InvalidConfig),
        429 => {
            let until = match retry_after {
                Some(seconds) => now + chrono::Duration::seconds(i64::try_from(seconds.min(86_400 * 7)).unwrap_or(0)),
                None => (now + chrono::Duration::days(1)).date_naive().and_time(chrono::NaiveTime::MIN).and_utc(),
            };
            Ok(Refusal::Throttled(Some(until)))
        }
        _ => Ok(Refusal::Failed),
    }
}

impl Linkedin {
    /// A connector posting as `config`'s author with `session`'s token; no call is made until
    /// the first post.
    pub fn new(config: LinkedinConfig, session: Session, http: reqwest::Client) -> Self {
        let config = LinkedinConfig { api: config.api.trim_end_matches('/').to_owned(), ..config };
        Self { config, http, session }
    }

    fn request(&self, method: reqwest::Method, path: &str, token: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.config.api))
            .bearer_auth(token)
            .header("LinkedIn-Version", &self.config.version)
            .header("X-Restli-Protocol-Version", "2.0.0")
    }

    /// `path` answered with a GET, read under the bound; `None` when there is no answer.
    async fn get(&self, path: &str, finder: bool) -> Option<Reply> {
        let response = self
            .session
            .send(|token| {
                let request = self.request(reqwest::Method::GET, path, token);
                if finder { request.header("X-RestLi-Method", "FINDER") } else { request }
            })
            .await?;
        Reply::read(response, MAX_LINKEDIN_RESPONSE_BYTES, "LinkedIn").await
    }

    /// The author's latest posts, newest first (at most `count`).
    async fn listing(&self, count: u32) -> Option<Reply> {
        let author = urlencode(&self.config.author);
        self.get(&format!("/rest/posts?author={author}&q=author&count={count}&sortBy=CREATED"), true).await
    }

    /// The post made for `lookup`, found among the author's latest by its text and time.
    async fn find(&self, lookup: &Lookup<'_>) -> Result<Found, ReadBackFailed> {
        let reply = self.listing(LISTED_POSTS).await.ok_or(ReadBackFailed)?;
        if reply.status != 200 {
            return Err(ReadBackFailed);
        }
        let posts = decode_listing(&reply.body).ok_or(ReadBackFailed)?;
        let found = posts.into_iter().find(|p| {
            p.text == lookup.body
                && p.author.as_deref().is_none_or(|a| a == self.config.author)
                && p.created_at.is_none_or(|at| at >= lookup.since - CLOCK_SKEW)
        });
        Ok(match found {
            Some(p) => Found::Post { post: p.urn, body: p.text, record: None, replying_to: None },
            None => Found::Missing,
        })
    }

    fn public_url(urn: &PostId) -> String {
        format!("https://www.linkedin.com/feed/update/{urn}/")
    }
}

/// `text` percent-encoded for a URL's path or query (URNs carry colons).
fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[async_trait]
impl Connector for Linkedin {
    fn kind(&self) -> ConnectorKind {
        ConnectorKind::Linkedin
    }

    async fn create(&self, _workspace: &WorkspaceId, post: &Outgoing) -> Sent {
        // A LinkedIn post has no thread to join: a plan never makes one there.
        if post.reply.is_some() {
            return Sent::Refused(Refusal::Invalid);
        }
        let body = json!({
            "author": self.config.author,
            "commentary": little_text(&post.body),
            "visibility": "PUBLIC",
            "distribution": {"feedDistribution": "MAIN_FEED", "targetEntities": [], "thirdPartyDistributionChannels": []},
            "lifecycleState": "PUBLISHED",
            "isReshareDisabledByAuthor": false,
        });
        let answered =
            self.session.send(|token| self.request(reqwest::Method::POST, "/rest/posts", token).json(&body)).await;
        let Some(reply) = answered else { return Sent::Unknown };
        let urn = reply.headers().get("x-restli-id").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
        let retry_after = reply.headers().get("retry-after").and_then(|v| v.to_str().ok()?.trim().parse().ok());
        let Some(reply) = Reply::read(reply, MAX_LINKEDIN_RESPONSE_BYTES, "LinkedIn").await else {
            return Sent::Unknown;
        };
        match (reply.status, urn) {
            (200..=299, Some(urn)) => {
                Sent::Applied(Posted { url: Some(Self::public_url(&urn)), post: urn, record: None })
            }
            // Created, but the receipt is not in the answer: the listing finds it.
            (200..=299, None) | (500..=599, _) => Sent::Unknown,
            (status, _) => match refusal(status, &reply.body, retry_after, Utc::now()) {
                Ok(refused) => Sent::Refused(refused),
                Err(code) => Sent::Rejected(code),
            },
        }
    }

    async fn read_back(&self, lookup: Lookup<'_>) -> Result<Found, ReadBackFailed> {
        let Some(urn) = lookup.posted else { return self.find(&lookup).await };
        let reply = self.get(&format!("/rest/posts/{}", urlencode(urn.as_str())), false).await.ok_or(ReadBackFailed)?;
        match reply.status {
            200 => {
                let post = decode_post(&reply.body).ok_or(ReadBackFailed)?;
                if post.urn != *urn || post.author.as_deref().is_some_and(|a| a != self.config.author) {
                    return Err(ReadBackFailed);
                }
                Ok(Found::Post { post: post.urn, body: post.text, record: None, replying_to: None })
            }
            404 | 410 => Ok(Found::Missing),
            _ => Err(ReadBackFailed),
        }
    }

    async fn check(&self) -> Result<Checked, Code> {
        match self.listing(1).await.map(|r| (r.status, decode_listing(&r.body).is_some())) {
            Some((200, true)) => Ok(Checked::Accepted { max_characters: None }),
            Some((401 | 403, _)) => Err(Code::ConnectorAuth),
            // LinkedIn no longer serves the `LinkedIn-Version` asked for (it sunsets each one
            // after a year): the channel's `api_version` needs a newer month.
            Some((426, _)) => Err(Code::InvalidConfig),
            _ => Err(Code::ConnectorFailed),
        }
    }
}

#[cfg(test)]
mod tests;
