//! A recorded LinkedIn: a local axum server answering LinkedIn's Posts API and its token
//! endpoint with the LinkedIn connector's recordings (`shared/connectors/src/linkedin/recordings`,
//! bodies in the documented wire format), for the connector's own tests and the end-to-end ones.
//!
//! It holds the posts created on it, as LinkedIn would:
//! - a create needs the `LinkedIn-Version` and `X-Restli-Protocol-Version: 2.0.0` headers and
//!   the access token in force ([`crate::oauth::Grants`]), and answers `201` with the post's
//!   URN in `x-restli-id`;
//! - it parses the commentary as little text: a reserved character left unescaped cuts the post
//!   there (LinkedIn's silent truncation), and a hashtag is kept as its template
//!   `{hashtag|\#|word}`;
//! - a second post with the same commentary from one author is refused as `DUPLICATE_POST`;
//! - the author finder lists the posts newest first, and a post reads back by its URN.
//!
//! A test steers it: answers to give instead of the next creates ([`Platform::failures`]), an
//! answer cut after the post is made ([`Platform::lose_next_answer`]), an expired token.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;

use crate::oauth::{Grants, Rotation};
use crate::recorded::Platform;

/// The access token the server accepts first.
pub const TOKEN: &str = "linkedin-token-for-tests";
/// The refresh token in force.
pub const REFRESH: &str = "linkedin-refresh-for-tests";
/// The OAuth client.
pub const CLIENT_ID: &str = "linkedin-client";
/// The OAuth client's secret.
pub const CLIENT_SECRET: &str = "linkedin-client-secret";
/// The organization posts are made as.
pub const AUTHOR: &str = "urn:li:organization:5515715";

/// The recording `name` (a file of the connector's recordings folder).
pub fn recording(name: &str) -> Value {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../connectors/src/linkedin/recordings").join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).expect("recording")).expect("recording JSON")
}

/// A post the server holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// Its URN.
    pub urn: String,
    /// Its author.
    pub author: String,
    /// Its commentary as stored (little text, hashtags as templates).
    pub commentary: String,
    /// When it was created, in Unix milliseconds.
    pub created_at: i64,
}

/// The server's state, which a test reads and steers (the posts, creates, failures and
/// tokens of [`Platform`], and the listings asked for).
#[derive(Clone)]
pub struct Server {
    platform: Platform<Held>,
    /// How many author listings were asked for.
    pub listings: Arc<AtomicUsize>,
}

impl std::ops::Deref for Server {
    type Target = Platform<Held>;

    fn deref(&self) -> &Platform<Held> {
        &self.platform
    }
}

const RESERVED: &[char] = &['\\', '|', '{', '}', '@', '[', ']', '(', ')', '<', '>', '#', '*', '_', '~'];

/// Commentary as LinkedIn stores it: cut at the first reserved character left unescaped, a
/// hashtag as its template.
fn stored(commentary: &str) -> String {
    let mut out = String::new();
    let mut chars = commentary.chars().peekable();
    let mut previous: Option<char> = None;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.push(c);
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            }
            '#' if previous.is_none_or(char::is_whitespace) && chars.peek().is_some_and(|n| n.is_alphanumeric()) => {
                let mut tag = String::new();
                while let Some(n) = chars.peek().copied().filter(|n| n.is_alphanumeric()) {
                    tag.push(n);
                    chars.next();
                }
                out.push_str(&format!("{{hashtag|\\#|{tag}}}"));
                previous = tag.chars().last();
                continue;
            }
            c if RESERVED.contains(&c) => break,
            c => out.push(c),
        }
        previous = Some(c);
    }
    out
}

fn answer(status: u16, name: &str) -> Response {
    (StatusCode::from_u16(status).expect("status"), Json(recording(name))).into_response()
}

/// The oldest `LinkedIn-Version` the server still serves (LinkedIn sunsets each after a year).
pub const OLDEST_VERSION: &str = "202601";

/// The refusal of a request whose `headers` do not ask for a served `LinkedIn-Version` over
/// Rest.li 2.0.0 (a 400 for a missing or malformed header, a 426 for a version no longer
/// served); `None` when they do.
fn unversioned(headers: &HeaderMap) -> Option<Response> {
    let version = headers.get("linkedin-version").and_then(|v| v.to_str().ok()).unwrap_or_default();
    let protocol = headers.get("x-restli-protocol-version").and_then(|v| v.to_str().ok());
    if version.len() != 6 || !version.bytes().all(|b| b.is_ascii_digit()) || protocol != Some("2.0.0") {
        return Some(answer(400, "error-unprocessable.json"));
    }
    (version < OLDEST_VERSION).then(|| answer(426, "error-version.json"))
}

fn post_of(held: &Held) -> Value {
    let mut post = recording("post.json");
    post["id"] = Value::String(held.urn.clone());
    post["author"] = Value::String(held.author.clone());
    post["commentary"] = Value::String(held.commentary.clone());
    for key in ["createdAt", "lastModifiedAt", "publishedAt"] {
        post[key] = held.created_at.into();
    }
    post
}

async fn create(State(s): State<Server>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    if let Some(refused) = unversioned(&headers) {
        s.creates.lock().expect("lock").push(body);
        return refused;
    }
    let author = body["author"].as_str().unwrap_or_default().to_owned();
    let commentary = stored(body["commentary"].as_str().unwrap_or_default());
    let make = || {
        let n = s.count() + 1;
        let created_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        s.hold(Held {
            urn: format!("urn:li:share:72700000000000{n:05}"),
            author: author.clone(),
            commentary: commentary.clone(),
            created_at,
        })
    };
    if !s.grants.authorised(&headers) {
        s.creates.lock().expect("lock").push(body);
        return answer(401, "error-expired-token.json");
    }
    if let Some(instead) = s.instead(&body, || drop(make()), answer) {
        return instead;
    }
    let duplicate = s.posts.lock().expect("lock").iter().any(|p| p.author == author && p.commentary == commentary);
    if duplicate {
        return answer(422, "error-duplicate.json");
    }
    let held = make();
    (StatusCode::CREATED, [("x-restli-id", held.urn)]).into_response()
}

async fn read(State(s): State<Server>, headers: HeaderMap, Path(urn): Path<String>) -> Response {
    if let Some(refused) = unversioned(&headers) {
        return refused;
    }
    if !s.grants.authorised(&headers) {
        return answer(401, "error-expired-token.json");
    }
    let held = s.posts.lock().expect("lock").iter().find(|p| p.urn == urn).cloned();
    match held {
        Some(held) => (StatusCode::OK, Json(post_of(&held))).into_response(),
        None => answer(404, "error-not-found.json"),
    }
}

async fn finder(State(s): State<Server>, headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    let query: std::collections::HashMap<String, String> =
        crate::oauth::form_fields(&query.unwrap_or_default()).into_iter().collect();
    let finder = headers.get("x-restli-method").and_then(|v| v.to_str().ok()) == Some("FINDER");
    if let Some(refused) = unversioned(&headers) {
        return refused;
    }
    if !finder || query.get("q").map(String::as_str) != Some("author") {
        return answer(400, "error-unprocessable.json");
    }
    if !s.grants.authorised(&headers) {
        return answer(401, "error-expired-token.json");
    }
    s.listings.fetch_add(1, Ordering::SeqCst);
    let count = query.get("count").and_then(|c| c.parse().ok()).unwrap_or(10usize);
    let author = query.get("author").cloned().unwrap_or_default();
    let elements: Vec<Value> =
        s.posts.lock().expect("lock").iter().rev().filter(|p| p.author == author).take(count).map(post_of).collect();
    let mut page = recording("posts-by-author.json");
    page["paging"]["count"] = count.into();
    page["paging"]["total"] = elements.len().into();
    page["elements"] = Value::Array(elements);
    (StatusCode::OK, Json(page)).into_response()
}

/// Serve a new LinkedIn on a free local port, for the rest of the process: its state, the
/// API's base URL and the token endpoint's URL.
pub async fn start() -> (Server, String, String) {
    let grants = Grants::new(TOKEN, REFRESH, Rotation::Keeps, CLIENT_ID, CLIENT_SECRET);
    let s = Server { platform: Platform::new(grants), listings: Arc::default() };
    let app = axum::Router::new()
        .route("/rest/posts", post(create).get(finder))
        .route("/rest/posts/{urn}", get(read))
        .route("/oauth/v2/accessToken", s.token_endpoint(recording))
        .with_state(s.clone());
    let url = s.serve(app).await;
    (s, url.clone(), format!("{url}/oauth/v2/accessToken"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn commentary_is_stored_as_linkedin_parses_little_text() {
        assert_eq!(super::stored("Hi \\@priya \\(ok\\) #launch day"), "Hi \\@priya \\(ok\\) {hashtag|\\#|launch} day");
        assert_eq!(super::stored("cut (here) please"), "cut ", "an unescaped reserved character cuts the post");
    }
}
