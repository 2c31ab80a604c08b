//! The boundary through real HTTP on an ephemeral port.

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, FromRef};
use axum::routing::{get, post};
use axum::{Json, Router};
use harmonia_auth::{Credentials, Role, operators};
use harmonia_store::Store;
use harmonia_store_sqlite::SqliteStore;
use harmonia_testkit::{Spawned, TempDir, error_code, send, spawn_app};
use serde_json::{Value, json};

use harmonia_contracts::ids::JobId;

use crate::{Admin, Caller, JsonBody, PathId, Trace, json_fallbacks};

#[derive(Clone)]
struct State(Arc<Credentials>);

impl FromRef<State> for Arc<Credentials> {
    fn from_ref(state: &State) -> Self {
        state.0.clone()
    }
}

async fn who(Caller(who): Caller) -> Json<Value> {
    Json(json!({ "operator": who.operator.to_string(), "workspace": who.workspace.to_string(), "role": who.role }))
}

async fn admin_only(Admin(who): Admin) -> String {
    who.operator.to_string()
}

async fn echo(_: Caller, JsonBody(body): JsonBody<Value>) -> Json<Value> {
    Json(body)
}

async fn job(PathId(job): PathId<JobId>) -> String {
    job.to_string()
}

async fn trace(Trace(parent): Trace) -> String {
    parent.trace_id()
}

/// The test router on an ephemeral port, an operator's credential, and the data directory
/// (held until the test ends).
async fn serve() -> (Spawned, String, TempDir) {
    let (base, tokens, dir) = serve_with_admin().await;
    (base, tokens.0, dir)
}

/// The test router, an operator's and an admin's credentials, and the data directory.
async fn serve_with_admin() -> (Spawned, (String, String), TempDir) {
    let dir = harmonia_testkit::temp_dir();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("http.db")).expect("store"));
    let (ws, cli) = ("ws".parse().expect("ws"), "cli".parse().expect("op"));
    let add = |name: &str, role| {
        let (store, ws, cli, name) = (store.clone(), &ws, &cli, name.parse().expect("op"));
        async move { operators::add(&*store, ws, &name, role, cli).await.expect("add").credential }
    };
    let operator = add("ana", Role::Operator).await;
    let admin = add("ada", Role::Admin).await;
    let app = json_fallbacks(
        Router::new()
            .route("/who", get(who))
            .route("/admin", get(admin_only))
            .route("/echo", post(echo))
            .route("/trace", get(trace))
            .route("/jobs/{job}", get(job)),
    )
    .layer(DefaultBodyLimit::max(64))
    .with_state(State(Arc::new(Credentials::new(store))));
    let base = spawn_app(app).await;
    (base, (operator, admin), dir)
}

#[tokio::test]
async fn unknown_paths_and_methods_answer_json_errors() {
    let (base, _, _dir) = serve().await;
    let http = reqwest::Client::new();
    let (status, body) = send(http.get(format!("{base}/nope"))).await;
    assert_eq!((status, error_code(&body)), (404, "unknown_route"));
    assert_eq!(body["error"]["category"], "not_found");
    assert_eq!(body["error"]["retryable"], false);
    let response = http.delete(format!("{base}/who")).send().await.expect("request");
    let allow = response.headers().get("allow").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let (status, body) = (response.status().as_u16(), response.json::<Value>().await.expect("json"));
    assert_eq!((status, error_code(&body)), (405, "method_not_allowed"));
    assert_eq!(allow.as_deref(), Some("GET,HEAD"), "the 405 still says which methods the path takes");
}

#[tokio::test]
async fn the_caller_comes_from_the_bearer_credential() {
    let (base, token, _dir) = serve().await;
    let http = reqwest::Client::new();
    let (status, body) = send(http.get(format!("{base}/who")).bearer_auth(&token)).await;
    assert_eq!((status, body), (200, json!({"operator": "ana", "workspace": "ws", "role": "operator"})));
    for request in [
        http.get(format!("{base}/who")),
        http.get(format!("{base}/who")).bearer_auth("hop_nope"),
        http.get(format!("{base}/who")).header("authorization", format!("Basic {token}")),
    ] {
        let (status, body) = send(request).await;
        assert_eq!((status, error_code(&body)), (401, "unauthenticated"));
    }
}

#[tokio::test]
async fn refused_bodies_are_typed_codes() {
    let (base, token, _dir) = serve().await;
    let http = reqwest::Client::new();
    let url = format!("{base}/echo");
    let (status, body) = send(http.post(&url).bearer_auth(&token).json(&json!({"a": 1}))).await;
    assert_eq!((status, body), (200, json!({"a": 1})));
    let cases = [
        (http.post(&url).bearer_auth(&token).body("{\"a\":"), 400, "invalid_request"),
        (
            http.post(&url).bearer_auth(&token).header("content-type", "application/json").body("{\"a\":"),
            400,
            "invalid_request",
        ),
        (http.post(&url).bearer_auth(&token).json(&json!({"a": "x".repeat(100)})), 413, "payload_too_large"),
    ];
    for (request, want_status, want_code) in cases {
        let (status, body) = send(request).await;
        assert_eq!((status, error_code(&body)), (want_status, want_code), "{body}");
        assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    let (status, body) = send(http.post(&url).json(&json!({"a": 1}))).await;
    assert_eq!((status, error_code(&body)), (401, "unauthenticated"), "authentication comes before the body");
}

#[tokio::test]
async fn the_callers_traceparent_is_continued() {
    let (base, _, _dir) = serve().await;
    let http = reqwest::Client::new();
    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let continued = http.get(format!("{base}/trace")).header("traceparent", parent).send().await.expect("request");
    assert_eq!(continued.text().await.expect("text"), "4bf92f3577b34da6a3ce929d0e0e4736");
    let fresh = http.get(format!("{base}/trace")).header("traceparent", "garbage").send().await.expect("request");
    let fresh = fresh.text().await.expect("text");
    assert_eq!(fresh.len(), 32);
    assert_ne!(fresh, "4bf92f3577b34da6a3ce929d0e0e4736");
}

#[tokio::test]
async fn path_ids_are_parsed_or_refused_with_their_code() {
    let (base, _, _dir) = serve().await;
    let http = reqwest::Client::new();
    let ok = http.get(format!("{base}/jobs/job-1")).send().await.expect("request");
    assert_eq!((ok.status().as_u16(), ok.text().await.expect("text")), (200, "job-1".to_owned()));
    let (status, body) = send(http.get(format!("{base}/jobs/%20bad%20id"))).await;
    assert_eq!((status, error_code(&body)), (400, "invalid_id"));
    let (status, body) = send(http.get(format!("{base}/jobs/%FF"))).await;
    assert_eq!((status, error_code(&body)), (400, "invalid_request"), "not UTF-8: still the JSON shape");
}

#[tokio::test]
async fn admin_routes_answer_forbidden_to_operators() {
    let (base, (operator, admin), _dir) = serve_with_admin().await;
    let http = reqwest::Client::new();
    let ok = http.get(format!("{base}/admin")).bearer_auth(&admin).send().await.expect("request");
    assert_eq!((ok.status().as_u16(), ok.text().await.expect("text")), (200, "ada".to_owned()));
    let (status, body) = send(http.get(format!("{base}/admin")).bearer_auth(&operator)).await;
    assert_eq!((status, error_code(&body)), (403, "forbidden"));
    assert_eq!(body["error"]["category"], "authorization");
    let (status, body) = send(http.get(format!("{base}/admin"))).await;
    assert_eq!((status, error_code(&body)), (401, "unauthenticated"), "no credential is 401, not 403");
}

#[test]
fn decoded_bytes_are_refused_with_the_codes_of_the_extractor() {
    #[derive(Debug, PartialEq, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Body {
        name: String,
    }
    let code = |bytes: &[u8]| crate::body::decode::<Body>(bytes).err().map(|e| e.code);
    assert_eq!(crate::body::decode::<Body>(br#"{"name":"ana"}"#).ok(), Some(Body { name: "ana".into() }));
    assert_eq!(code(b"{"), Some(harmonia_contracts::Code::InvalidRequest), "not JSON");
    assert_eq!(code(br#"{"name":"ana","x":1}"#), Some(harmonia_contracts::Code::InvalidRequest), "another shape");
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert_eq!(code(deep.as_bytes()), Some(harmonia_contracts::Code::InvalidRequest), "nesting is bounded");
}
