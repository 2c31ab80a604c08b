//! `harmonia --model openai` against a model endpoint that refuses, throttles, fails or is not
//! there: the command exits non-zero at once with the model's code, nothing is published, and
//! the job carries on with the next command once a model answers.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::RETRY_AFTER;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use harmonia_e2e::FunctionProcess;
use serde_json::{Value, json};

/// A chat completions endpoint answering every call with `status` and an error body in
/// OpenAI's documented shape (with `Retry-After` on a 429), counting the calls.
async fn refusing(status: u16, code: &'static str) -> (String, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let answer = move |State(calls): State<Arc<AtomicUsize>>, Json(_): Json<Value>| async move {
        calls.fetch_add(1, Ordering::SeqCst);
        let body = json!({"error": {"message": "secret provider detail", "type": "invalid_request_error", "param": null, "code": code}});
        let mut response: Response = (StatusCode::from_u16(status).expect("status"), Json(body)).into_response();
        if status == 429 {
            response.headers_mut().insert(RETRY_AFTER, "0".parse().expect("header"));
        }
        response
    };
    let app = axum::Router::new().route("/v1/chat/completions", post(answer)).with_state(calls.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, calls)
}

/// Run `harmonia ARGS` on `data_dir` against `base_url`; (exit code, stdout, stderr).
async fn harmonia(data_dir: &std::path::Path, base_url: &str, args: &[&str]) -> (i32, String, String) {
    let env = [("OPENAI_BASE_URL", base_url), ("OPENAI_MODEL", "gpt-4.1-mini"), ("OPENAI_API_KEY", "sk-e2e-secret")];
    FunctionProcess::run_cli(data_dir, args, &env, &["HARMONIA_MODEL"]).await
}

#[tokio::test]
async fn a_refusing_throttling_failing_or_absent_model_stops_the_run_with_its_code_and_the_job_resumes() {
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/launch-talk.json");
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workspace.toml");
    let gone = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr");
    let cases = [
        (refusing(401, "invalid_api_key").await, "model_auth", 1),
        (refusing(429, "rate_limit_exceeded").await, "model_throttled", 3),
        (refusing(500, "server_error").await, "model_unavailable", 3),
        ((format!("http://{gone}/v1"), Arc::new(AtomicUsize::new(0))), "model_unavailable", 0),
    ];
    for ((url, calls), code, attempts) in cases {
        let dir = harmonia_testkit::temp_dir();
        let (status, _, err) =
            harmonia(dir.path(), &url, &["workspace", "init", workspace.to_str().expect("path")]).await;
        assert_eq!(status, 0, "{err}");
        let (status, out, err) =
            harmonia(dir.path(), &url, &["--model", "openai", "run", source.to_str().expect("path")]).await;
        assert_eq!(status, 1, "{code}: {out} {err}");
        assert!(err.contains(&format!("[{code}]")), "{code}: {err}");
        assert!(err.contains("nothing was published"), "{err}");
        for secret in ["secret provider detail", "sk-e2e-secret"] {
            assert!(!err.contains(secret) && !out.contains(secret), "{secret} reached the operator");
        }
        // The client's attempts for one call (a redelivery may begin before the command ends).
        let made = calls.load(Ordering::SeqCst);
        assert!((attempts..=2 * attempts).contains(&made), "{code}: {made} calls");

        // Still failing, the job rests where it stopped, stalled and not failed.
        let (_, listing, _) = harmonia(dir.path(), &url, &["--model", "openai", "--json", "status"]).await;
        let jobs: Value = serde_json::from_str(&listing).expect("status json");
        let job = &jobs["jobs"][0]["job"];
        assert_eq!(job["status"], "ingested", "{code}: the job keeps its place");
        assert_eq!(job["stalled"]["code"], code);
        assert!(job.get("failure").is_none(), "a model failure never fails the job");

        // A model that answers (the offline one) carries the same job on from where it stopped.
        let (status, out, err) = harmonia(dir.path(), &url, &["--model", "offline", "status"]).await;
        assert_eq!(status, 0, "{err}");
        assert!(out.contains("awaiting_strategy_approval"), "{code}: {out}");
        let (_, listing, _) = harmonia(dir.path(), &url, &["--json", "status"]).await;
        let jobs: Value = serde_json::from_str(&listing).expect("status json");
        assert!(jobs["jobs"][0]["job"].get("stalled").is_none(), "the stall is over");
    }
}
