//! Nova's HTTP boundary: answers that never reach a tool (unknown paths, wrong methods,
//! refused callers and bodies) are all in the shared JSON error shape.

use std::sync::Arc;

use harmonia_agents::Runtime;
use harmonia_agents::offline::OfflineModel;
use harmonia_agents::skills::SkillLibrary;
use harmonia_auth::Identity;
use harmonia_store_sqlite::SqliteStore;
use harmonia_testkit::{Spawned, assert_json_fallbacks, error_code, send, spawn_app};
use serde_json::json;

use super::*;

async fn serve() -> (Spawned, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(SqliteStore::open(dir.path().join("nova.db")).expect("store"));
    let skills = SkillLibrary::load(&SkillLibrary::default_dir()).expect("skills");
    let runtime = with_tools(Runtime::new(Arc::new(OfflineModel), store, Arc::new(skills)));
    let mut credentials = Credentials::default();
    let token =
        credentials.issue(Identity { operator: "ana".parse().expect("op"), workspace: "ws".parse().expect("ws") });
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
