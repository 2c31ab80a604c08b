//! The ingest function over the embedded default, through real HTTP on an ephemeral port.

use std::sync::Arc;

use harmonia_auth::{Role, operators};
use harmonia_local::{Local, Wrap};
use harmonia_pipeline::registry::Timing;
use harmonia_testkit::{Spawned, assert_json_fallbacks, error_code, send, spawn_app};
use serde_json::json;

use super::*;

const SAMPLE: &str = include_str!("../../../examples/launch-talk.json");

/// The function on an ephemeral port (served until the returned handle drops), a caller's
/// credential and the backends.
async fn serve() -> (Spawned, String, Local) {
    let dir = harmonia_testkit::temp_dir();
    let local = Local::open_with(dir.path(), Timing::CLOUD, Wrap::default()).await.expect("open");
    let ws = local.workspace().await.expect("workspace");
    let store = local.env.store.clone();
    let token = operators::add(&*store, &ws, &"ana".parse().expect("op"), Role::Operator, &"cli".parse().expect("op"))
        .await
        .expect("operator")
        .credential;
    let app = app(IngestState { env: local.env.clone(), credentials: Arc::new(Credentials::new(store)) });
    let base = spawn_app(app).await;
    (base, token, local)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_becomes_a_job_once_per_idempotency_key() {
    let (base, token, local) = serve().await;
    let http = reqwest::Client::new();
    let submit = || {
        http.post(format!("{base}/v1/sources"))
            .bearer_auth(&token)
            .header("idempotency-key", "upload-1")
            .json(&json!({"format": "json", "content": SAMPLE}))
    };
    let (status, first) = send(submit()).await;
    assert_eq!(status, 201, "{first}");
    let (status, again) = send(submit()).await;
    assert_eq!(status, 201, "{again}");
    assert_eq!(first["job"]["id"], again["job"]["id"]);

    // The same key with another source: refused, and nothing new is stored.
    let other = "WEBVTT\n\n00:00:01.000 --> 00:00:04.000\nA different source entirely.\n";
    let reused = http
        .post(format!("{base}/v1/sources"))
        .bearer_auth(&token)
        .header("idempotency-key", "upload-1")
        .json(&json!({"format": "webvtt", "content": other, "title": "Other"}));
    let (status, body) = send(reused).await;
    assert_eq!((status, error_code(&body)), (409, "idempotency_conflict"), "{body}");
    let ws = local.workspace().await.expect("workspace");
    let jobs = harmonia_store::scan_all(&*local.env.store, &ws, harmonia_pipeline::records::JOBS).await.expect("scan");
    let sources =
        harmonia_store::scan_all(&*local.env.store, &ws, harmonia_pipeline::records::SOURCES).await.expect("scan");
    assert_eq!((jobs.len(), sources.len()), (1, 1), "the conflicting request stored nothing");

    let (status, body) = send(
        http.post(format!("{base}/v1/sources")).bearer_auth(&token).json(&json!({"format": "json", "content": "{"})),
    )
    .await;
    assert_eq!((status, error_code(&body)), (400, "source_malformed"));
    let (status, body) = send(http.post(format!("{base}/v1/sources")).json(&json!({"format": "srt"}))).await;
    assert_eq!((status, error_code(&body)), (401, "unauthenticated"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_paths_and_methods_answer_json_errors() {
    let (base, _, _local) = serve().await;
    assert_json_fallbacks(&base, reqwest::Method::GET, "/v1/sources").await;
    let http = reqwest::Client::new();
    assert_eq!(http.get(format!("{base}/healthz")).send().await.expect("health").status().as_u16(), 200);
}
