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
