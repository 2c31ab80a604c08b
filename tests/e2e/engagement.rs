//! The loop back from the platform, on the real PDS: a post published to Bluesky is read back
//! through the PDS (which proxies `app.bsky.feed.getPosts` to its AppView, here the recording
//! server `infra/pds/launch.mjs` runs, `HARMONIA_TEST_APPVIEW`) at 1 hour, 24 hours and 7 days
//! on the command's clock (`HARMONIA_NOW`). The snapshots are live metric records; the next
//! job in the workspace hands them and the fact derived from them to Nimi, whose memory angle
//! cites that fact and passes; Nova answers from them; past 180 days the fact is not offered.

use chrono::{Duration, Utc};
use harmonia_e2e::FunctionProcess;
use harmonia_e2e::recorded::{RecordedModel, Wire};
use serde_json::{Value, json};

use crate::channels::{KEY, account, data_dir, model_env, pds, recorded_model, show};

fn appview() -> String {
    std::env::var("HARMONIA_TEST_APPVIEW").expect(
        "HARMONIA_TEST_APPVIEW names the recorded AppView: run infra/emulators/start.sh and source infra/emulators/.run/env",
    )
}

/// Tell the recorded AppView what the post `uri` has drawn, or that the next `times` reads of
/// `method` fail.
async fn steer(path: &str, body: Value) {
    let answer = reqwest::Client::new().post(format!("{}{path}", appview())).json(&body).send().await.expect("appview");
    assert!(answer.status().is_success(), "{}", answer.status());
}

/// Tell the recorded AppView what the post `uri` has drawn: likes, reposts, replies, quotes.
async fn drawn(uri: &str, [likes, reposts, replies, quotes]: [u64; 4]) {
    let counts =
        json!({"uri": uri, "likeCount": likes, "repostCount": reposts, "replyCount": replies, "quoteCount": quotes});
    steer("/_recording/engagement", counts).await;
}

/// How many snapshots `harmonia metrics --json` listed.
fn taken(listed: &Value) -> usize {
    listed["snapshots"].as_array().map_or(0, Vec::len)
}

/// `harmonia --model openai ARGS` with the clock at `at` (when given).
async fn cli_at(
    dir: &std::path::Path,
    model: &str,
    at: Option<chrono::DateTime<Utc>>,
    args: &[&str],
) -> (i32, String, String) {
    let now = at.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    let mut env: Vec<(&str, &str)> = model_env(model).to_vec();
    if let Some(now) = &now {
        env.push(("HARMONIA_NOW", now));
    }
    let mut all = vec!["--model", "openai"];
    all.extend_from_slice(args);
    FunctionProcess::run_cli(dir, &all, &env, &["HARMONIA_MODEL"]).await
}

async fn json_of(dir: &std::path::Path, model: &str, at: chrono::DateTime<Utc>, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let (code, out, err) = cli_at(dir, model, Some(at), &all).await;
    assert_eq!(code, 0, "{out}{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The recorded answers of a whole job, except that Nimi's analysis adds a performance angle
/// on the first verified record it was given and a memory angle on the first fact (each filled
/// from Nimi's own input, so the recording proves what the input held).
fn with_memory_angles() -> harmonia_testkit::TempDir {
    let from = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings/job/openai");
    let dir = harmonia_testkit::temp_dir();
    for entry in std::fs::read_dir(&from).expect("recordings") {
        let path = entry.expect("entry").path();
        std::fs::copy(&path, dir.path().join(path.file_name().expect("name"))).expect("copy");
    }
    let nimi = dir.path().join("nimi.3.json");
    let mut answer: Value = serde_json::from_str(&std::fs::read_to_string(&nimi).expect("nimi")).expect("json");
    let content = answer["choices"][0]["message"]["content"].as_str().expect("content").to_owned();
    let mut analysis: Value = serde_json::from_str(&content).expect("analysis");
    let angles = analysis["angles"].as_array_mut().expect("angles");
    angles.push(json!({"kind": "performance", "title": "What drew replies before",
        "rationale": "Our last post on this drew replies from the people we want to reach.",
        "evidence": ["{{input:/verified_performance/0/post}}"]}));
    angles.push(json!({"kind": "memory", "title": "What our audience responds to",
        "rationale": "A remembered fact about how our posts do on this channel.",
        "evidence": ["m-none-lost"], "facts": ["{{input:/memory/0/id}}"]}));
    answer["choices"][0]["message"]["content"] = Value::String(analysis.to_string());
    std::fs::write(&nimi, answer.to_string()).expect("write");
    dir
}

#[tokio::test]
async fn a_bluesky_post_is_measured_at_each_offset_and_the_next_job_learns_from_it() {
    let model = recorded_model().await;
    let (handle, _did, app_password) = account().await;
    let dir = data_dir(&pds(), &handle, &app_password).await;
    let job = crate::channels::to_the_draft_gate(dir.path(), &model.url).await;
    for args in [["approve", job.as_str(), "draft"].as_slice(), &["publish-now", &job]] {
        let (code, out, err) = cli_at(dir.path(), &model.url, None, args).await;
        assert_eq!(code, 0, "{out}{err}");
    }
    let verified_at = Utc::now();
    let shown = show(dir.path(), &model.url, &job).await;
    assert_eq!(shown["job"]["status"], "verified", "{}", shown["publication"]);
    let uri = shown["publication"]["receipt"]["outcome"]["record"]["uri"].as_str().expect("uri").to_owned();
    let rkey = uri.rsplit('/').next().expect("rkey").to_owned();

    // Before an hour has passed, nothing is read.
    let none = json_of(dir.path(), &model.url, verified_at + Duration::minutes(30), &["metrics", &job]).await;
    assert_eq!(none, json!({"job": job, "snapshots": [], "offsets": ["1h", "24h", "7d"]}));

    drawn(&uri, [4, 1, 2, 0]).await;
    let hour = verified_at + Duration::minutes(61);
    let first = json_of(dir.path(), &model.url, hour, &["metrics", &job]).await;
    assert_eq!(taken(&first), 1, "{first}");

    // A failed read is tried again by the next command, and never stops this one.
    drawn(&uri, [11, 3, 5, 1]).await;
    steer("/_recording/fail", json!({"method": "app.bsky.feed.getPosts", "times": 1})).await;
    let day = verified_at + Duration::hours(24) + Duration::minutes(1);
    let (code, out, err) = cli_at(dir.path(), &model.url, Some(day), &["--json", "metrics", &job]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("could not be read from the platform; the next command tries again"), "{err}");
    assert_eq!(taken(&serde_json::from_str(&out).expect("json")), 1, "{out}");
    let second = json_of(dir.path(), &model.url, day, &["metrics", &job]).await;
    assert_eq!(taken(&second), 2, "{second}");

    drawn(&uri, [19, 4, 6, 2]).await;
    let week = verified_at + Duration::days(7) + Duration::minutes(1);
    let all = json_of(dir.path(), &model.url, week, &["metrics", &job]).await;
    let snapshots = all["snapshots"].as_array().expect("snapshots");
    let rows: Vec<Value> = snapshots
        .iter()
        .map(|s| {
            json!([s["offset"], s["platform"], s["likes"], s["reposts"], s["replies"], s["quotes"], s["provenance"]])
        })
        .collect();
    assert_eq!(
        rows,
        [
            json!(["1h", "bluesky", 4, 1, 2, 0, "live"]),
            json!(["24h", "bluesky", 11, 3, 5, 1, "live"]),
            json!(["7d", "bluesky", 19, 4, 6, 2, "live"]),
        ],
        "{all}"
    );
    for s in snapshots {
        assert_eq!(s["post"], rkey.as_str());
        assert!(s["taken_at"].as_str().is_some_and(|t| t.parse::<chrono::DateTime<Utc>>().is_ok()), "{s}");
    }

    // A fact derived from them, resting on the latest record, offered now. (Each command's
    // clock starts at its HARMONIA_NOW: a later command is given a later time.)
    let memory = json_of(dir.path(), &model.url, week + Duration::minutes(1), &["memory"]).await;
    let facts = memory["facts"].as_array().expect("facts");
    let median = facts.iter().find(|f| f["id"] == "fact-bluesky-median").unwrap_or_else(|| panic!("{memory}"));
    assert_eq!(median["sample_size"], 1);
    assert_eq!(median["evidence"], json!([format!("metric-{rkey}.7d")]));
    assert_eq!(median["offered"], true, "{median}");
    assert!(median["statement"].as_str().is_some_and(|s| s.contains("a median of 31 interactions")), "{median}");
    for key in ["id", "statement", "sample_size", "evidence", "computed_at", "expires_at"] {
        assert!(median.get(key).is_some(), "{key} in {median}");
    }

    // Nova answers how the posts did from the platform's numbers, citing the record.
    let asked = {
        let mut env = vec![("HARMONIA_NOW", (week + Duration::minutes(2)).to_rfc3339())];
        env.push(("HARMONIA_MODEL", "offline".to_owned()));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (code, out, err) =
            FunctionProcess::run_cli(dir.path(), &["--json", "ask", "How did last week's posts do?"], &env, &[]).await;
        assert_eq!(code, 0, "{out}{err}");
        serde_json::from_str::<Value>(&out).expect("ask json")
    };
    let cited: Vec<&str> = asked["answer"]["claims"]
        .as_array()
        .map(|c| {
            c.iter().flat_map(|c| c["evidence"].as_array().into_iter().flatten()).filter_map(Value::as_str).collect()
        })
        .unwrap_or_default();
    assert!(cited.contains(&format!("metric-{rkey}.7d").as_str()), "{asked}");
    assert!(asked.to_string().contains("19 likes"), "{asked}");

    // Bluesky's trending topics, through the account's PDS and its AppView.
    let signals = trends(dir.path(), week + Duration::minutes(3)).await;
    let topics: Vec<&str> = signals.iter().filter_map(|s| s["topic"].as_str()).collect();
    assert_eq!(topics[..3], ["Climate week", "Open source funding", "Product launches"], "{signals:?}");
    assert_eq!(signals[0]["source"], format!("Bluesky public trends, read for @{handle}"));
    assert_eq!(signals[0]["url"], "https://bsky.app/profile/trending.bsky.app/feed/climate-week");
    assert!(signals[0]["observed_at"].as_str().is_some(), "{}", signals[0]);

    // The next job: Nimi is given the records and the fact, and its memory angle passes.
    let recordings = with_memory_angles();
    let second_model = RecordedModel::start(Wire::OpenAi, recordings.path(), KEY).await;
    let later = week + Duration::minutes(5);
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/launch-talk.json");
    let ran = json_of(dir.path(), &second_model.url, later, &["run", source.to_str().expect("path")]).await;
    let next = ran["job"]["id"].as_str().expect("job").to_owned();
    let (code, out, err) = cli_at(dir.path(), &second_model.url, Some(later), &["approve", &next, "strategy"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let shown = json_of(dir.path(), &second_model.url, later, &["show", &next]).await;
    assert_eq!(shown["job"]["status"], "awaiting_draft_approval", "{}", shown["policy"]);
    let angles = shown["analysis"]["angles"].as_array().expect("angles");
    let kinds: Vec<(&Value, &Value)> = angles.iter().map(|a| (&a["kind"], &a["evidence"])).collect();
    assert!(angles.iter().any(|a| a["kind"] == "memory" && a["facts"] == json!(["fact-bluesky-median"])), "{kinds:?}");
    assert!(angles.iter().any(|a| a["kind"] == "performance" && a["evidence"] == json!([rkey])), "{kinds:?}");
    assert!(second_model.misses().is_empty(), "{:?}", second_model.misses());

    // Past 180 days after it was computed, the fact is no longer offered.
    let aged = week + Duration::days(181);
    let memory = json_of(dir.path(), &model.url, aged, &["memory"]).await;
    let median = memory["facts"].as_array().and_then(|f| f.iter().find(|f| f["id"] == "fact-bluesky-median").cloned());
    assert_eq!(median.map(|m| m["offered"].clone()), Some(json!(false)), "{memory}");
}

/// A data dir whose workspace posts first to the Mastodon channel `@fieldnotes@mastodon.example`
/// on the instance at `url`, through the `mastodon` connector.
pub(crate) async fn mastodon_data_dir(url: &str) -> harmonia_testkit::TempDir {
    let channel = "platform = \"mastodon\"\nhandle = \"@fieldnotes@mastodon.example\"\nconnector = \"mastodon\"\n";
    let secret = format!("service = \"{url}\"\naccess_token = \"{}\"\n", harmonia_testkit::mastodon::TOKEN);
    crate::channels::data_dir_for(channel, &secret).await
}

#[tokio::test]
async fn a_mastodon_post_is_measured_at_each_offset_from_its_status() {
    let model = recorded_model().await;
    let (instance, url) = harmonia_testkit::mastodon::start().await;
    let dir = mastodon_data_dir(&url).await;
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/launch-talk.json");
    let ran = json_of(dir.path(), &model.url, Utc::now(), &["run", source.to_str().expect("path")]).await;
    let job = ran["job"]["id"].as_str().expect("job").to_owned();
    for args in [["approve", job.as_str(), "strategy"].as_slice(), &["approve", &job, "draft"], &["publish-now", &job]]
    {
        let (code, out, err) = cli_at(dir.path(), &model.url, None, args).await;
        assert_eq!(code, 0, "{out}{err}");
    }
    let verified_at = Utc::now();
    let shown = show(dir.path(), &model.url, &job).await;
    assert_eq!(shown["job"]["status"], "verified", "{}", shown["publication"]);
    let id = shown["publication"]["receipt"]["outcome"]["post"].as_str().expect("status id").to_owned();

    let mut rows = Vec::new();
    for (minutes, counts) in [(61, [3, 1, 0]), (24 * 60 + 1, [8, 2, 1]), (7 * 24 * 60 + 1, [13, 2, 4])] {
        instance.counts.lock().expect("lock").insert(id.clone(), counts);
        let at = verified_at + Duration::minutes(minutes);
        let listed = json_of(dir.path(), &model.url, at, &["metrics", &job]).await;
        let last = listed["snapshots"].as_array().and_then(|s| s.last()).cloned().expect("a snapshot");
        rows.push(json!([
            last["offset"],
            last["likes"],
            last["reposts"],
            last["replies"],
            last["quotes"],
            last["provenance"]
        ]));
    }
    assert_eq!(
        rows,
        [
            json!(["1h", 3, 1, 0, null, "live"]),
            json!(["24h", 8, 2, 1, null, "live"]),
            json!(["7d", 13, 2, 4, null, "live"])
        ],
        "Mastodon counts no quotes: null, never zero"
    );
    assert_eq!(instance.created.lock().expect("lock").len(), 1, "one status, read back, never posted again");
    assert!(model.misses().is_empty(), "{:?}", model.misses());

    // The instance's public trends, read for the channel, with their source and time.
    let at = verified_at + Duration::days(7) + Duration::minutes(2);
    let signals = trends(dir.path(), at).await;
    let topics: Vec<&str> = signals.iter().filter_map(|s| s["topic"].as_str()).collect();
    assert!(topics.contains(&"#fieldwork"), "{signals:?}");
    for s in &signals {
        assert_eq!(s["source"], "Mastodon public trends, read for @fieldnotes@mastodon.example", "{s}");
        assert_eq!(s["provenance"], "live");
        assert!(s["evidence_id"].as_str().is_some_and(|id| id.starts_with("sig-pub-mastodon-")), "{s}");
    }
}

/// What Nova's `fetch_trend_signals` returned when asked what is trending, at `at`: the
/// signals of its envelope.
async fn trends(dir: &std::path::Path, at: chrono::DateTime<Utc>) -> Vec<Value> {
    let now = at.to_rfc3339();
    let env = [("HARMONIA_NOW", now.as_str()), ("HARMONIA_MODEL", "offline")];
    let (code, out, err) = FunctionProcess::run_cli(dir, &["--json", "ask", "What is trending?"], &env, &[]).await;
    assert_eq!(code, 0, "{out}{err}");
    let asked: Value = serde_json::from_str(&out).expect("ask json");
    let found = asked.to_string();
    let envelope = asked["tool_calls"]
        .as_array()
        .and_then(|calls| calls.iter().find(|c| c["name"] == "fetch_trend_signals"))
        .unwrap_or_else(|| panic!("no fetch_trend_signals call: {found}"));
    let signals = envelope["envelope"]["data"]["signals"].as_array().cloned().unwrap_or_default();
    assert!(!signals.is_empty(), "{found}");
    let cited: Vec<&str> = asked["answer"]["claims"]
        .as_array()
        .map(|c| {
            c.iter().flat_map(|c| c["evidence"].as_array().into_iter().flatten()).filter_map(Value::as_str).collect()
        })
        .unwrap_or_default();
    assert!(cited.iter().any(|id| id.starts_with("sig-pub-")), "Nova cites the public trends: {found}");
    signals
}
