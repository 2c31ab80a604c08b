//! The operator console in a real browser: `harmonia serve` on a data dir with two workspaces
//! (the job's source, `examples/ranger-briefing.srt`, is not the bundled demo's),
//! driven by `infra/console/browser-test.mjs` in Debian's Chromium through playwright-core
//! (both installed by `infra/test.sh`, which names them in `HARMONIA_CHROMIUM` and
//! `HARMONIA_CONSOLE_MODULES`). Screenshots of every page land in `target/console-screenshots/`.

use harmonia_e2e::FunctionProcess;
use serde_json::Value;

fn installed(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run ./infra/test.sh, which installs the browser"))
}

async fn cli(dir: &std::path::Path, args: &[&str]) -> String {
    let (code, out, err) = FunctionProcess::run_cli(dir, args, &[], &[]).await;
    assert_eq!(code, 0, "harmonia {args:?}: {out}{err}");
    out
}

/// A new operator's credential in `workspace` (configured with the example first).
async fn operator(dir: &std::path::Path, workspace: &str, name: &str) -> String {
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workspace.toml");
    cli(dir, &["--workspace", workspace, "workspace", "init", example.to_str().expect("path")]).await;
    let added = cli(dir, &["--workspace", workspace, "--json", "operator", "add", name, "--admin"]).await;
    let added: Value = serde_json::from_str(&added).expect("operator add prints JSON");
    added["credential"].as_str().expect("the credential").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_chromium_an_operator_takes_a_job_from_sign_in_to_a_verified_post_and_the_console_refuses_what_it_must() {
    let (modules, chromium) = (installed("HARMONIA_CONSOLE_MODULES"), installed("HARMONIA_CHROMIUM"));
    let data = harmonia_testkit::temp_dir();
    let dir = data.path();
    let ana = operator(dir, "field-notes", "ana").await;
    let bo = operator(dir, "other-brand", "bo").await;
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/ranger-briefing.srt");
    let ran = cli(dir, &["--workspace", "field-notes", "--json", "run", source.to_str().expect("path")]).await;
    let ran: Value = serde_json::from_str(&ran).expect("run prints JSON");
    let job = ran["job"]["id"].as_str().expect("the job").to_owned();

    let (mut serve, url) = FunctionProcess::serve_cli(dir, &["--workspace", "field-notes"], &[], &[]).await;

    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../infra/console/browser-test.mjs");
    let screenshots = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/console-screenshots");
    // Only this run's screenshots count.
    let _ = std::fs::remove_dir_all(&screenshots);
    let out = tokio::process::Command::new("node")
        .arg(&script)
        .env("BASE_URL", &url)
        .env("CREDENTIAL", &ana)
        .env("OTHER_CREDENTIAL", &bo)
        .env("JOB", &job)
        .env("SCREENSHOTS", &screenshots)
        .env("HARMONIA_CONSOLE_MODULES", &modules)
        .env("HARMONIA_CHROMIUM", &chromium)
        .output()
        .await
        .expect("run node");
    serve.kill().await.expect("stop serve");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the browser test failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let checks: Vec<Value> = stdout.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert!(checks.iter().all(|c| c["ok"] == true), "{stdout}");
    for expected in [
        "a wrong credential is refused",
        "the job page renders the layout's entities",
        "a POST without the CSRF token is refused with 403",
        "a signed-out session is refused",
        "another workspace's job is not found",
        "the pages loaded no external URL",
        "the job page renders the layout's entities-375",
        "the strategy shows its evidence quotes with their times",
        "the draft shows Dara's seven assessments",
        "requesting changes leads to a new draft version",
        "the approved draft becomes a verified post",
        "the timeline has a bar per invocation",
        "a focused bar shows its duration and tokens",
        "the job page fits 375 px without scrolling sideways",
    ] {
        assert!(checks.iter().any(|c| c["check"] == expected), "{expected} was checked: {stdout}");
    }
    for page in ["sign-in", "jobs", "job", "strategy", "draft", "published", "timeline", "jobs-375", "job-375"] {
        assert!(screenshots.join(format!("{page}.png")).is_file(), "a screenshot of {page}");
    }
}
