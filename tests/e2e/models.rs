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
use harmonia_e2e::recorded::{RecordedModel, Wire};
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
        // The cost view counts the failed invocations as failed.
        let id = job["id"].as_str().expect("job id");
        let (_, shown, _) = harmonia(dir.path(), &url, &["--model", "openai", "--json", "show", id]).await;
        let shown: Value = serde_json::from_str(&shown).expect("show json");
        let harmonia_use = &shown["model_use"][0];
        assert_eq!(harmonia_use["role"], "harmonia", "{shown}");
        assert!(harmonia_use["failed"].as_u64() >= Some(1), "{code}: {harmonia_use}");
        assert_eq!(harmonia_use["failed"], harmonia_use["invocations"], "{code}: every call failed");

        // A model that answers (the offline one) carries the same job on from where it stopped.
        let (status, out, err) = harmonia(dir.path(), &url, &["--model", "offline", "status"]).await;
        assert_eq!(status, 0, "{err}");
        assert!(out.contains("awaiting_strategy_approval"), "{code}: {out}");
        let (_, listing, _) = harmonia(dir.path(), &url, &["--json", "status"]).await;
        let jobs: Value = serde_json::from_str(&listing).expect("status json");
        assert!(jobs["jobs"][0]["job"].get("stalled").is_none(), "the stall is over");
    }
}

/// `harmonia --model MODEL` on `data_dir` with `env`; (exit code, stdout, stderr).
async fn with_model(
    data_dir: &std::path::Path,
    model: &str,
    env: &[(&str, &str)],
    args: &[&str],
) -> (i32, String, String) {
    let mut all = vec!["--model", model];
    all.extend_from_slice(args);
    FunctionProcess::run_cli(data_dir, &all, env, &["HARMONIA_MODEL"]).await
}

/// `harmonia serve` on `data_dir` with `model`, asked for the job view of `job` with
/// `credential`; the view's JSON.
async fn job_view(data_dir: &std::path::Path, model: &str, env: &[(&str, &str)], job: &str, credential: &str) -> Value {
    let (mut serve, url) = FunctionProcess::serve_cli(data_dir, &["--model", model], env, &["HARMONIA_MODEL"]).await;
    let response = reqwest::Client::new()
        .get(format!("{url}/v1/jobs/{job}/view"))
        .bearer_auth(credential)
        .send()
        .await
        .expect("GET view");
    let status = response.status();
    let body: Value = response.json().await.expect("view json");
    assert_eq!(status, 200, "{body}");
    serve.kill().await.expect("stop serve");
    body
}

/// One whole job on a provider's wire API, answered by recordings: every role's loop (tool
/// calls included) over the wire, each output through the same validators, policy and
/// publication as any other, and the activity counting exactly the calls and tokens the
/// provider reported.
async fn a_whole_job_runs_on(wire: Wire) {
    let (model, folder) = match wire {
        Wire::OpenAi => ("openai", "openai"),
        Wire::Gemini => ("gemini", "gemini"),
    };
    let recordings = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings/job");
    let key = "recorded-key-1234";
    let server = RecordedModel::start(wire, &recordings.join(folder), key).await;
    let env: Vec<(&str, &str)> = match wire {
        Wire::OpenAi => {
            vec![("OPENAI_BASE_URL", &server.url), ("OPENAI_MODEL", "gpt-4.1-mini"), ("OPENAI_API_KEY", key)]
        }
        Wire::Gemini => {
            vec![("GEMINI_BASE_URL", &server.url), ("GEMINI_MODEL", "gemini-2.5-flash"), ("GEMINI_API_KEY", key)]
        }
    };
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/launch-talk.json");
    let dir = harmonia_testkit::temp_dir();
    let workspace = recordings.join("workspace.toml");
    let server = &server;
    // Every command must succeed; when one does not, what the server could not answer says why.
    let run = |args: Vec<String>| {
        let (dir, env) = (dir.path().to_owned(), env.clone());
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (code, out, err) = with_model(&dir, model, &env, &args).await;
            assert_eq!(code, 0, "{model} {args:?}: {out}\n{err}\nunanswered: {:?}", server.misses());
            out
        }
    };
    let words = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<String>>();
    run(words(&["workspace", "init", workspace.to_str().expect("path")])).await;

    let out = run(words(&["--json", "run", source.to_str().expect("path")])).await;
    assert!(server.misses().is_empty(), "{:?}", server.misses());
    let ran: Value = serde_json::from_str(&out).expect("run json");
    let job = ran["job"]["id"].as_str().expect("job id").to_owned();
    assert_eq!(ran["job"]["status"], "awaiting_strategy_approval", "{ran}");
    run(words(&["approve", &job, "strategy"])).await;
    assert!(server.misses().is_empty(), "{:?}", server.misses());
    run(words(&["approve", &job, "draft"])).await;
    run(words(&["publish-now", &job])).await;
    let shown: Value = serde_json::from_str(&run(words(&["--json", "show", &job])).await).expect("show json");

    assert_eq!(shown["job"]["status"], "verified", "{}", shown["job"]);
    // What the recordings said is what was accepted, marked live.
    let moments: Vec<&str> = shown["analysis"]["moments"]
        .as_array()
        .expect("moments")
        .iter()
        .filter_map(|m| m["evidence_id"].as_str())
        .collect();
    assert_eq!(moments, ["m-storm", "m-rebuild", "m-merge", "m-none-lost", "m-two-hours", "m-advice"]);
    assert_eq!(shown["plan"]["provenance"], "live");
    assert_eq!(shown["plan"]["deferred"][0]["brief"], "brief-2");
    assert_eq!(shown["selected_item"]["id"], "item-1");
    let window = &shown["selected_item"]["window"];
    let start: chrono::DateTime<chrono::Utc> =
        serde_json::from_value(window["start"].clone()).expect("a window start from the snapshot");
    assert_eq!(
        start.date_naive(),
        chrono::Utc::now().date_naive().succ_opt().expect("tomorrow"),
        "the day after the run"
    );
    let drafts = shown["drafts"].as_array().expect("drafts");
    assert_eq!(drafts.len(), 2, "a first draft and the one revision");
    assert!(drafts.iter().all(|d| d["provenance"] == "live"));
    assert!(drafts[1]["body"].as_str().is_some_and(|b| b.contains("Watch the full talk.")));
    let verdicts: Vec<&str> =
        shown["reviews"].as_array().expect("reviews").iter().filter_map(|r| r["verdict"].as_str()).collect();
    assert_eq!(verdicts, ["revise", "pass"]);
    assert_eq!(shown["policy"].as_array().and_then(|p| p.last()).map(|p| &p["outcome"]), Some(&json!("passed")));
    assert_eq!(shown["publication"]["verification"]["outcome"]["outcome"], "verified");

    // Maya lays out the job view, which the operator API serves hydrated.
    let added: Value =
        serde_json::from_str(&run(words(&["--json", "operator", "add", "reviewer"])).await).expect("operator json");
    let credential = added["credential"].as_str().expect("credential").to_owned();
    let view = job_view(dir.path(), model, &env, &job, &credential).await;
    assert_eq!(view["version"], "0.9", "{view}");
    let job_key = format!("job:{job}");
    assert!(view["entities"].get(&job_key).is_some(), "the job is hydrated: {view}");
    assert!(view.to_string().contains("Where this job stands"), "Maya's layout is what is served: {view}");
    assert!(server.misses().is_empty(), "{:?}", server.misses());

    // Nova, asked directly, answers from its tool's evidence.
    let asked = run(words(&["--json", "ask", "What is waiting in the operator feed?"])).await;
    let answer: Value = serde_json::from_str(&asked).expect("ask json");
    assert_eq!(answer["answer"]["provenance"], "live", "{answer}");
    let fed = answer["answer"]["claims"][0]["evidence"][0].as_str().expect("a cited id");
    assert!(asked.contains(fed), "{answer}");
    assert!(server.misses().is_empty(), "{:?}", server.misses());

    // The cost view counts exactly the calls and tokens the provider reported, per role.
    let served = server.served();
    let roles: Vec<&str> = served.iter().map(|s| s.role.as_str()).collect();
    for role in ["harmonia", "nimi", "ryan", "temi", "noni", "dara", "maya", "nova"] {
        assert!(roles.contains(&role), "{role} was answered over the wire");
    }
    for role in ["harmonia", "nimi", "ryan", "temi", "noni", "dara"] {
        let mine: Vec<_> = served.iter().filter(|s| s.role == role).collect();
        let used = shown["model_use"]
            .as_array()
            .and_then(|u| u.iter().find(|u| u["role"] == role))
            .unwrap_or_else(|| panic!("{role} in {}", shown["model_use"]));
        assert_eq!(used["model_calls"].as_u64(), Some(mine.len() as u64), "{role}");
        assert_eq!(used["failed"], 0, "{role}");
        assert_eq!(used["input_tokens"].as_u64(), Some(mine.iter().map(|s| s.input_tokens).sum::<u64>()), "{role}");
        assert_eq!(used["output_tokens"].as_u64(), Some(mine.iter().map(|s| s.output_tokens).sum::<u64>()), "{role}");
    }
    let harmonia = served.iter().filter(|s| s.role == "harmonia").count();
    assert_eq!(harmonia, 3, "Harmonia routes Nimi, Ryan and Temi only");
}

#[tokio::test]
async fn a_whole_job_runs_end_to_end_on_recorded_openai_answers() {
    a_whole_job_runs_on(Wire::OpenAi).await;
}

#[tokio::test]
async fn a_whole_job_runs_end_to_end_on_recorded_gemini_answers() {
    a_whole_job_runs_on(Wire::Gemini).await;
}
