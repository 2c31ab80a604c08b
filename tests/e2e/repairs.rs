//! A realistic, imperfect model over both wire APIs (`tests/recordings/flawed/`): each role's
//! first answer misses its contract in a way models do (prose before the JSON, a wrong
//! specialist, a missing field, unreadable JSON, a paraphrased quote with a range a second
//! short, an evidence id slightly off, a call to a function it was not given, a reference its
//! skill does not have) and its next answer, after the runtime's corrective turn, is right.
//! With repairs the job is verified, the repairs counted role by role; with
//! `HARMONIA_MODEL_REPAIRS=0` it stops at the first role with that role's contract code.

use harmonia_e2e::FunctionProcess;
use harmonia_e2e::recorded::{RecordedModel, Wire};
use serde_json::Value;

/// The roles whose first answer is flawed, with the repairs each needs in the job.
const REPAIRED: [(&str, u64); 6] = [("harmonia", 3), ("nimi", 1), ("ryan", 1), ("temi", 1), ("noni", 1), ("dara", 1)];

fn env_for<'a>(wire: Wire, server: &'a RecordedModel, key: &'a str) -> (&'static str, Vec<(&'static str, &'a str)>) {
    match wire {
        Wire::OpenAi => (
            "openai",
            vec![("OPENAI_BASE_URL", &server.url), ("OPENAI_MODEL", "gpt-4.1-mini"), ("OPENAI_API_KEY", key)],
        ),
        Wire::Gemini => (
            "gemini",
            vec![("GEMINI_BASE_URL", &server.url), ("GEMINI_MODEL", "gemini-2.5-flash"), ("GEMINI_API_KEY", key)],
        ),
    }
}

async fn cli(dir: &std::path::Path, model: &str, env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["--model", model];
    all.extend_from_slice(args);
    // The bound is the test's when it sets one, else the default (never the caller's shell's).
    let remove: &[&str] = match env.iter().any(|(k, _)| *k == "HARMONIA_MODEL_REPAIRS") {
        true => &["HARMONIA_MODEL"],
        false => &["HARMONIA_MODEL", "HARMONIA_MODEL_REPAIRS"],
    };
    FunctionProcess::run_cli(dir, &all, env, remove).await
}

async fn corrected_on(wire: Wire) {
    let recordings = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings");
    let folder = match wire {
        Wire::OpenAi => "openai",
        Wire::Gemini => "gemini",
    };
    let key = "recorded-key-1234";
    let server = RecordedModel::start(wire, &recordings.join("flawed").join(folder), key).await;
    let (model, env) = env_for(wire, &server, key);
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/launch-talk.json");
    let workspace = recordings.join("job/workspace.toml");
    let dir = harmonia_testkit::temp_dir();
    let run = |args: Vec<&'static str>, extra: Option<String>| {
        let (dir, env, server) = (dir.path().to_owned(), env.clone(), &server);
        async move {
            let mut args: Vec<String> = args.into_iter().map(str::to_owned).collect();
            args.extend(extra);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (code, out, err) = cli(&dir, model, &env, &args).await;
            assert_eq!(code, 0, "{model} {args:?}: {out}\n{err}\nunanswered: {:?}", server.misses());
            out
        }
    };
    run(vec!["workspace", "init"], Some(workspace.to_str().expect("path").to_owned())).await;
    let out = run(vec!["--json", "run"], Some(source.to_str().expect("path").to_owned())).await;
    let ran: Value = serde_json::from_str(&out).expect("run json");
    let job = ran["job"]["id"].as_str().expect("job id").to_owned();
    assert_eq!(ran["job"]["status"], "awaiting_strategy_approval", "{ran}");
    for args in [vec!["approve", &job, "strategy"], vec!["approve", &job, "draft"], vec!["publish-now", &job]] {
        let args: Vec<String> = args.into_iter().map(str::to_owned).collect();
        let (code, out, err) = cli(dir.path(), model, &env, &args.iter().map(String::as_str).collect::<Vec<_>>()).await;
        assert_eq!(code, 0, "{args:?}: {out}\n{err}\nunanswered: {:?}", server.misses());
    }
    let (_, shown, _) = cli(dir.path(), model, &env, &["--json", "show", &job]).await;
    let shown: Value = serde_json::from_str(&shown).expect("show json");
    assert_eq!(shown["job"]["status"], "verified", "{}", shown["job"]);
    assert!(server.misses().is_empty(), "{:?}", server.misses());

    // Each flawed first answer took one corrective turn, counted for its role; the answers
    // accepted are the corrected ones.
    for (role, repairs) in REPAIRED {
        let used = shown["model_use"]
            .as_array()
            .and_then(|u| u.iter().find(|u| u["role"] == role))
            .unwrap_or_else(|| panic!("{role} in {}", shown["model_use"]));
        assert_eq!(used["repairs"].as_u64(), Some(repairs), "{model} {role}: {used}");
        assert_eq!(used["failed"], 0, "{model} {role}");
        let mine: Vec<_> = server.served().into_iter().filter(|s| s.role == role).collect();
        assert_eq!(used["model_calls"].as_u64(), Some(mine.len() as u64), "{role}");
        assert_eq!(used["input_tokens"].as_u64(), Some(mine.iter().map(|s| s.input_tokens).sum::<u64>()), "{role}");
    }
    let advice = shown["analysis"]["moments"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["evidence_id"] == "m-advice"))
        .expect("the corrected moment");
    assert_eq!(advice["quote"], "design for the worst connection your users will ever have, not the best.");
    assert_eq!(advice["end_ms"], 92600);
    // The text table says the same.
    let (_, table, _) = cli(dir.path(), model, &env, &["show", &job]).await;
    assert!(table.contains("REPAIRS"), "{table}");
    let nimi_row = table.lines().find(|l| l.trim_start().starts_with("nimi ")).unwrap_or_else(|| panic!("{table}"));
    assert_eq!(nimi_row.split_whitespace().nth(4), Some("1"), "{nimi_row}");
}

#[tokio::test]
async fn a_flawed_model_is_corrected_to_a_verified_job_over_openai() {
    corrected_on(Wire::OpenAi).await;
}

#[tokio::test]
async fn a_flawed_model_is_corrected_to_a_verified_job_over_gemini() {
    corrected_on(Wire::Gemini).await;
}

/// With repairs off, the first flawed answer ends the job at its role with its code, the run
/// says so (and never that the stage's output was accepted), and nothing is published.
#[tokio::test]
async fn without_repairs_the_same_model_stops_at_the_first_role_with_its_code() {
    for wire in [Wire::OpenAi, Wire::Gemini] {
        let recordings = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings");
        let folder = if wire == Wire::OpenAi { "openai" } else { "gemini" };
        let key = "recorded-key-1234";
        let server = RecordedModel::start(wire, &recordings.join("flawed").join(folder), key).await;
        let (model, mut env) = env_for(wire, &server, key);
        env.push(("HARMONIA_MODEL_REPAIRS", "0"));
        let dir = harmonia_testkit::temp_dir();
        let workspace = recordings.join("job/workspace.toml");
        let (code, _, err) = cli(dir.path(), model, &env, &["workspace", "init", workspace.to_str().expect("p")]).await;
        assert_eq!(code, 0, "{err}");
        let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/launch-talk.json");
        let (code, out, err) = cli(dir.path(), model, &env, &["run", source.to_str().expect("path")]).await;
        assert_ne!(code, 0, "{model}: {out}");
        assert!(!out.contains("accepted"), "{model}: a failed stage is never reported accepted: {out}");
        assert!(out.contains("routing_mismatch") || err.contains("routing_mismatch"), "{model}: {out}\n{err}");
        let (_, listing, _) = cli(dir.path(), model, &env, &["--json", "status"]).await;
        let jobs: Value = serde_json::from_str(&listing).expect("status json");
        let job = &jobs["jobs"][0]["job"];
        assert_eq!(job["status"], "failed", "{model}: {job}");
        assert_eq!(
            (job["failure"]["code"].as_str(), job["failure"]["role"].as_str()),
            (Some("routing_mismatch"), Some("harmonia"))
        );
        let served: Vec<String> = server.served().into_iter().map(|s| s.recording).collect();
        assert_eq!(served, ["harmonia-analyze.1"], "{model}: one answer, no corrective turn");
        let id = job["id"].as_str().expect("id");
        let (_, shown, _) = cli(dir.path(), model, &env, &["--json", "show", id]).await;
        let shown: Value = serde_json::from_str(&shown).expect("show json");
        assert!(shown.get("publication").is_none_or(Value::is_null), "nothing was published: {shown}");
    }
}

/// A job failed by a contract error is run again from its failed step with `harmonia retry`:
/// while the model still answers wrongly it fails again with the same code, and once the model
/// is allowed to correct itself it reaches the strategy gate. Each retry is recorded with who
/// asked; a job that is not failed is refused with the reason, on the CLI and over the API.
#[tokio::test]
async fn a_job_failed_by_a_contract_error_is_retried_to_the_strategy_gate() {
    let recordings = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings");
    let key = "recorded-key-1234";
    let server = RecordedModel::start(Wire::OpenAi, &recordings.join("flawed/openai"), key).await;
    let (model, env) = env_for(Wire::OpenAi, &server, key);
    let mut strict = env.clone();
    strict.push(("HARMONIA_MODEL_REPAIRS", "0"));
    let dir = harmonia_testkit::temp_dir();
    let workspace = recordings.join("job/workspace.toml");
    let (code, _, err) = cli(dir.path(), model, &env, &["workspace", "init", workspace.to_str().expect("p")]).await;
    assert_eq!(code, 0, "{err}");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/launch-talk.json");
    let (code, out, _) = cli(dir.path(), model, &strict, &["--json", "run", source.to_str().expect("path")]).await;
    assert_eq!(code, 1, "{out}");
    let (_, listing, _) = cli(dir.path(), model, &env, &["--json", "status"]).await;
    let jobs: Value = serde_json::from_str(&listing).expect("status json");
    let job = jobs["jobs"][0]["job"]["id"].as_str().expect("job id").to_owned();

    // The model still answers wrongly and may not correct itself: the step fails again.
    let (code, out, err) = cli(dir.path(), model, &strict, &["retry", &job]).await;
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("Retrying the analyze step") && out.contains("routing_mismatch"), "{out}");
    assert!(err.contains("[routing_mismatch]") && err.contains("Nothing was published"), "{err}");

    // Allowed its corrective turns, it gets through, and the job waits at the strategy gate.
    let (code, out, err) = cli(dir.path(), model, &env, &["--json", "retry", &job]).await;
    assert_eq!(code, 0, "{out}\n{err}\nunanswered: {:?}", server.misses());
    let retried: Value = serde_json::from_str(&out).expect("retry json");
    assert_eq!(retried["job"]["status"], "awaiting_strategy_approval", "{retried}");
    assert_eq!(retried["retry"]["by"], "cli");
    assert_eq!(retried["retry"]["failure"]["code"], "routing_mismatch");

    let (_, shown, _) = cli(dir.path(), model, &env, &["--json", "show", &job]).await;
    let shown: Value = serde_json::from_str(&shown).expect("show json");
    let retries = shown["retries"].as_array().expect("retries");
    assert_eq!(retries.len(), 2, "{shown}");
    assert!(retries.iter().all(|r| r["by"] == "cli" && r["failure"]["stage"] == "analyze"));
    let harmonia = shown["model_use"].as_array().and_then(|u| u.iter().find(|u| u["role"] == "harmonia"));
    let harmonia = harmonia.expect("harmonia's use");
    // Two failed routings (the run and the first retry), then the corrected ones.
    assert_eq!((harmonia["failed"].as_u64(), harmonia["repairs"].as_u64()), (Some(2), Some(2)), "{harmonia}");
    let (_, table, _) = cli(dir.path(), model, &env, &["show", &job]).await;
    assert!(table.contains("retried") && table.contains("by cli"), "{table}");

    // Nothing failed now: another retry is refused, saying why, on the CLI and over the API.
    let (code, _, err) = cli(dir.path(), model, &env, &["retry", &job]).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("[invalid_transition]") && err.contains("awaiting_strategy_approval"), "{err}");
    let (_, added, _) = cli(dir.path(), model, &env, &["--json", "operator", "add", "ana"]).await;
    let added: Value = serde_json::from_str(&added).expect("operator json");
    let credential = added["credential"].as_str().expect("credential");
    let (mut serve, url) = FunctionProcess::serve_cli(dir.path(), &["--model", model], &env, &["HARMONIA_MODEL"]).await;
    let client = harmonia_client::Client::new(&url, harmonia_client::Auth::from_text(credential)).expect("client");
    let refused = client.retry(&job.parse().expect("job id")).await.map(|_| ());
    serve.kill().await.expect("stop serve");
    let refused = refused.expect_err("nothing to retry");
    assert_eq!(refused.code, harmonia_contracts::Code::InvalidTransition, "{refused}");
    assert!(refused.message.contains("awaiting_strategy_approval"), "{refused}");
}

/// A job under a token budget stops before the call that would pass it, with
/// `budget_exhausted`, waiting where it is (stalled, not failed, nothing published); `show`
/// prints what it used against the limit; once the workspace raises the limit, the next
/// command carries the job on to the strategy gate.
#[tokio::test]
async fn a_job_stops_at_its_token_budget_and_carries_on_once_it_is_raised() {
    let recordings = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings");
    let key = "recorded-key-1234";
    let server = RecordedModel::start(Wire::OpenAi, &recordings.join("job/openai"), key).await;
    let (model, env) = env_for(Wire::OpenAi, &server, key);
    let dir = harmonia_testkit::temp_dir();
    let base = std::fs::read_to_string(recordings.join("job/workspace.toml")).expect("workspace");
    let with_limit = |limit: u64| {
        let file = dir.path().join(format!("workspace-{limit}.toml"));
        std::fs::write(&file, format!("{base}\n[model]\nmax_tokens_per_job = {limit}\n")).expect("write");
        file.to_str().expect("path").to_owned()
    };
    const LIMIT: u64 = 5000;
    let (code, _, err) = cli(dir.path(), model, &env, &["workspace", "init", &with_limit(LIMIT)]).await;
    assert_eq!(code, 0, "{err}");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/launch-talk.json");
    let (code, out, err) = cli(dir.path(), model, &env, &["run", source.to_str().expect("path")]).await;
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("[budget_exhausted]") && err.contains("max_tokens_per_job"), "{err}");
    assert!(err.contains("nothing was published"), "{err}");

    let (_, listing, _) = cli(dir.path(), model, &env, &["--json", "status"]).await;
    let jobs: Value = serde_json::from_str(&listing).expect("status json");
    let job = &jobs["jobs"][0]["job"];
    let id = job["id"].as_str().expect("id").to_owned();
    assert_eq!(job["status"], "ingested", "it waits where it stopped: {job}");
    assert_eq!(job["stalled"]["code"], "budget_exhausted", "{job}");
    assert!(job.get("failure").is_none(), "a spent budget never fails the job: {job}");
    let (_, shown, _) = cli(dir.path(), model, &env, &["--json", "show", &id]).await;
    let shown: Value = serde_json::from_str(&shown).expect("show json");
    let used = shown["budget"]["used"].as_u64().expect("used");
    assert_eq!(shown["budget"]["limit"], LIMIT, "{}", shown["budget"]);
    let reported: u64 = server.served().iter().map(|s| s.input_tokens + s.output_tokens).sum();
    assert_eq!(used, reported, "what the provider counted is what the budget counts");
    assert!(used <= LIMIT, "no call was made past the limit: {used}");
    let (_, table, _) = cli(dir.path(), model, &env, &["show", &id]).await;
    assert!(table.contains(&format!("{used} of {LIMIT} tokens used")), "{table}");
    // Still under the same limit, the next command stops at the same place, calling nothing.
    let calls = server.served().len();
    let (code, _, err) = cli(dir.path(), model, &env, &["status", &id]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(server.served().len(), calls, "no model call past the budget");

    // Raised, the job carries on from where it waited.
    let (code, _, err) = cli(dir.path(), model, &env, &["workspace", "update", &with_limit(1_000_000)]).await;
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = cli(dir.path(), model, &env, &["status", &id]).await;
    assert_eq!(code, 0, "{out}\n{err}\nunanswered: {:?}", server.misses());
    assert!(out.contains("awaiting_strategy_approval"), "{out}");
    let (_, shown, _) = cli(dir.path(), model, &env, &["--json", "show", &id]).await;
    let shown: Value = serde_json::from_str(&shown).expect("show json");
    assert_eq!(shown["budget"]["limit"], 1_000_000);
    assert!(shown["job"].get("stalled").is_none(), "{}", shown["job"]);
}

/// `harmonia eval --json` reports every role's and every source's figures: on the offline
/// model over the bundled examples, every role passes first time; on the recorded imperfect
/// model, the flawed roles pass only after their corrective turns, with their misses by code,
/// and a price table turns the tokens into a cost. It publishes nothing and leaves the data
/// dir it was given untouched.
#[tokio::test]
async fn eval_reports_pass_rates_misses_tokens_latency_and_cost() {
    let dir = harmonia_testkit::temp_dir();
    let (code, out, err) = cli(dir.path(), "offline", &[], &["--json", "eval"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let report: Value = serde_json::from_str(&out).expect("eval json");
    let role_keys = [
        "invocations",
        "first_try_pass_rate",
        "after_repair_pass_rate",
        "repairs",
        "failures",
        "input_tokens",
        "output_tokens",
        "latency_ms_p50",
        "latency_ms_p95",
    ];
    let roles = report["roles"].as_object().expect("roles");
    for role in ["harmonia", "nimi", "ryan", "temi", "noni", "dara"] {
        let r = &roles[role];
        for key in role_keys {
            assert!(r.get(key).is_some(), "{role} lacks {key}: {r}");
        }
        assert_eq!((r["first_try_pass_rate"].as_f64(), r["after_repair_pass_rate"].as_f64()), (Some(1.0), Some(1.0)));
        assert!(r["input_tokens"].as_u64() > Some(0), "{role}: {r}");
    }
    let jobs = report["jobs"].as_array().expect("jobs");
    let sources: Vec<&str> = jobs.iter().filter_map(|j| j["source"].as_str()).collect();
    assert_eq!(sources, ["launch-talk.json", "ranger-briefing.srt", "trail-maintenance.vtt"]);
    for j in jobs {
        for key in ["reached_draft_gate", "stopped_at", "input_tokens", "output_tokens", "cost_usd"] {
            assert!(j.get(key).is_some(), "{key}: {j}");
        }
        assert_eq!(
            (&j["reached_draft_gate"], &j["stopped_at"], &j["cost_usd"]),
            (&Value::Bool(true), &Value::Null, &Value::Null)
        );
    }
    assert!(std::fs::read_dir(dir.path()).map(|d| d.count()).unwrap_or(0) == 0, "the given data dir is untouched");

    // The recorded imperfect model, over a folder of one source, with prices.
    let recordings = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings");
    let key = "recorded-key-1234";
    let server = RecordedModel::start(Wire::OpenAi, &recordings.join("flawed/openai"), key).await;
    let (model, env) = env_for(Wire::OpenAi, &server, key);
    let folder = dir.path().join("sources");
    std::fs::create_dir_all(&folder).expect("folder");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/launch-talk.json");
    std::fs::copy(&source, folder.join("launch-talk.json")).expect("copy");
    let prices = dir.path().join("prices.toml");
    std::fs::write(&prices, "[models.\"gpt-4.1-mini\"]\ninput_per_million = 0.40\noutput_per_million = 1.60\n")
        .expect("prices");
    let workspace = recordings.join("job/workspace.toml");
    let args = [
        "--json",
        "eval",
        "--sources",
        folder.to_str().expect("p"),
        "--config",
        workspace.to_str().expect("p"),
        "--prices",
        prices.to_str().expect("p"),
    ];
    let (code, out, err) = cli(dir.path(), model, &env, &args).await;
    assert_eq!(code, 0, "{out}\n{err}\nunanswered: {:?}", server.misses());
    let report: Value = serde_json::from_str(&out).expect("eval json");
    for (role, first) in [("harmonia", 0.0), ("nimi", 0.0), ("ryan", 0.0), ("temi", 0.0), ("noni", 0.5), ("dara", 0.5)]
    {
        let r = &report["roles"][role];
        assert_eq!(r["first_try_pass_rate"].as_f64(), Some(first), "{role}: {r}");
        assert_eq!(r["after_repair_pass_rate"].as_f64(), Some(1.0), "{role}: {r}");
    }
    let failures = &report["roles"]["harmonia"]["failures"];
    assert_eq!(
        (failures["routing_mismatch"].as_u64(), failures["schema_violation"].as_u64()),
        (Some(1), Some(2)),
        "{failures}"
    );
    assert_eq!(report["roles"]["temi"]["failures"]["tool_not_allowed"], 1);
    let job = &report["jobs"][0];
    assert_eq!(job["reached_draft_gate"], true, "{job}");
    let (input, output) = (job["input_tokens"].as_u64().expect("in"), job["output_tokens"].as_u64().expect("out"));
    let reported: (u64, u64) =
        server.served().iter().fold((0, 0), |(i, o), s| (i + s.input_tokens, o + s.output_tokens));
    assert_eq!((input, output), reported, "the tokens are the provider's");
    let cost = job["cost_usd"].as_f64().expect("a cost");
    let expected = (input as f64 * 0.40 + output as f64 * 1.60) / 1_000_000.0;
    assert!((cost - expected).abs() < 1e-9, "{cost} against {expected}");
    // The text report names the same.
    let (code, table, _) = cli(dir.path(), "offline", &[], &["eval", "--sources", folder.to_str().expect("p")]).await;
    assert_eq!(code, 0);
    assert!(table.contains("FIRST TRY") && table.contains("launch-talk.json") && table.contains("reached"), "{table}");
    assert!(table.contains("tokens only"), "{table}");
}
