//! The `harmonia` command as an operator runs it: exit codes and the words on stderr.

use harmonia_e2e::FunctionProcess;

mod disk;

/// Run `harmonia ARGS` on a fresh embedded data dir; (exit code, stdout, stderr).
async fn harmonia(data_dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    FunctionProcess::run_cli(data_dir, args, &[], &[]).await
}

#[tokio::test]
async fn an_unknown_job_is_not_found_with_exit_1_in_every_command() {
    let dir = harmonia_testkit::temp_dir();
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workspace.toml");
    let (code, _, err) = harmonia(dir.path(), &["workspace", "init", example.to_str().expect("path")]).await;
    assert_eq!(code, 0, "{err}");
    for args in [
        &["status", "job-nope"][..],
        &["activity", "job-nope"],
        &["show", "job-nope"],
        &["approve", "job-nope", "strategy"],
        &["reject", "job-nope", "draft", "--reason", "Off brand."],
    ] {
        let (code, out, err) = harmonia(dir.path(), args).await;
        assert_eq!(code, 1, "{args:?}: {out} {err}");
        assert!(err.contains("[not_found]"), "{args:?}: {err}");
        assert!(!err.contains("Error {") && !err.contains("Some("), "a sentence, not debug formatting: {err}");
    }
}

#[tokio::test]
async fn show_prints_a_verified_job_whole_as_json_and_as_text() {
    let dir = harmonia_testkit::temp_dir();
    let (code, out, err) = harmonia(dir.path(), &["--json", "demo"]).await;
    assert_eq!(code, 0, "{err}");
    let demo: serde_json::Value = serde_json::from_str(&out).expect("demo json");
    let job = demo["job"]["id"].as_str().expect("job id").to_owned();
    // The demo keeps its own data dir and workspace.
    let demo_dir = dir.path().join("demo");
    let show = |args: &'static [&'static str]| {
        let (demo_dir, job) = (demo_dir.clone(), job.clone());
        async move {
            let mut all = vec!["--workspace", "demo"];
            all.extend_from_slice(args);
            all.push(&job);
            harmonia(&demo_dir, &all).await
        }
    };

    let (code, out, err) = show(&["--json", "show"]).await;
    assert_eq!(code, 0, "{err}");
    let d: serde_json::Value = serde_json::from_str(&out).expect("show json");
    assert_eq!(d["job"]["status"], "verified");
    assert!(
        d["strategy"]["content_hash"].is_string() && d["strategy"]["briefs"][0]["evidence"][0]["quote"].is_string()
    );
    let selected = &d["selected_item"];
    assert!(d["plan"]["items"].as_array().is_some_and(|items| items.contains(selected)), "the selected plan item");
    let drafts = d["drafts"].as_array().expect("drafts");
    let reviews = d["reviews"].as_array().expect("reviews");
    assert!(!drafts.is_empty());
    assert_eq!(reviews.len(), drafts.len(), "one review per pass");
    for review in reviews {
        assert_eq!(review["assessments"].as_object().map(|a| a.len()), Some(7), "all seven assessments: {review}");
    }
    let policy = d["policy"].as_array().and_then(|p| p.last()).expect("policy result");
    assert_eq!(policy["outcome"], "passed");
    assert_eq!(policy["rules"].as_array().map(Vec::len), Some(15));
    assert_eq!(d["publication"]["receipt"]["outcome"]["outcome"], "applied");
    assert_eq!(d["publication"]["verification"]["outcome"]["outcome"], "verified");
    assert_eq!(d["decisions"].as_array().map(Vec::len), Some(2));

    // The cost view: per role, its invocations, model calls and tokens, as the activity adds up.
    let (code, activity, err) = show(&["--json", "activity"]).await;
    assert_eq!(code, 0, "{err}");
    let activity: serde_json::Value = serde_json::from_str(&activity).expect("activity json");
    assert_eq!(activity["model_use"], d["model_use"], "show and activity agree");
    let records = activity["activity"].as_array().expect("records");
    let use_of = |role: &str| d["model_use"].as_array().and_then(|u| u.iter().find(|u| u["role"] == role)).cloned();
    for role in ["harmonia", "nimi", "ryan", "temi", "noni", "dara"] {
        let used = use_of(role).unwrap_or_else(|| panic!("{role} in {}", d["model_use"]));
        let mine: Vec<&serde_json::Value> =
            records.iter().filter(|r| r["agent"] == role && r["operation"] != "tool_call").collect();
        let sum = |key: &str| mine.iter().map(|r| r[key].as_u64().expect(key)).sum::<u64>();
        let tokens = |key: &str| mine.iter().map(|r| r["usage"][key].as_u64().expect(key)).sum::<u64>();
        assert_eq!(used["invocations"].as_u64(), Some(mine.len() as u64), "{role}");
        assert_eq!(used["model_calls"].as_u64(), Some(sum("model_calls")), "{role}");
        assert!(used["model_calls"].as_u64() >= used["invocations"].as_u64(), "{role}: a call per invocation at least");
        assert_eq!(used["input_tokens"].as_u64(), Some(tokens("input_tokens")), "{role}");
        assert_eq!(used["output_tokens"].as_u64(), Some(tokens("output_tokens")), "{role}");
    }

    // Text: the posted draft verbatim, line for line, and its count against the limit.
    let (code, text, err) = show(&["show"]).await;
    assert_eq!(code, 0, "{err}");
    let last = drafts.last().expect("a draft");
    let body = last["body"].as_str().expect("body");
    assert!(text.contains(body), "the draft verbatim:\n{text}");
    let count = format!(
        "{} / {} {}",
        last["length"]["used"],
        last["length"]["limit"],
        last["length"]["unit"].as_str().expect("unit")
    );
    assert!(text.contains(&count), "{count} in:\n{text}");
    assert!(!text.contains('\x1b'), "no colour when stdout is not a terminal");
    for heading in ["Strategy (Ryan)", "Plan (Temi)", "Review, pass 1 (Dara)", "Policy", "Publication", "Model use"] {
        assert!(text.lines().any(|l| l == heading), "{heading} in:\n{text}");
    }

    let (code, _, err) = harmonia(&demo_dir, &["--workspace", "demo", "show", "job-nope"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("[not_found]"), "{err}");
}

/// Twenty operators at once on one data dir: twenty `run`s, then twenty strategy approvals,
/// twenty draft approvals and twenty `publish-now`s, each its own process. Every command exits 0 — above all none
/// after its decision was recorded — and every job ends verified.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_concurrent_commands_on_one_data_dir_never_fail_after_a_recorded_decision() {
    const PROCESSES: usize = 20;
    let dir = harmonia_testkit::temp_dir();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let example = root.join("examples/workspace.toml");
    let (code, _, err) = harmonia(dir.path(), &["workspace", "init", example.to_str().expect("path")]).await;
    assert_eq!(code, 0, "{err}");
    let sample = root.join("examples/launch-talk.json");
    let sample = sample.to_str().expect("path");
    // Every command of `args` at once, each its own process; (its words, its outcome) in order.
    let all = |args: Vec<Vec<String>>| {
        let dir = dir.path().to_owned();
        async move {
            let mut set = tokio::task::JoinSet::new();
            for (n, a) in args.into_iter().enumerate() {
                let dir = dir.clone();
                set.spawn(async move {
                    let words: Vec<&str> = a.iter().map(String::as_str).collect();
                    (n, words.join(" "), harmonia(&dir, &words).await)
                });
            }
            let mut done: Vec<_> = set.join_all().await;
            done.sort_by_key(|(n, _, _)| *n);
            done.into_iter().map(|(_, words, outcome)| (words, outcome)).collect::<Vec<_>>()
        }
    };
    let runs = all((0..PROCESSES)
        .map(|n| vec!["--json".into(), "run".into(), sample.into(), "--title".into(), format!("Talk {n}")])
        .collect())
    .await;
    let mut jobs = Vec::new();
    for (args, (code, out, err)) in runs {
        assert_eq!(code, 0, "{args}: {err}");
        let run: serde_json::Value = serde_json::from_str(&out).expect("run json");
        assert_eq!(run["job"]["status"], "awaiting_strategy_approval", "{args}: {out}");
        jobs.push(run["job"]["id"].as_str().expect("job id").to_owned());
    }
    let decisions = |words: &'static [&'static str]| {
        jobs.iter()
            .map(|j| {
                let mut args: Vec<String> = vec![words[0].into(), j.clone()];
                args.extend(words[1..].iter().map(|w| (*w).to_owned()));
                args
            })
            .collect::<Vec<_>>()
    };
    // Approved drafts wait in the schedule; the operators then publish them all now.
    for words in [&["approve", "strategy"][..], &["approve", "draft"], &["publish-now"]] {
        for (args, (code, out, err)) in all(decisions(words)).await {
            assert_eq!(code, 0, "{args} exited {code} after its decision: {out} {err}");
            assert!(!err.contains("error"), "{args}: {err}");
        }
    }
    let (code, out, err) = harmonia(dir.path(), &["--json", "status"]).await;
    assert_eq!(code, 0, "{err}");
    let status: serde_json::Value = serde_json::from_str(&out).expect("status json");
    let statuses: Vec<&str> =
        status["jobs"].as_array().expect("jobs").iter().filter_map(|j| j["job"]["status"].as_str()).collect();
    assert_eq!(statuses, vec!["verified"; PROCESSES], "every job verified: {out}");
}

/// A chat completions endpoint that takes every call and never answers: a command calling it
/// stays mid-step, holding the step's queue lease and its claim. Each call is said on the
/// receiver as it arrives.
async fn a_model_that_never_answers() -> (String, tokio::sync::mpsc::UnboundedReceiver<()>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let answer = move |axum::extract::State(called): axum::extract::State<tokio::sync::mpsc::UnboundedSender<()>>| async move {
        let _ = called.send(());
        std::future::pending::<()>().await;
        axum::http::StatusCode::OK
    };
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(answer)).with_state(tx);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, rx)
}

/// The queue's leased messages in `dir`'s data file: when each lease lapses (ms since the epoch).
fn leases(dir: &std::path::Path) -> Vec<i64> {
    let db = rusqlite::Connection::open_with_flags(data_file(dir), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open the data file");
    db.busy_timeout(std::time::Duration::from_secs(10)).expect("busy timeout");
    let mut leased = db.prepare("SELECT visible_at_ms FROM bus_messages WHERE lease IS NOT NULL").expect("prepare");
    leased.query_map([], |r| r.get(0)).expect("query").collect::<Result<_, _>>().expect("rows")
}

/// A command that stops mid-step, on SIGTERM or killed outright with nothing run on its way
/// out, holds up no later command: the next `status` carries the job on to the strategy gate
/// before the lease the stopped command held would have lapsed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_stopped_mid_step_holds_up_no_later_command() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let example = root.join("examples/workspace.toml");
    let sample = root.join("examples/launch-talk.json");
    let (url, mut called) = a_model_that_never_answers().await;
    let env = [("OPENAI_BASE_URL", url.as_str()), ("OPENAI_MODEL", "gpt-4.1-mini"), ("OPENAI_API_KEY", "sk-e2e")];
    for signal in ["TERM", "KILL"] {
        let dir = harmonia_testkit::temp_dir();
        let (code, _, err) = harmonia(dir.path(), &["workspace", "init", example.to_str().expect("path")]).await;
        assert_eq!(code, 0, "{err}");
        while called.try_recv().is_ok() {}
        let mut run = FunctionProcess::cli_command(
            dir.path(),
            &["--model", "openai", "run", sample.to_str().expect("path")],
            &env,
            &["HARMONIA_MODEL"],
        )
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("harmonia run");
        tokio::time::timeout(std::time::Duration::from_secs(120), called.recv())
            .await
            .expect("the analysis called the model")
            .expect("a call");
        // Mid-step: the analysis delivery is leased to the command, until a moment well ahead.
        let [until] = leases(dir.path())[..] else { panic!("{signal}: one delivery leased mid-step") };

        if signal == "TERM" {
            let pid = run.id().expect("running").to_string();
            let sent = tokio::process::Command::new("kill").args(["-TERM", &pid]).status().await.expect("kill");
            assert!(sent.success());
            let out = run.wait_with_output().await.expect("the command ends");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(130), "128 + SIGINT, as shells expect: {err}");
            assert!(err.contains("[interrupted]") && err.contains("handed back"), "{err}");
            assert!(!err.contains("sk-e2e"), "{err}");
            assert!(leases(dir.path()).is_empty(), "the stopped command handed its lease back");
        } else {
            run.kill().await.expect("kill");
            assert_eq!(leases(dir.path()), [until], "killed outright, it handed nothing back");
        }

        let (code, out, err) =
            FunctionProcess::run_cli(dir.path(), &["--model", "offline", "--json", "status"], &[], &["HARMONIA_MODEL"])
                .await;
        let now = chrono::Utc::now().timestamp_millis();
        assert_eq!(code, 0, "{signal}: {err}");
        let jobs: serde_json::Value = serde_json::from_str(&out).expect("status json");
        assert_eq!(jobs["jobs"][0]["job"]["status"], "awaiting_strategy_approval", "{signal}: {out}");
        assert!(now < until, "{signal}: the next command waited out the lease ({} ms past it)", now - until);
        assert!(leases(dir.path()).is_empty(), "{signal}: nothing is left leased");
    }
}

/// The data file every command of a data dir opens.
fn data_file(dir: &std::path::Path) -> std::path::PathBuf {
    dir.join("harmonia.sqlite")
}

#[tokio::test]
async fn an_empty_or_damaged_data_file_is_refused_naming_it_and_never_recreated() {
    // A sound data file holding a job, and its backup.
    let sound = harmonia_testkit::temp_dir();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let example = root.join("examples/workspace.toml");
    let (code, _, err) = harmonia(sound.path(), &["workspace", "init", example.to_str().expect("path")]).await;
    assert_eq!(code, 0, "{err}");
    let sample = root.join("examples/launch-talk.json");
    let (code, out, err) = harmonia(sound.path(), &["--json", "run", sample.to_str().expect("path")]).await;
    assert_eq!(code, 0, "{err}");
    let run: serde_json::Value = serde_json::from_str(&out).expect("run json");
    let job = run["job"]["id"].as_str().expect("job").to_owned();
    let backup = sound.path().join("backup.sqlite");
    let (code, _, err) = harmonia(sound.path(), &["backup", backup.to_str().expect("path")]).await;
    assert_eq!(code, 0, "{err}");
    let whole = std::fs::read(&backup).expect("read the backup");
    let truncated = whole[..whole.len() / 2].to_vec();

    for (name, bytes) in [("empty", Vec::new()), ("garbage", vec![0x5a_u8; 8192]), ("truncated", truncated)] {
        let dir = harmonia_testkit::temp_dir();
        let file = data_file(dir.path());
        std::fs::write(&file, &bytes).expect("write");
        let (code, out, err) = harmonia(dir.path(), &["status"]).await;
        assert_eq!(code, 1, "{name}: {out} {err}");
        assert!(err.contains("[store_corrupt]") && err.contains(&file.display().to_string()), "{name}: {err}");
        assert!(err.contains("harmonia restore"), "{name}: says what to do: {err}");
        assert!(std::fs::read(&file).expect("read") == bytes, "{name}: the file is left as it was");

        // Doctor says it could not look inside, and why; it does not send the operator back to itself.
        let (code, out, err) = harmonia(dir.path(), &["doctor"]).await;
        assert_eq!(code, 1, "{name}: {out} {err}");
        assert!(out.contains("cannot be opened") && err.contains("[store_corrupt]"), "{name}: {out} {err}");
        assert!(!err.contains("harmonia doctor"), "{name}: {err}");

        // The advice works: the backup goes in its place and the unusable file is kept whole.
        let (code, out, err) = harmonia(dir.path(), &["restore", backup.to_str().expect("path")]).await;
        assert_eq!(code, 0, "{name}: {out} {err}");
        let kept = out
            .split("kept in ")
            .nth(1)
            .map(|k| k.trim().strip_suffix('.').unwrap_or(k.trim()))
            .expect("names where the old file is kept");
        assert!(std::fs::read(kept).expect("the kept file") == bytes, "{name}: kept byte for byte");
        let (code, out, err) = harmonia(dir.path(), &["status"]).await;
        assert_eq!(code, 0, "{name}: {err}");
        assert!(out.contains(&job), "{name}: the backup's job is back: {out}");
    }
}

#[tokio::test]
async fn one_bad_record_hides_no_job_doctor_names_it_and_a_backup_restores_everything() {
    let dir = harmonia_testkit::temp_dir();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let example = root.join("examples/workspace.toml");
    let sample = root.join("examples/launch-talk.json");
    let ok = |args: Vec<String>| {
        let dir = dir.path().to_owned();
        async move {
            let words: Vec<&str> = args.iter().map(String::as_str).collect();
            let (code, out, err) = harmonia(&dir, &words).await;
            assert_eq!(code, 0, "{words:?}: {out} {err}");
            out
        }
    };
    let words = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    ok(words(&["workspace", "init", example.to_str().expect("path")])).await;
    let mut jobs = Vec::new();
    for title in ["First talk", "Second talk"] {
        let out = ok(words(&["--json", "run", sample.to_str().expect("path"), "--title", title])).await;
        let run: serde_json::Value = serde_json::from_str(&out).expect("run json");
        jobs.push(run["job"]["id"].as_str().expect("job").to_owned());
    }
    // Every kind of record is there for doctor to read, decisions included.
    ok(words(&["approve", &jobs[1], "strategy"])).await;
    let backup = dir.path().join("before.sqlite");
    let out = ok(words(&["backup", backup.to_str().expect("path")])).await;
    assert!(out.starts_with("Backed up "), "{out}");
    let (code, out, err) = harmonia(dir.path(), &["doctor"]).await;
    assert_eq!(code, 0, "a sound data file: {out} {err}");

    // One job record damaged by hand.
    rusqlite::Connection::open(data_file(dir.path()))
        .and_then(|c| {
            c.execute("UPDATE documents SET data = '{broken' WHERE collection = 'jobs' AND id = ?1", [&jobs[0]])
        })
        .expect("damage a record");
    let status = ok(words(&["status"])).await;
    assert!(status.contains(&jobs[1]) && !status.contains(&jobs[0]), "the other job is still listed: {status}");
    let (code, out, err) = harmonia(dir.path(), &["doctor"]).await;
    assert_eq!(code, 1, "{out} {err}");
    assert!(out.contains(&format!("/jobs/{} (not JSON)", jobs[0])), "doctor names it: {out}");
    assert!(err.contains("[store_corrupt]"), "{err}");

    // Restored: both jobs are back, and what was there before is kept.
    let out = ok(words(&["restore", backup.to_str().expect("path")])).await;
    assert!(out.contains("Its previous content is kept in"), "{out}");
    let status = ok(words(&["status"])).await;
    assert!(jobs.iter().all(|j| status.contains(j.as_str())), "{status}");
    let (code, out, err) = harmonia(dir.path(), &["doctor"]).await;
    assert_eq!(code, 0, "{out} {err}");
}

/// A 3 MiB transcript (the documented limit is 4 MiB) runs like any other: its transcript is a
/// content-addressed blob in the data dir, the source record only names it, the job reaches
/// the strategy gate from it, and a backup carries it; a lost blob is named by `doctor` and a
/// restore brings it back.
#[tokio::test]
async fn a_three_mebibyte_source_is_a_blob_that_runs_backs_up_and_restores() {
    let dir = harmonia_testkit::temp_dir();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let example = root.join("examples/workspace.toml");
    let source = dir.path().join("keynote.vtt");
    let vtt = harmonia_testkit::samples::long_webvtt(3 * 1024 * 1024);
    assert!(vtt.len() >= 3 * 1024 * 1024 && vtt.len() < 4 * 1024 * 1024);
    std::fs::write(&source, &vtt).expect("write the source");
    let data = dir.path().join("data");
    let run = |args: &[&str]| {
        let (data, args) = (data.clone(), args.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        async move {
            let words: Vec<&str> = args.iter().map(String::as_str).collect();
            harmonia(&data, &words).await
        }
    };
    let (code, out, err) = run(&["workspace", "init", example.to_str().expect("path")]).await;
    assert_eq!(code, 0, "{out} {err}");
    let (code, out, err) = run(&["--json", "run", source.to_str().expect("path"), "--title", "Long keynote"]).await;
    assert_eq!(code, 0, "{out} {err}");
    let ran: serde_json::Value = serde_json::from_str(&out).expect("run prints JSON");
    let job = ran["job"]["id"].as_str().expect("job id").to_owned();
    assert_eq!(ran["job"]["status"], "awaiting_strategy_approval", "{ran}");

    // The record names the blob; the blob is the transcript's segments, stored once.
    let stored: serde_json::Value = rusqlite::Connection::open(data_file(&data))
        .and_then(|c| {
            c.query_row("SELECT data FROM documents WHERE collection = 'sources'", [], |r| r.get::<_, String>(0))
        })
        .map(|text| serde_json::from_str(&text).expect("json"))
        .expect("the source record");
    assert!(stored.get("segments").is_none(), "the record holds no transcript");
    let cues = vtt.matches(" --> ").count() as u64;
    assert_eq!(stored["body"]["segments"].as_u64(), Some(cues), "{}", stored["body"]);
    let digest = stored["body"]["blob"]["sha256"].as_str().expect("digest").to_owned();
    let blob = data.join("blobs/workspaces/default/sha256").join(&digest);
    let bytes = std::fs::read(&blob).expect("the blob file");
    assert_eq!(Some(bytes.len() as u64), stored["body"]["blob"]["bytes"].as_u64());
    let content: serde_json::Value = serde_json::from_slice(&bytes).expect("the blob is JSON");
    assert_eq!(content["segments"].as_array().map(Vec::len), Some(cues as usize));
    assert!(content["segments"][0]["text"].as_str().is_some_and(|t| t.starts_with("In week 1 the pilot carried")));

    // show reads it through the blob: every claim resolves to its span in the long transcript.
    let (code, out, err) = run(&["--json", "show", &job]).await;
    assert_eq!(code, 0, "{out} {err}");
    let (code, out, err) = run(&["doctor"]).await;
    assert_eq!(code, 0, "{out} {err}");

    let backup = dir.path().join("nightly.sqlite");
    let (code, out, err) = run(&["backup", backup.to_str().expect("path")]).await;
    assert_eq!(code, 0, "{out} {err}");
    assert!(out.contains("and 1 new blob of long sources"), "{out}");
    assert!(dir.path().join("nightly.sqlite.blobs/workspaces/default/sha256").join(&digest).exists());

    // The blob lost: doctor names the source and its blob, and the job view cannot silently
    // show an empty transcript.
    std::fs::remove_file(&blob).expect("lose the blob");
    let (code, out, err) = run(&["doctor"]).await;
    assert_eq!(code, 1, "{out} {err}");
    assert!(out.contains(&format!("(its transcript blob {digest} is missing)")), "{out}");
    let (code, out, err) = run(&["show", &job]).await;
    assert_eq!(code, 1, "{out} {err}");
    assert!(err.contains("[blob_corrupt]"), "{err}");

    let (code, out, err) = run(&["restore", backup.to_str().expect("path")]).await;
    assert_eq!(code, 0, "{out} {err}");
    assert!(out.contains("(1 blob of long sources added)"), "{out}");
    assert_eq!(std::fs::read(&blob).expect("the blob is back"), bytes);
    let (code, out, err) = run(&["doctor"]).await;
    assert_eq!(code, 0, "{out} {err}");
}
