//! X, over its API v2 with an OAuth 2.0 user-context token (scopes `tweet.read tweet.write
//! users.read offline.access`); [`crate::oauth`] refreshes it, and X rotates the refresh token
//! at each refresh.
//!
//! - A post is `POST /2/tweets` with `{"text": …}`; the answer's `data.id` is the receipt.
//! - Read-back is `GET /2/tweets/{id}`. X gives the text back with `&`, `<` and `>` as HTML
//!   entities and each link replaced by a `t.co` link whose `entities.urls` entry holds it
//!   expanded; [`restore_text`] undoes both against the text that was sent.
//! - X takes no idempotency key. A create whose answer was lost is resolved before any retry
//!   by listing the account's posts since the claim (`GET /2/users/{id}/tweets?start_time=…`)
//!   and looking for the publication's marker: its own text. Readers see nothing added, and
//!   the text names one post, because X refuses the same text twice from one account (a 403
//!   for duplicate content). A retry follows only a listing that proves the post absent, and a
//!   retry refused as a duplicate is resolved by listing again, never by a second create.
//! - Refusals: a 401 that a refreshed token does not cure, or a 403 other than duplicate
//!   content, is `connector_auth`; duplicate content is `connector_duplicate`; a 400 or 422 is
//!   `connector_refused`; a 429 is `connector_throttled` until the reset X gives (the 24-hour
//!   limit's when that is the one spent, else `x-rate-limit-reset`). A 5xx or no answer is
//!   unknown, for the listing to resolve.
//! - `channels check` is `GET /2/users/me`. Engagement is the post's `public_metrics`.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use harmonia_contracts::Code;
use harmonia_contracts::domain::ConnectorKind;
use harmonia_contracts::ids::{PostId, WorkspaceId};
use serde::Deserialize;
use serde_json::json;
use tokio::sync::OnceCell;

use super::engagement::{Asked, Engagement, MeasureFailed, Measured, Measurement};
use super::linkedin::CLOCK_SKEW;
use super::oauth::Session;
use super::{Checked, Connector, Found, Lookup, Outgoing, Posted, ReadBackFailed, Refusal, Reply, Sent};

/// The longest answer read from X (512 KiB): a page of 100 posts is well under it.
pub const MAX_X_RESPONSE_BYTES: usize = 512 << 10;

/// The fields a post is read back with: its author, time, links and what it replies to.
const READ_FIELDS: &str = "created_at,author_id,entities,referenced_tweets";

/// How many of the account's posts since a claim a lost answer is looked for among.
pub const LISTED_POSTS: u32 = 100;

/// Where to post.
#[derive(Clone, Debug)]
pub struct XConfig {
    /// The API's base URL, `https://api.x.com`.
    pub api: String,
    /// Timeout of each request.
    pub timeout: Duration,
}

/// The X connector.
#[derive(Debug)]
pub struct X {
    config: XConfig,
    http: reqwest::Client,
    session: Session,
    /// The account's user id, read once.
    me: OnceCell<String>,
}

#[derive(Deserialize)]
struct Data<T> {
    data: T,
}

#[derive(Deserialize)]
struct Created {
    id: String,
}

#[derive(Deserialize)]
struct Me {
    id: String,
}

#[derive(Default, Deserialize)]
struct Entities {
    #[serde(default)]
    urls: Vec<UrlEntity>,
}

#[derive(Deserialize)]
struct UrlEntity {
    url: String,
    #[serde(default)]
    expanded_url: Option<String>,
}

#[derive(Deserialize)]
struct Metrics {
    like_count: u64,
    retweet_count: u64,
    reply_count: u64,
    #[serde(default)]
    quote_count: Option<u64>,
}

#[derive(Deserialize)]
struct Referenced {
    #[serde(rename = "type")]
    kind: String,
    id: String,
}

#[derive(Deserialize)]
struct Tweet {
    id: String,
    text: String,
    #[serde(default)]
    referenced_tweets: Vec<Referenced>,
    #[serde(default)]
    author_id: Option<String>,
    #[serde(default)]
    created_at: Option<DateTime<Utc>>,
    #[serde(default)]
    entities: Option<Entities>,
    #[serde(default)]
    public_metrics: Option<Metrics>,
}

/// A post as X answers it: its id, author, text as X holds it (entities escaped, links as
/// `t.co`), its links (`t.co` and expanded), creation time and counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadTweet {
    /// Its id.
    pub id: PostId,
    /// Its author's user id.
    pub author: Option<String>,
    /// Its text, as X answers it.
    pub text: String,
    /// Its links: each `t.co` link with the link it stands for.
    pub links: Vec<(String, String)>,
    /// When it was created.
    pub created_at: Option<DateTime<Utc>>,
    /// Its public counts.
    pub counts: Option<Engagement>,
    /// The post it replies to, when it is a reply.
    pub replying_to: Option<PostId>,
}

impl From<Tweet> for Option<ReadTweet> {
    fn from(t: Tweet) -> Self {
        let links = t.entities.unwrap_or_default().urls;
        let replying_to = match t.referenced_tweets.iter().find(|r| r.kind == "replied_to") {
            Some(parent) => Some(parent.id.parse().ok()?),
            None => None,
        };
        Some(ReadTweet {
            replying_to,
            id: t.id.parse().ok()?,
            author: t.author_id,
            text: t.text,
            links: links.into_iter().filter_map(|u| Some((u.url, u.expanded_url?))).collect(),
            created_at: t.created_at,
            counts: t.public_metrics.map(|m| Engagement {
                likes: m.like_count,
                reposts: m.retweet_count,
                replies: m.reply_count,
                quotes: m.quote_count,
            }),
        })
    }
}

fn bounded(bytes: &[u8]) -> Option<&[u8]> {
    (bytes.len() <= MAX_X_RESPONSE_BYTES).then_some(bytes)
}

/// A create's answer (`{"data": {"id", "text"}}`): the new post's id.
pub fn decode_created(bytes: &[u8]) -> Option<PostId> {
    serde_json::from_slice::<Data<Created>>(bounded(bytes)?).ok()?.data.id.parse().ok()
}

/// `GET /2/users/me`'s answer: the account's user id.
pub fn decode_me(bytes: &[u8]) -> Option<String> {
    let id = serde_json::from_slice::<Data<Me>>(bounded(bytes)?).ok()?.data.id;
    (!id.is_empty() && id.len() <= 32 && id.bytes().all(|b| b.is_ascii_digit())).then_some(id)
}

/// What `GET /2/tweets/{id}` answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookedup {
    /// The post.
    Post(ReadTweet),
    /// X does not know it: deleted, or never made (X answers this with a 200 and an error of
    /// type `resource-not-found`).
    NotFound,
}

/// `GET /2/tweets/{id}`'s answer, if the bytes are one.
pub fn decode_tweet(bytes: &[u8]) -> Option<Lookedup> {
    let value: serde_json::Value = serde_json::from_slice(bounded(bytes)?).ok()?;
    if value.get("data").is_none() {
        let errors = value.get("errors")?.as_array()?;
        let gone = errors.iter().any(|e| e["type"].as_str().is_some_and(|t| t.ends_with("/resource-not-found")));
        return gone.then_some(Lookedup::NotFound);
    }
    let tweet: Data<Tweet> = serde_json::from_value(value).ok()?;
    Option::<ReadTweet>::from(tweet.data).map(Lookedup::Post)
}

/// A timeline page's posts (`{"data": [...], "meta": …}`; no `data` when there are none).
pub fn decode_timeline(bytes: &[u8]) -> Option<Vec<ReadTweet>> {
    let value: serde_json::Value = serde_json::from_slice(bounded(bytes)?).ok()?;
    value.get("meta")?;
    let Some(data) = value.get("data") else { return Some(Vec::new()) };
    let tweets: Vec<Tweet> = serde_json::from_value(data.clone()).ok()?;
    Some(tweets.into_iter().filter_map(Into::into).collect())
}

/// Whether an X error answer says the post duplicates one the account holds.
pub fn is_duplicate(bytes: &[u8]) -> bool {
    let Some(error) = bounded(bytes).and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok()) else {
        return false;
    };
    // API v2's problem `detail`, or an `errors[].message` as older answers word it ("Status is
    // a duplicate.").
    let messages = error["errors"].as_array().into_iter().flatten().map(|e| &e["message"]);
    std::iter::once(&error["detail"])
        .chain(messages)
        .filter_map(serde_json::Value::as_str)
        .any(|m| m.to_ascii_lowercase().contains("duplicate"))
}

/// X's rate-limit headers on a 429, as Unix seconds: the window's reset, and each 24-hour
/// limit's remaining count and reset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// `x-rate-limit-reset`.
    pub reset: Option<i64>,
    /// `x-user-limit-24hour-remaining` and `x-user-limit-24hour-reset`.
    pub user_day: (Option<i64>, Option<i64>),
    /// `x-app-limit-24hour-remaining` and `x-app-limit-24hour-reset`.
    pub app_day: (Option<i64>, Option<i64>),
}

impl Limits {
    fn of(headers: &reqwest::header::HeaderMap) -> Self {
        let n = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()?.trim().parse().ok());
        Self {
            reset: n("x-rate-limit-reset"),
            user_day: (n("x-user-limit-24hour-remaining"), n("x-user-limit-24hour-reset")),
            app_day: (n("x-app-limit-24hour-remaining"), n("x-app-limit-24hour-reset")),
        }
    }

    /// When posting is allowed again: a spent 24-hour limit's reset, else the window's.
    pub fn until(self) -> Option<DateTime<Utc>> {
        let spent = [self.user_day, self.app_day].into_iter().filter(|(left, _)| *left == Some(0)).filter_map(|d| d.1);
        spent.max().or(self.reset).and_then(|s| DateTime::from_timestamp(s, 0))
    }
}

/// What a refused create means: `Ok` with the refusal, `Err` with the code of a refusal of the
/// credentials.
pub fn refusal(status: u16, body: &[u8], limits: Limits) -> Result<Refusal, Code> {
    match status {
        403 if is_duplicate(body) => Ok(Refusal::Duplicate),
        401 | 403 => Err(Code::ConnectorAuth),
        400 | 422 => Ok(Refusal::Invalid),
        429 => Ok(Refusal::Throttled(limits.until())),
        _ => Ok(Refusal::Failed),
    }
}

/// `&amp;`, `&lt;` and `&gt;` as the characters X escaped.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

/// A link compared as X expands it: without its scheme, a trailing slash or case in its host.
fn same_link(expanded: &str, written: &str) -> bool {
    let bare = |l: &str| {
        let l = l.strip_prefix("https://").or_else(|| l.strip_prefix("http://")).unwrap_or(l);
        let l = l.trim_end_matches('/');
        match l.split_once('/') {
            Some((host, path)) => format!("{}/{path}", host.to_ascii_lowercase()),
            None => l.to_ascii_lowercase(),
        }
    };
    bare(expanded) == bare(written)
}

/// The text of a post as X answers it (`text`, its `links`), given back as it was written in
/// `sent`: entities unescaped, and each `t.co` link as the link `sent` wrote there when X
/// expands it to that, else as X expanded it (so a changed link shows as a changed text).
pub fn restore_text(text: &str, links: &[(String, String)], sent: &str) -> String {
    let mut out = unescape(text);
    let mut written = harmonia_policy::links(sent).into_iter();
    for (short, expanded) in links {
        let Some(at) = out.find(short.as_str()) else { continue };
        let original = written.next().filter(|w| same_link(expanded, w)).unwrap_or(expanded);
        out.replace_range(at..at + short.len(), original);
    }
    out
}

impl X {
    /// A connector posting with `session`'s token; no call is made until the first post.
    pub fn new(config: XConfig, session: Session, http: reqwest::Client) -> Self {
        let config = XConfig { api: config.api.trim_end_matches('/').to_owned(), ..config };
        Self { config, http, session, me: OnceCell::new() }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.config.api)
    }

    /// `path` answered with a GET and `query`, read under the bound.
    async fn get(&self, path: &str, query: &[(&str, &str)]) -> Option<Reply> {
        let response = self.session.send(|token| self.http.get(self.url(path)).bearer_auth(token).query(query)).await?;
        Reply::read(response, MAX_X_RESPONSE_BYTES, "X").await
    }

    /// The account's user id, asked of X (`GET /2/users/me`).
    async fn whoami(&self) -> Result<String, Code> {
        let reply = self.get("/2/users/me", &[]).await.ok_or(Code::ConnectorFailed)?;
        match reply.status {
            200 => decode_me(&reply.body).ok_or(Code::ConnectorFailed),
            401 | 403 => Err(Code::ConnectorAuth),
            _ => Err(Code::ConnectorFailed),
        }
    }

    /// The account's user id, asked once.
    async fn me(&self) -> Result<&str, Code> {
        self.me.get_or_try_init(|| self.whoami()).await.map(String::as_str)
    }

    /// The post made for `lookup`, found among the account's posts since its claim by its text.
    async fn find(&self, lookup: &Lookup<'_>) -> Result<Found, ReadBackFailed> {
        let me = self.me().await.map_err(|_| ReadBackFailed)?.to_owned();
        let since = (lookup.since - CLOCK_SKEW).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let count = LISTED_POSTS.to_string();
        let query = [("max_results", count.as_str()), ("start_time", since.as_str()), ("tweet.fields", READ_FIELDS)];
        let reply = self.get(&format!("/2/users/{me}/tweets"), &query).await.ok_or(ReadBackFailed)?;
        if reply.status != 200 {
            return Err(ReadBackFailed);
        }
        let found = decode_timeline(&reply.body)
            .ok_or(ReadBackFailed)?
            .into_iter()
            .map(|t| {
                let text = restore_text(&t.text, &t.links, lookup.body);
                (t, text)
            })
            .find(|(_, text)| text == lookup.body);
        Ok(match found {
            Some((t, text)) => Found::Post { post: t.id, body: text, record: None, replying_to: t.replying_to },
            None => Found::Missing,
        })
    }

    /// `GET /2/tweets/{id}` with `fields`.
    async fn tweet(&self, id: &PostId, fields: &str) -> Option<(u16, Option<Lookedup>)> {
        let reply = self.get(&format!("/2/tweets/{id}"), &[("tweet.fields", fields)]).await?;
        Some((reply.status, decode_tweet(&reply.body)))
    }

    fn public_url(id: &PostId) -> String {
        format!("https://x.com/i/web/status/{id}")
    }
}

#[async_trait]
impl Connector for X {
    fn kind(&self) -> ConnectorKind {
        ConnectorKind::X
    }

    async fn create(&self, _workspace: &WorkspaceId, post: &Outgoing) -> Sent {
        let mut body = json!({"text": post.body});
        if let Some(reply) = &post.reply {
            body["reply"] = json!({"in_reply_to_tweet_id": reply.parent.post});
        }
        let answered =
            self.session.send(|token| self.http.post(self.url("/2/tweets")).bearer_auth(token).json(&body)).await;
        let Some(response) = answered else { return Sent::Unknown };
        let limits = Limits::of(response.headers());
        let Some(reply) = Reply::read(response, MAX_X_RESPONSE_BYTES, "X").await else { return Sent::Unknown };
        match reply.status {
            200..=299 => match decode_created(&reply.body) {
                Some(id) => Sent::Applied(Posted { url: Some(Self::public_url(&id)), post: id, record: None }),
                None => Sent::Unknown,
            },
            500..=599 => Sent::Unknown,
            status => match refusal(status, &reply.body, limits) {
                Ok(refused) => Sent::Refused(refused),
                Err(code) => Sent::Rejected(code),
            },
        }
    }

    async fn read_back(&self, lookup: Lookup<'_>) -> Result<Found, ReadBackFailed> {
        let Some(id) = lookup.posted else { return self.find(&lookup).await };
        match self.tweet(id, READ_FIELDS).await.ok_or(ReadBackFailed)? {
            (200, Some(Lookedup::Post(t))) if t.id == *id => {
                let me = self.me().await.map_err(|_| ReadBackFailed)?;
                if t.author.as_deref().is_some_and(|a| a != me) {
                    return Err(ReadBackFailed);
                }
                let body = restore_text(&t.text, &t.links, lookup.body);
                Ok(Found::Post { body, post: t.id, record: None, replying_to: t.replying_to })
            }
            (200, Some(Lookedup::NotFound)) | (404, _) => Ok(Found::Missing),
            _ => Err(ReadBackFailed),
        }
    }

    async fn check(&self) -> Result<Checked, Code> {
        self.whoami().await.map(|_| Checked::Accepted { max_characters: None })
    }

    async fn engagement(&self, post: Asked<'_>) -> Measurement {
        match self.tweet(&post.posted.post, "public_metrics").await.ok_or(MeasureFailed)? {
            (200, Some(Lookedup::Post(t))) => t.counts.map(Measured::Counts).ok_or(MeasureFailed),
            (200, Some(Lookedup::NotFound)) | (404, _) => Ok(Measured::Gone),
            _ => Err(MeasureFailed),
        }
    }
}

#[cfg(test)]
mod tests;
