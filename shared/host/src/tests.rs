//! A stage function's router through real HTTP on an ephemeral port.

use harmonia_local::{Local, Wrap};
use harmonia_pipeline::registry::Timing;
use harmonia_testkit::{assert_json_fallbacks, error_code, send, spawn_app};

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stage_function_answers_unknown_paths_and_methods_with_json_errors() {
    let dir = harmonia_testkit::temp_dir();
    let local = Local::open_with(dir.path(), Timing::CLOUD, Wrap::default()).await.expect("open");
    let app = stage_router(Function::Policy, &local.env).expect("the policy stage has subscriptions");
    let base = spawn_app(app).await;
    // The push endpoint itself (policy consumes `review.passed`) takes POST only.
    assert_json_fallbacks(&base, reqwest::Method::GET, "/push/review.passed").await;
    let http = reqwest::Client::new();
    let (status, body) = send(http.get(format!("{base}/push/nope"))).await;
    assert_eq!((status, error_code(&body)), (404, "unknown_route"));
    let (status, body) = send(http.delete(format!("{base}/healthz"))).await;
    assert_eq!((status, error_code(&body)), (405, "method_not_allowed"));
}
