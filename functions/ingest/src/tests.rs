//! The ingest function over the embedded default, through real HTTP on an ephemeral port.

use std::sync::Arc;

use harmonia_auth::Identity;
use harmonia_local::{Local, Wrap};
use harmonia_pipeline::registry::Timing;
use serde_json::{Value, json};

use super::*;

const SAMPLE: &str = include_str!("../../../examples/launch-talk.json");

async fn serve() -> (String, String, Local) {
    let dir = harmonia_testkit::temp_dir();
    let local = Local::open_with(dir.path(), Timing::CLOUD, Wrap::default()).await.expect("open");
    let ws = local.workspace().await.expect("workspace");
    let mut credentials = Credentials::default();
    let token = credentials.issue(Identity { operator: "ana".parse().expect("op"), workspace: ws });
    let app = app(IngestState { env: local.env.clone(), credentials: Arc::new(credentials) });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, token, local)
}

async fn answer(request: reqwest::RequestBuilder) -> (u16, Value) {
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_becomes_a_job_once_per_idempotency_key() {
    let (base, token, _local) = serve().await;
    let http = reqwest::Client::new();
    let submit = || {
        http.post(format!("{base}/v1/sources"))
            .bearer_auth(&token)
            .header("idempotency-key", "upload-1")
            .json(&json!({"format": "json", "content": SAMPLE}))
    };
    let (status, first) = answer(submit()).await;
    assert_eq!(status, 201, "{first}");
    let (status, again) = answer(submit()).await;
    assert_eq!(status, 201, "{again}");
    assert_eq!(first["job"]["id"], again["job"]["id"]);

    let (status, body) = answer(
        http.post(format!("{base}/v1/sources")).bearer_auth(&token).json(&json!({"format": "json", "content": "{"})),
    )
    .await;
    assert_eq!((status, code(&body)), (400, "source_malformed"));
    let (status, body) = answer(http.post(format!("{base}/v1/sources")).json(&json!({"format": "srt"}))).await;
    assert_eq!((status, code(&body)), (401, "unauthenticated"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_paths_and_methods_answer_json_errors() {
    let (base, _, _local) = serve().await;
    let http = reqwest::Client::new();
    let (status, body) = answer(http.get(format!("{base}/nope"))).await;
    assert_eq!((status, code(&body)), (404, "unknown_route"));
    let (status, body) = answer(http.get(format!("{base}/v1/sources"))).await;
    assert_eq!((status, code(&body)), (405, "method_not_allowed"));
    assert_eq!(http.get(format!("{base}/healthz")).send().await.expect("health").status().as_u16(), 200);
}
