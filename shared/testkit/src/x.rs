//! A recorded X: a local axum server answering X's API v2 and its token endpoint with the X
//! connector's recordings (`shared/connectors/src/x/recordings`, bodies in the documented wire
//! format), for the connector's own tests and the end-to-end ones.
//!
//! It holds the posts created on it, as X would:
//! - every call needs the access token in force ([`crate::oauth::Grants`]; X rotates refresh
//!   tokens, and so does this server);
//! - a post with the same text as one the account holds is refused (403, duplicate content);
//! - a post reads back with `&`, `<` and `>` as HTML entities and each link as a `t.co` link,
//!   described in `entities.urls` with the link expanded (`http://` added to a bare domain);
//! - a post it does not hold reads back as a `200` with a `resource-not-found` error;
//! - the account's timeline lists its posts since `start_time`, newest first.
//!
//! A test steers it: answers to give instead of the next creates ([`Platform::failures`]), an
//! answer cut after the post is made ([`Platform::lose_next_answer`]), an expired token, counts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::oauth::{Grants, Rotation};
use crate::recorded::Platform;

/// The access token the server accepts first.
pub const TOKEN: &str = "x-token-for-tests";
/// The refresh token in force first.
pub const REFRESH: &str = "x-refresh-for-tests";
/// The OAuth client.
pub const CLIENT_ID: &str = "x-client";
/// The OAuth client's secret.
pub const CLIENT_SECRET: &str = "x-client-secret";
/// The reset the recorded 429 states (`x-rate-limit-reset`, Unix seconds): 2030-01-01.
pub const RATE_LIMIT_RESET: i64 = 1_893_456_000;

/// The recording `name` (a file of the connector's recordings folder).
pub fn recording(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../connectors/src/x/recordings").join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).expect("recording")).expect("recording JSON")
}

/// A post the server holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// Its id.
    pub id: String,
    /// Its text, as posted.
    pub text: String,
    /// The post it replies to, when it is a reply.
    pub in_reply_to: Option<String>,
    /// When it was created.
    pub created_at: chrono::DateTime<chrono::Utc>,
}

/// The server's state, which a test reads and steers (the posts, creates, failures and
/// tokens of [`Platform`], and the posts' counts).
#[derive(Clone)]
pub struct Server {
    platform: Platform<Held>,
    /// Likes, reposts, replies and quotes of a post, by id (none set: zero).
    pub counts: Arc<Mutex<HashMap<String, [u64; 4]>>>,
}

impl std::ops::Deref for Server {
    type Target = Platform<Held>;

    fn deref(&self) -> &Platform<Held> {
        &self.platform
    }
}

impl Server {
    fn make(&self, text: &str, in_reply_to: Option<String>) -> Held {
        let id = format!("1445880548472328{:03}", 192 + self.count());
        self.hold(Held { id, text: text.to_owned(), in_reply_to, created_at: chrono::Utc::now() })
    }
}

/// The account's user id (the recorded `users-me.json`'s).
pub fn user_id() -> String {
    recording("users-me.json")["data"]["id"].as_str().unwrap_or_default().to_owned()
}

fn answer(status: u16, name: &str) -> Response {
    (StatusCode::from_u16(status).expect("status"), Json(recording(name))).into_response()
}

/// Whether `word` is a link X would shorten: with a scheme, or a bare domain with a path.
fn is_link(word: &str) -> bool {
    if word.starts_with("https://") || word.starts_with("http://") {
        return true;
    }
    let host = word.split('/').next().unwrap_or_default();
    let labels: Vec<&str> = host.split('.').collect();
    labels.len() >= 2
        && labels.iter().all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        && labels.last().is_some_and(|tld| tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_alphabetic()))
}

/// A held post as X answers it: text escaped, links as `t.co` with their entities.
fn tweet_of(held: &Held, counts: [u64; 4], recorded: &str) -> Value {
    let mut text = String::new();
    let mut urls = Vec::new();
    for (n, piece) in held.text.split_inclusive(char::is_whitespace).enumerate() {
        let word = piece.trim_end();
        let link = word.trim_end_matches(['.', ',', ')', '!', '?', ';', ':']);
        if is_link(link) {
            let short = format!("https://t.co/{:010}", n + 1000 * held.text.len());
            let expanded = if link.contains("://") { link.to_owned() } else { format!("http://{link}") };
            urls.push(json!({"url": short, "expanded_url": expanded, "display_url": link}));
            text.push_str(&piece.replacen(link, &short, 1));
        } else {
            text.push_str(piece);
        }
    }
    let text = text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let mut tweet = recording(recorded)["data"].clone();
    let tweet = if tweet.is_array() { tweet[0].take() } else { tweet };
    let mut tweet = tweet;
    tweet["id"] = Value::String(held.id.clone());
    tweet["edit_history_tweet_ids"] = json!([held.id]);
    tweet["text"] = Value::String(text);
    tweet["author_id"] = Value::String(user_id());
    tweet["created_at"] = Value::String(held.created_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    tweet["entities"] = json!({"urls": urls});
    if let Some(parent) = &held.in_reply_to {
        tweet["referenced_tweets"] = json!([{"type": "replied_to", "id": parent}]);
    }
    if recorded == "tweet.json" {
        let [likes, reposts, replies, quotes] = counts;
        tweet["public_metrics"] = json!({
            "retweet_count": reposts, "reply_count": replies, "like_count": likes,
            "quote_count": quotes, "bookmark_count": 0, "impression_count": 0,
        });
    }
    tweet
}

/// A recorded refusal; a 429 carries X's rate-limit headers.
fn refused(status: u16, name: &'static str) -> Response {
    let mut refused = answer(status, name);
    if status == 429 {
        let headers = refused.headers_mut();
        headers.insert("x-rate-limit-limit", 100.into());
        headers.insert("x-rate-limit-remaining", 0.into());
        headers.insert("x-rate-limit-reset", RATE_LIMIT_RESET.into());
    }
    refused
}

async fn create(State(s): State<Server>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    if !s.grants.authorised(&headers) {
        s.creates.lock().expect("lock").push(body);
        return answer(401, "error-unauthorized.json");
    }
    let text = body["text"].as_str().unwrap_or_default().to_owned();
    let parent = body.pointer("/reply/in_reply_to_tweet_id").and_then(Value::as_str).map(str::to_owned);
    if let Some(instead) = s.instead(&body, || drop(s.make(&text, parent.clone())), refused) {
        return instead;
    }
    if text.trim().is_empty() {
        return answer(400, "error-invalid-request.json");
    }
    if s.posts.lock().expect("lock").iter().any(|p| p.text == text) {
        return answer(403, "error-duplicate.json");
    }
    let held = s.make(&text, parent);
    let mut created = recording("create.json");
    created["data"]["id"] = Value::String(held.id.clone());
    created["data"]["edit_history_tweet_ids"] = json!([held.id]);
    created["data"]["text"] = Value::String(held.text);
    (StatusCode::CREATED, Json(created)).into_response()
}

async fn read(State(s): State<Server>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    if !s.grants.authorised(&headers) {
        return answer(401, "error-unauthorized.json");
    }
    let held = s.posts.lock().expect("lock").iter().find(|p| p.id == id).cloned();
    let Some(held) = held else {
        let mut missing = recording("tweet-not-found.json");
        for key in ["value", "resource_id"] {
            missing["errors"][0][key] = Value::String(id.clone());
        }
        missing["errors"][0]["detail"] = Value::String(format!("Could not find tweet with id: [{id}]."));
        return (StatusCode::OK, Json(missing)).into_response();
    };
    let counts = s.counts.lock().expect("lock").get(&id).copied().unwrap_or_default();
    (StatusCode::OK, Json(json!({"data": tweet_of(&held, counts, "tweet.json")}))).into_response()
}

async fn me(State(s): State<Server>, headers: HeaderMap) -> Response {
    if s.grants.authorised(&headers) { answer(200, "users-me.json") } else { answer(401, "error-unauthorized.json") }
}

async fn timeline(
    State(s): State<Server>,
    headers: HeaderMap,
    Path(user): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    if !s.grants.authorised(&headers) {
        return answer(401, "error-unauthorized.json");
    }
    let query: HashMap<String, String> = crate::oauth::form_fields(&query.unwrap_or_default()).into_iter().collect();
    let since = query
        .get("start_time")
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map_or(chrono::DateTime::UNIX_EPOCH, |t| t.to_utc());
    let max = query.get("max_results").and_then(|m| m.parse().ok()).unwrap_or(10usize);
    let posts: Vec<Value> = if user == user_id() {
        let held = s.posts.lock().expect("lock");
        held.iter()
            .rev()
            .filter(|p| p.created_at >= since)
            .take(max)
            .map(|p| tweet_of(p, [0; 4], "timeline.json"))
            .collect()
    } else {
        Vec::new()
    };
    if posts.is_empty() {
        return answer(200, "timeline-empty.json");
    }
    let mut page = recording("timeline.json");
    page["meta"] = json!({
        "result_count": posts.len(),
        "newest_id": posts[0]["id"],
        "oldest_id": posts[posts.len() - 1]["id"],
    });
    page["data"] = Value::Array(posts);
    (StatusCode::OK, Json(page)).into_response()
}

/// Serve a new X on a free local port, for the rest of the process: its state, the API's base
/// URL and the token endpoint's URL.
pub async fn start() -> (Server, String, String) {
    let grants = Grants::new(TOKEN, REFRESH, Rotation::Rotates, CLIENT_ID, CLIENT_SECRET);
    let s = Server { platform: Platform::new(grants), counts: Arc::default() };
    let app = axum::Router::new()
        .route("/2/tweets", post(create))
        .route("/2/tweets/{id}", get(read))
        .route("/2/users/me", get(me))
        .route("/2/users/{id}/tweets", get(timeline))
        .route("/2/oauth2/token", s.token_endpoint(recording))
        .with_state(s.clone());
    let url = s.serve(app).await;
    (s, url.clone(), format!("{url}/2/oauth2/token"))
}
