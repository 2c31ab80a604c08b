//! The operator console in a real browser: `harmonia serve` on a data dir with two workspaces,
//! driven by `infra/console/browser-test.mjs` in Debian's Chromium through playwright-core
//! (both installed by `infra/test.sh`, which names them in `HARMONIA_CHROMIUM` and
//! `HARMONIA_CONSOLE_MODULES`). The operator submits `examples/ranger-briefing.srt` (not the
//! bundled demo's source) through the upload page and takes it to a verified post; Nova and
//! the settings are checked on the same data, and a job whose source ingest flagged
//! (`tests/fixtures/open-day.json`) shows every flag. The other workspace holds a job whose
//! post is a thread (the recorded job of `recordings/thread`), shown and edited post by post.
//! Screenshots of every page land in `target/console-screenshots/`.

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

/// Configure `workspace` with the example file.
async fn configure(dir: &std::path::Path, workspace: &str) {
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workspace.toml");
    cli(dir, &["--workspace", workspace, "workspace", "init", example.to_str().expect("path")]).await;
}

/// A new operator's credential in `workspace`, an admin's when `admin`.
async fn operator(dir: &std::path::Path, workspace: &str, name: &str, admin: bool) -> String {
    let mut args = vec!["--workspace", workspace, "--json", "operator", "add", name];
    if admin {
        args.push("--admin");
    }
    let added: Value = serde_json::from_str(&cli(dir, &args).await).expect("operator add prints JSON");
    added["credential"].as_str().expect("the credential").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_chromium_an_operator_uploads_a_source_takes_it_to_a_verified_post_asks_nova_and_edits_settings() {
    let (modules, chromium) = (installed("HARMONIA_CONSOLE_MODULES"), installed("HARMONIA_CHROMIUM"));
    let data = harmonia_testkit::temp_dir();
    let dir = data.path();
    configure(dir, "field-notes").await;
    // Workspace B holds a job whose post is a thread, at its draft gate: the recorded job whose
    // plan makes its Bluesky item a thread, in B's own brand, publishing through the sandbox.
    let thread_brand = crate::threads::sandbox_workspace(dir);
    cli(dir, &["--workspace", "other-brand", "workspace", "init", thread_brand.to_str().expect("path")]).await;
    let model = crate::threads::thread_model().await;
    let launch = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/launch-talk.json");
    let run = ["--workspace", "other-brand", "--json", "run", launch.to_str().expect("path")];
    let (code, out, err) = crate::channels::cli(dir, &model.url, &run).await;
    assert_eq!(code, 0, "{out}{err}");
    let thread_job = serde_json::from_str::<Value>(&out).expect("run prints JSON")["job"]["id"]
        .as_str()
        .expect("the job")
        .to_owned();
    let approve = ["--workspace", "other-brand", "approve", thread_job.as_str(), "strategy"];
    let (code, out, err) = crate::channels::cli(dir, &model.url, &approve).await;
    assert_eq!(code, 0, "{out}{err}");
    let ana = operator(dir, "field-notes", "ana", true).await;
    let cy = operator(dir, "field-notes", "cy", false).await;
    let bo = operator(dir, "other-brand", "bo", true).await;
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/ranger-briefing.srt");
    // A job whose source ingest flagged, at its strategy gate.
    let flagged = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/open-day.json");
    let ran = cli(dir, &["--workspace", "field-notes", "--json", "run", flagged.to_str().expect("path")]).await;
    let ran: Value = serde_json::from_str(&ran).expect("run prints JSON");
    let flagged_job = ran["job"]["id"].as_str().expect("the job").to_owned();
    // A job whose title is one word of 200 characters: every page that shows it still fits.
    let word: String = "Riverbank".chars().cycle().take(200).collect();
    let source_path = source.to_str().expect("path");
    let ran = cli(dir, &["--workspace", "field-notes", "--json", "run", source_path, "--title", &word]).await;
    let ran: Value = serde_json::from_str(&ran).expect("run prints JSON");
    let long_job = ran["job"]["id"].as_str().expect("the job").to_owned();

    let (mut serve, url) = FunctionProcess::serve_cli(dir, &["--workspace", "field-notes"], &[], &[]).await;

    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../infra/console/browser-test.mjs");
    let screenshots = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/console-screenshots");
    // Only this run's screenshots count.
    let _ = std::fs::remove_dir_all(&screenshots);
    let out = tokio::process::Command::new("node")
        .arg(&script)
        .env("BASE_URL", &url)
        .env("CREDENTIAL", &ana)
        .env("OPERATOR_CREDENTIAL", &cy)
        .env("OTHER_CREDENTIAL", &bo)
        .env("SOURCE", &source)
        .env("FLAGGED_JOB", &flagged_job)
        .env("LONG_JOB", &long_job)
        .env("THREAD_JOB", &thread_job)
        .env("SCREENSHOTS", &screenshots)
        .env("HARMONIA_CONSOLE_MODULES", &modules)
        .env("HARMONIA_CHROMIUM", &chromium)
        .env("HARMONIA_BIN", FunctionProcess::cli())
        .env("DATA_DIR", dir)
        .env("HARMONIA_SKILLS_DIR", std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills"))
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
        "a file that is not a transcript is refused with a sentence",
        "choosing another file clears the last refusal",
        "the uploaded source becomes a job with its title",
        "Nova answers with the evidence it cites",
        "Nova's tool call shows its exact envelope",
        "Nova's tool envelopes wait behind Details",
        "Nova answers \"What is waiting for me?\" with the waiting jobs by name",
        "another workspace's Nova finds nothing of the job",
        "a bad setting is refused naming its field",
        "an admin saves the settings as the next version",
        "an operator sees the settings read-only",
        "an operator's change to the settings is refused with 403",
        "the job page renders the layout's entities",
        "a POST without the CSRF token is refused with 403",
        "a signed-out session is refused",
        "another workspace's job is not found",
        "the pages loaded no external URL",
        "the job page renders the layout's entities-375",
        "the strategy shows its evidence quotes with their times",
        "the draft shows Dara's seven assessments",
        "the draft is a card for its platform, its length as the platform counts it",
        "the job page shows the draft, then the decision, then the evidence; the tables on demand",
        "the approval's outcome stays on screen while the job moves",
        "the job's status is a sentence",
        "requesting changes leads to a new draft version",
        "a double click sends one decision",
        "a double click shows no error",
        "an outcome can be dismissed",
        "the navigation shows only when signed in",
        "the jobs page opens on what waits for you, and says for what",
        "the approved draft becomes a verified post",
        "Maya's job view reads as cards with labels, the fields on demand",
        "before the first read the job page says when engagement is read",
        "harmonia metrics takes and lists the 1 h snapshot",
        "the job page shows the snapshot as the platform counted it",
        "the timeline has a bar per invocation",
        "a focused bar shows its duration and tokens",
        "a late answer for the page left does not replace the next one",
        "the list on its way is marked busy",
        "the status filter leaves out other statuses-375",
        "the job page fits 375 px without scrolling sideways",
        "the page follows prefers-color-scheme: dark",
        "the nova page fits 375 px without scrolling sideways",
        "the settings page fits 375 px without scrolling sideways",
        "the upload page fits 375 px without scrolling sideways",
        "the job page lists every flag of the source",
        "a flag shows its text, cue, time and why",
        "the flagged script is text, never an element",
        "a quote said near a flag says so beside it",
        "the flagged job page fits 375 px without scrolling sideways",
        "the calendar shows the scheduled post at its time in the workspace's time zone",
        "the calendar shades the posting windows",
        "a post is rescheduled from the calendar with the keyboard",
        "a post is published now from the calendar",
        "the calendar page fits 375 px without scrolling sideways",
        "the jobs list shows a 200-character word and fits 375 px",
        "the workspace's activity shows Nova's answers beside the jobs' work",
        "each day shows its records, p50 and p95 and tokens",
        "a filter by agent keeps only that agent",
        "the activity page fits 375 px without scrolling sideways",
        "the activity page shows each day's figures at 375 px",
        "the job page of a 200-character word fits 375 px",
        "the calendar-month page fits 375 px without scrolling sideways",
        "a thread shows a card per post, in order",
        "a thread shows a card per post, in order-375",
        "each post of a thread shows its own length",
        "the thread page fits 375 px without scrolling sideways",
        "post 2 of a thread is edited in its own box, the other posts kept",
        "a published thread is verified and lists each post as posted",
    ] {
        assert!(checks.iter().any(|c| c["check"] == expected), "{expected} was checked: {stdout}");
    }
    for page in [
        "sign-in",
        "upload",
        "jobs",
        "job",
        "strategy",
        "draft",
        "published",
        "engagement",
        "timeline",
        "nova",
        "settings",
        "settings-operator",
        "jobs-375",
        "job-375",
        "upload-375",
        "nova-375",
        "settings-375",
        "flags",
        "flags-375",
        "calendar",
        "calendar-375",
        "calendar-month-375",
        "activity",
        "activity-375",
        "thread",
        "thread-375",
        "thread-published",
    ] {
        assert!(screenshots.join(format!("{page}.png")).is_file(), "a screenshot of {page}");
        // Each page in both colour schemes: the 375 px pass prefers dark, the other light.
        let other = if page.ends_with("-375") { "light" } else { "dark" };
        for axe in [
            format!("axe finds no violation on the {page} page"),
            format!("axe finds no violation on the {page} page ({other})"),
        ] {
            assert!(checks.iter().any(|c| c["check"] == axe.as_str()), "{axe} was checked: {stdout}");
        }
        assert!(screenshots.join(format!("{page}-{other}.png")).is_file(), "a screenshot of {page} in {other}");
        let fits = format!("the {page} page does not scroll sideways");
        assert!(checks.iter().any(|c| c["check"] == fits.as_str()), "{fits} was checked: {stdout}");
    }
}
