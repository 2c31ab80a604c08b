//! Nova's HTTP boundary: answers that never reach a tool (unknown paths, wrong methods,
//! refused callers and bodies) are all in the shared JSON error shape.

use std::sync::Arc;

use harmonia_agents::Runtime;
use harmonia_agents::offline::OfflineModel;
use harmonia_agents::skills::SkillLibrary;
use harmonia_auth::{Role, operators};
use harmonia_store_sqlite::SqliteStore;
use harmonia_testkit::{Spawned, assert_json_fallbacks, error_code, send, spawn_app};
use serde_json::json;

use super::*;

async fn serve() -> (Spawned, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(SqliteStore::open(dir.path().join("nova.db")).expect("store"));
    let skills = SkillLibrary::configured().expect("skills");
    let (ws, ana, cli) = ("ws".parse().expect("ws"), "ana".parse().expect("op"), "cli".parse().expect("op"));
    let token = operators::add(&*store, &ws, &ana, Role::Operator, &cli).await.expect("operator").credential;
    let credentials = Credentials::new(store.clone());
    let runtime = with_tools(Runtime::new(Arc::new(OfflineModel), store, Arc::new(skills)));
    let state = NovaState { runtime: Arc::new(runtime), credentials: Arc::new(credentials) };
    let base = spawn_app(app(state)).await;
    (base, token, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_paths_methods_callers_and_bodies_answer_json_errors() {
    let (base, token, _dir) = serve().await;
    assert_json_fallbacks(&base, reqwest::Method::GET, "/v1/ask").await;
    let http = reqwest::Client::new();
    let (s, v) = send(http.post(format!("{base}/v1/ask")).json(&json!({"question": "q"}))).await;
    assert_eq!((s, error_code(&v)), (401, "unauthenticated"));
    let (s, v) = send(http.post(format!("{base}/v1/ask")).bearer_auth(&token).body("{\"question\":")).await;
    assert_eq!((s, error_code(&v)), (400, "invalid_request"), "no axum text body: {v}");
}
