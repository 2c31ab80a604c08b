//! A recorded Mastodon instance: a local axum server answering Mastodon's REST API with the
//! Mastodon connector's recordings (`shared/connectors/src/mastodon/recordings`, bodies in the
//! documented wire format), for the connector's own tests and the end-to-end ones alike.
//!
//! It keeps every request to create a status and honours `Idempotency-Key` as an instance
//! does: a key it has seen is answered with the status created under it, and only a new key
//! creates one (the first keeps the recording's id, later ones get their own). A status's
//! source reads back the text that was posted; a status carries the counts a test set on it.
//! Trends are the recorded tags and links. Every call but the instance's and the trends' needs
//! [`TOKEN`].

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;

/// The access token the instance accepts.
pub const TOKEN: &str = "mastodon-token-for-tests";

/// The recording `name` (a file of the connector's recordings folder).
pub fn recording(name: &str) -> Value {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../connectors/src/mastodon/recordings").join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).expect("recording")).expect("recording JSON")
}

/// A request to create a status: its `Idempotency-Key` and JSON body.
pub type Create = (Option<String>, Value);

/// An answer to give instead of creating: the status, the recording, and whether the status is
/// created anyway (an answer lost after the work).
pub type Failure = (u16, &'static str, bool);

/// A status the instance holds: its id and the text posted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// Its id.
    pub id: String,
    /// Its text, as posted.
    pub text: String,
    /// The status it replies to, when it is a reply.
    pub in_reply_to: Option<String>,
}

/// The instance's state, which a test reads and steers.
#[derive(Clone, Default)]
pub struct Instance {
    /// Each request to `POST /api/v1/statuses`.
    pub posts: Arc<Mutex<Vec<Create>>>,
    /// The statuses created, by idempotency key.
    pub created: Arc<Mutex<HashMap<String, Held>>>,
    /// Answers to give instead, in turn.
    pub failures: Arc<Mutex<VecDeque<Failure>>>,
    /// The status limit the instance states instead of the recording's 500.
    pub max_characters: Arc<Mutex<Option<u32>>>,
    /// Favourites, reblogs and replies of a status, by id (none set: zero).
    pub counts: Arc<Mutex<HashMap<String, [u64; 3]>>>,
}

/// The queue's mark for a create answered as the instance does.
const ANSWERED: Failure = (200, "", false);

impl Instance {
    /// Answer the next create as the instance does (ahead of an answer queued after it).
    pub fn answer_next(&self) {
        self.failures.lock().expect("lock").push_back(ANSWERED);
    }

    fn held(&self, id: &str) -> Option<Held> {
        self.created.lock().expect("lock").values().find(|h| h.id == id).cloned()
    }

    /// Create (or find) the status under `key` with `text`, replying to `in_reply_to`.
    fn create(&self, key: String, text: String, in_reply_to: Option<String>) -> Held {
        let mut created = self.created.lock().expect("lock");
        let n = created.len();
        let id = match n {
            0 => recording("status.json")["id"].as_str().unwrap_or_default().to_owned(),
            n => format!("11357290427183{n:04}"),
        };
        created.entry(key).or_insert(Held { id, text, in_reply_to }).clone()
    }
}

fn authorised(headers: &HeaderMap) -> bool {
    headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {TOKEN}"))
}

fn answer(status: u16, name: &str) -> Response {
    (StatusCode::from_u16(status).expect("status"), Json(recording(name))).into_response()
}

/// The recorded `Status`, as `held`, with `counts` (favourites, reblogs, replies).
fn status_of(held: &Held, counts: [u64; 3]) -> Value {
    let mut status = recording("status.json");
    status["id"] = Value::String(held.id.clone());
    status["url"] = Value::String(format!("https://mastodon.example/@fieldnotes/{}", held.id));
    status["in_reply_to_id"] = held.in_reply_to.clone().map_or(Value::Null, Value::String);
    for (key, n) in ["favourites_count", "reblogs_count", "replies_count"].into_iter().zip(counts) {
        status[key] = n.into();
    }
    status
}

async fn create(State(i): State<Instance>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let key = headers.get("idempotency-key").and_then(|v| v.to_str().ok()).map(str::to_owned);
    i.posts.lock().expect("lock").push((key.clone(), body.clone()));
    if !authorised(&headers) {
        return answer(401, "error-invalid-token.json");
    }
    let text = body["status"].as_str().unwrap_or_default().to_owned();
    let parent = body["in_reply_to_id"].as_str().map(str::to_owned);
    let failure = i.failures.lock().expect("lock").pop_front().filter(|f| *f != ANSWERED);
    if let Some((status, name, created_anyway)) = failure {
        if created_anyway {
            i.create(key.unwrap_or_default(), text, parent);
        }
        return answer(status, name);
    }
    let held = i.create(key.unwrap_or_default(), text, parent);
    (StatusCode::OK, Json(status_of(&held, [0; 3]))).into_response()
}

async fn source(State(i): State<Instance>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    if !authorised(&headers) {
        return answer(401, "error-invalid-token.json");
    }
    let Some(held) = i.held(&id) else { return answer(404, "error-not-found.json") };
    let mut source = recording("status-source.json");
    source["id"] = Value::String(held.id);
    source["text"] = Value::String(held.text);
    (StatusCode::OK, Json(source)).into_response()
}

async fn status(State(i): State<Instance>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    if !authorised(&headers) {
        return answer(401, "error-invalid-token.json");
    }
    let Some(held) = i.held(&id) else { return answer(404, "error-not-found.json") };
    let counts = i.counts.lock().expect("lock").get(&id).copied().unwrap_or_default();
    (StatusCode::OK, Json(status_of(&held, counts))).into_response()
}

async fn credentials(headers: HeaderMap) -> Response {
    if authorised(&headers) { answer(200, "verify-credentials.json") } else { answer(401, "error-invalid-token.json") }
}

async fn instance_information(State(i): State<Instance>) -> Response {
    let mut body = recording("instance.json");
    if let Some(max) = *i.max_characters.lock().expect("lock") {
        body["configuration"]["statuses"]["max_characters"] = max.into();
    }
    (StatusCode::OK, Json(body)).into_response()
}

/// Serve a new instance on a free local port, for the rest of the process: its state and its
/// base URL (ending in `/`).
pub async fn start() -> (Instance, String) {
    let i = Instance::default();
    let app = axum::Router::new()
        .route("/api/v2/instance", get(instance_information))
        .route("/api/v1/statuses", post(create))
        .route("/api/v1/statuses/{id}", get(status))
        .route("/api/v1/statuses/{id}/source", get(source))
        .route("/api/v1/accounts/verify_credentials", get(credentials))
        .route("/api/v1/trends/tags", get(|| async { Json(recording("trends-tags.json")) }))
        .route("/api/v1/trends/links", get(|| async { Json(recording("trends-links.json")) }))
        .with_state(i.clone());
    let url = crate::app::serve_for_the_process(app, crate::app::Cut::default()).await;
    (i, format!("{url}/"))
}
