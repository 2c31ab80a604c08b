//! The operator API over the embedded default, through real HTTP on an ephemeral port.

use std::sync::Arc;
use std::time::Duration;

use harmonia_contracts::domain::JobStatus;
use harmonia_contracts::ids::{JobId, OperatorId, WorkspaceId};
use harmonia_local::{Local, Wrap};
use harmonia_pipeline::registry::Timing;
use harmonia_testkit::{Spawned, error_code, send, spawn_app};
use serde_json::{Value, json};

use super::*;

const SAMPLE: &str = include_str!("../../../examples/launch-talk.json");
const FAST: Timing = Timing::quick(Duration::from_secs(5));

pub(super) struct Api {
    /// The operator API, served until the test ends.
    server: Spawned,
    /// An operator of the workspace.
    pub(super) token: String,
    /// An admin of the workspace.
    admin: String,
    /// An admin of another workspace.
    pub(super) other: String,
    http: reqwest::Client,
    pub(super) local: Local,
    pub(super) ws: WorkspaceId,
    /// Holds the data directory until the test ends.
    _dir: harmonia_testkit::TempDir,
}

/// The credential of a new operator `name` of `ws` with `role`, issued by `cli` as
/// `harmonia operator add` issues it.
pub(super) async fn credential(store: &dyn harmonia_store::Store, ws: &WorkspaceId, name: &str, role: Role) -> String {
    let (name, by) = (name.parse::<OperatorId>().expect("op"), "cli".parse().expect("op"));
    harmonia_auth::operators::add(store, ws, &name, role, &by).await.expect("add").credential
}

pub(super) async fn api() -> Api {
    let dir = harmonia_testkit::temp_dir();
    let local = Local::open_with(dir.path(), FAST, Wrap::default()).await.expect("open");
    let ws = local.workspace().await.expect("workspace");
    let store = local.env.store.clone();
    let token = credential(&*store, &ws, "ana", Role::Operator).await;
    let admin = credential(&*store, &ws, "ada", Role::Admin).await;
    let other = credential(&*store, &"other-ws".parse().expect("ws"), "eve", Role::Admin).await;
    let app = app(OperatorState { env: local.env.clone(), credentials: Arc::new(Credentials::new(store)) });
    Api { server: spawn_app(app).await, token, admin, other, http: reqwest::Client::new(), local, ws, _dir: dir }
}

impl Api {
    /// The API's address.
    pub(super) fn base(&self) -> String {
        self.server.to_string()
    }

    /// Submit the sample through the API and wait for its strategy gate: the job id as text and
    /// parsed.
    pub(super) async fn submit_and_wait_for_the_strategy(&self) -> (String, JobId) {
        let (s, v) = self.post("/v1/sources", json!({"format": "json", "content": SAMPLE})).await;
        assert_eq!(s, 201, "{v}");
        let job = v["job"]["id"].as_str().expect("job id").to_owned();
        let job_id: JobId = job.parse().expect("id");
        let waiting = self.local.drive(&self.ws, &job_id, false, Duration::from_secs(60), |_| {}).await.expect("drive");
        assert_eq!(waiting.status, JobStatus::AwaitingStrategyApproval);
        (job, job_id)
    }

    pub(super) async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self.http.request(method, format!("{}{path}", self.server));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        send(req).await
    }

    /// `GET path` as the workspace's operator.
    pub(super) async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, Some(&self.token), None).await
    }

    /// `POST path` with a JSON `body` as the workspace's operator.
    pub(super) async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, Some(&self.token), Some(body)).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn decisions_and_views_through_the_api() {
    let api = api().await;
    let get = reqwest::Method::GET;

    let (s, v) = api.call(get.clone(), "/v1/jobs", None, None).await;
    assert_eq!((s, error_code(&v)), (401, "unauthenticated"));
    let (s, v) = api.call(get.clone(), "/v1/jobs", Some("hop_wrong"), None).await;
    assert_eq!((s, error_code(&v)), (401, "unauthenticated"));

    let (job, job_id) = api.submit_and_wait_for_the_strategy().await;
    let (s, v) = api.get("/v1/jobs").await;
    assert_eq!((s, v["jobs"][0]["id"].as_str()), (200, Some(job.as_str())), "{v}");
    // Every status, by the names the jobs carry, for the console's filter.
    let statuses: Vec<&str> = v["statuses"].as_array().expect("statuses").iter().filter_map(Value::as_str).collect();
    assert_eq!(statuses.len(), <JobStatus as strum::IntoEnumIterator>::iter().count(), "{v}");
    for expected in ["ingested", "awaiting_strategy_approval", "scheduled", "policy_blocked", "verified", "needs_human"]
    {
        assert!(statuses.contains(&expected), "{expected}: {v}");
    }
    let (s, v) = api.get(&format!("/v1/jobs/{job}")).await;
    assert_eq!(s, 200);
    let version = v["awaiting_version"].as_str().expect("version").to_owned();

    // Another workspace cannot see it, nor decide on it: no existence leak.
    let (s, v) = api.call(get.clone(), &format!("/v1/jobs/{job}"), Some(&api.other), None).await;
    assert_eq!((s, error_code(&v)), (404, "not_found"));

    let path = format!("/v1/jobs/{job}/decisions");
    let (s, v) = api.post(&path, json!({"subject": "strategy", "decision": "approve", "version": "0000"})).await;
    assert_eq!((s, error_code(&v)), (400, "invalid_request"), "shorter than eight hex characters: not a version");
    let other = if version.starts_with('0') { "11111111" } else { "00000000" };
    let (s, v) = api.post(&path, json!({"subject": "strategy", "decision": "approve", "version": other})).await;
    assert_eq!((s, error_code(&v)), (409, "stale_version"));
    let (s, v) =
        api.post(&path, json!({"subject": "strategy", "decision": "approve", "version": version, "extra": 1})).await;
    assert_eq!((s, error_code(&v)), (400, "invalid_request"));
    let (s, v) = api.post(&path, json!({"subject": "draft", "decision": "approve", "version": version})).await;
    assert_eq!((s, error_code(&v)), (409, "invalid_transition"));
    assert_eq!(
        v["error"]["message"], "The job is awaiting_strategy_approval; it is not waiting for a draft decision.",
        "a decision at the wrong gate names the job's status"
    );
    // The twelve characters `status` prints name the version.
    let (s, v) =
        api.post(&path, json!({"subject": "strategy", "decision": "approve", "version": &version[..12]})).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["approval"]["operator"], "ana");
    assert_eq!(v["approval"]["subject_hash"], version, "the approval records the whole hash");
    let decided_at = v["approval"]["decided_at"].clone();
    // Sent again (its answer lost): the decision stored before, nothing new.
    let (s, again) = api.post(&path, json!({"subject": "strategy", "decision": "approve", "version": version})).await;
    assert_eq!(s, 200, "{again}");
    assert_eq!((&again["approval"]["decided_at"], &again["approval"]["operator"]), (&decided_at, &json!("ana")));
    let (s, v) =
        api.post(&path, json!({"subject": "strategy", "decision": "reject", "version": version, "reason": "no"})).await;
    assert_eq!((s, error_code(&v)), (409, "invalid_transition"), "another decision is refused");

    let waiting = api.local.drive(&api.ws, &job_id, false, Duration::from_secs(60), |_| {}).await.expect("drive");
    assert_eq!(waiting.status, JobStatus::AwaitingDraftApproval);
    let (_, v) = api.get(&format!("/v1/jobs/{job}")).await;
    let draft_version = v["awaiting_version"].as_str().expect("version").to_owned();
    let (s, v) = api
        .post(&path, json!({"subject": "draft", "decision": "reject", "version": draft_version, "reason": ""}))
        .await;
    assert_eq!((s, error_code(&v)), (400, "invalid_request"));
    let long = "x".repeat(501);
    let (s, v) = api
        .post(&path, json!({"subject": "draft", "decision": "reject", "version": draft_version, "reason": long}))
        .await;
    assert_eq!((s, error_code(&v)), (400, "invalid_request"), "the CLI's limit is the API's");
    let (s, v) = api.post(&path, json!({"subject": "draft", "decision": "approve", "version": draft_version})).await;
    assert_eq!((s, v["job"]["status"].as_str()), (200, Some("scheduled")), "{v}");
    let (s, v) = api.get("/v1/schedule").await;
    assert_eq!((s, v["schedule"][0]["job"].as_str()), (200, Some(job.as_str())), "{v}");
    let due_at = v["schedule"][0]["due_at"].clone();
    // The calendar: the post at its time in UTC and in the workspace's time zone.
    let (s, v) = api.get("/v1/calendar").await;
    assert_eq!((s, v["posts"][0]["job"].as_str()), (200, Some(job.as_str())), "{v}");
    assert_eq!((&v["posts"][0]["at"], &v["posts"][0]["state"]), (&due_at, &json!("scheduled")), "{v}");
    assert_eq!(v["time_zone"], "America/Denver", "{v}");
    let at: chrono::DateTime<chrono::Utc> = due_at.as_str().expect("due_at").parse().expect("time");
    let tz = harmonia_pipeline::workspace::current(&*api.local.env.store, &api.ws).await.expect("ws").config.timezone;
    let local = at.with_timezone(&tz.tz()).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    assert_eq!(v["posts"][0]["at_local"], local.as_str(), "{v}");
    assert!(!local.ends_with('Z') && local.contains("-0"), "Denver is behind UTC: {local}");
    assert!(v["windows"].as_array().is_some_and(|w| !w.is_empty()), "{v}");
    let day = |d: chrono::DateTime<chrono::Utc>| d.with_timezone(&tz.tz()).date_naive().to_string();
    let one_day = chrono::Duration::days(1);
    let (s, v) = api.get(&format!("/v1/calendar?from={}&to={}", day(at), day(at + one_day))).await;
    assert_eq!((s, v["posts"].as_array().map(Vec::len)), (200, Some(1)), "the post's own day: {v}");
    let (s, v) = api.get(&format!("/v1/calendar?from={}&to={}", day(at + one_day), day(at + one_day * 3))).await;
    assert_eq!((s, v["posts"].as_array().map(Vec::len)), (200, Some(0)), "the days after it: {v}");
    for bad in ["from=2026-12-09&to=2026-12-08", "from=2026-01-01&to=2026-06-01", "from=monday", "color=red"] {
        let (s, v) = api.get(&format!("/v1/calendar?{bad}")).await;
        assert_eq!((s, error_code(&v)), (400, "invalid_request"), "{bad}: {v}");
    }
    let (s, v) = api.call(get.clone(), "/v1/calendar", Some(&api.other), None).await;
    assert_eq!((s, error_code(&v)), (409, "workspace_not_configured"), "another workspace's own calendar: {v}");
    // The demo brand posts on weekdays only: the coming Sunday is outside its windows.
    let today = chrono::Utc::now().date_naive();
    let sunday = today + chrono::Days::new(7 - u64::from(chrono::Datelike::weekday(&today).num_days_from_sunday()));
    let at = format!("{sunday}T18:00:00Z");
    let (s, v) = api.post(&format!("/v1/jobs/{job}/reschedule"), json!({ "at": at })).await;
    assert_eq!((s, error_code(&v)), (400, "invalid_request"), "{v}");
    assert!(v["error"]["message"].as_str().is_some_and(|m| m.contains("the nearest is Mon")), "{v}");
    let (s, v) = api
        .call(reqwest::Method::POST, &format!("/v1/jobs/{job}/publish-now"), Some(&api.other), Some(json!({})))
        .await;
    assert_eq!((s, error_code(&v)), (404, "not_found"), "another workspace cannot touch it: {v}");
    let (s, v) = api.post(&format!("/v1/jobs/{job}/reschedule"), json!({"at": "tomorrow"})).await;
    assert_eq!(s, 400, "{v}");
    let (s, v) = api.post(&format!("/v1/jobs/{job}/publish-now"), json!({})).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["schedule"]["decisions"][0]["operator"], "ana", "an attributed decision: {v}");
    let done = api.local.drive(&api.ws, &job_id, false, Duration::from_secs(60), |_| {}).await.expect("drive");
    assert_eq!(done.status, JobStatus::Verified);
    let (_, v) = api.get("/v1/calendar").await;
    assert_eq!(
        (v["posts"][0]["job"].as_str(), v["posts"][0]["state"].as_str()),
        (Some(job.as_str()), Some("verified"))
    );
    let (s, v) = api.post(&format!("/v1/jobs/{job}/cancel"), json!({})).await;
    assert_eq!((s, error_code(&v)), (409, "invalid_transition"), "claimed: {v}");

    // The workspace's activity: every record, newest first, each day's figures, filters.
    let (s, v) = api.get("/v1/workspace/activity?limit=3").await;
    assert_eq!(s, 200, "{v}");
    let records = v["activity"].as_array().expect("records");
    assert_eq!((records.len(), v["next_page"].as_u64()), (3, Some(1)), "{v}");
    let started: Vec<&str> = records.iter().filter_map(|r| r["started_at"].as_str()).collect();
    assert!(started.windows(2).all(|w| w[0] >= w[1]), "newest first: {started:?}");
    let day = &v["days"][0];
    assert!(day["invocations"].as_u64() > Some(0) && day["p50_ms"].as_f64() <= day["p95_ms"].as_f64(), "{day}");
    let counted: u64 = v["days"].as_array().expect("days").iter().filter_map(|d| d["records"].as_u64()).sum();
    assert_eq!(Some(counted), v["total"].as_u64(), "the days count every record: {v}");
    let (s, v) = api.get("/v1/workspace/activity?agent=noni&outcome=success&limit=200").await;
    let agents: std::collections::BTreeSet<&str> =
        v["activity"].as_array().expect("records").iter().filter_map(|r| r["agent"].as_str()).collect();
    assert_eq!((s, agents.into_iter().collect::<Vec<_>>()), (200, vec!["noni"]), "{v}");
    let (_, v) = api.get("/v1/workspace/activity?outcome=failure").await;
    assert_eq!((v["total"].as_u64(), v["days"].as_array().map(Vec::len)), (Some(0), Some(0)), "{v}");
    for bad in ["agent=bob", "stage=lunch", "outcome=maybe", "limit=0", "job=x"] {
        let (s, v) = api.get(&format!("/v1/workspace/activity?{bad}")).await;
        assert_eq!((s, error_code(&v)), (400, "invalid_request"), "{bad}: {v}");
    }
    let (s, v) = api.call(get.clone(), "/v1/workspace/activity", Some(&api.other), None).await;
    assert_eq!((s, v["total"].as_u64()), (200, Some(0)), "another workspace sees none of it: {v}");

    // The Agent activity view: every invocation of the job, one trace, paginated.
    let (s, v) = api.get(&format!("/v1/activity?job={job}&limit=5")).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["activity"].as_array().map(Vec::len), Some(5));
    assert_eq!(v["next_page"], 1);
    let (_, all) = api.get(&format!("/v1/activity?job={job}&limit=200")).await;
    let traces: std::collections::BTreeSet<&str> =
        all["activity"].as_array().expect("records").iter().filter_map(|r| r["trace_id"].as_str()).collect();
    assert_eq!(traces.len(), 1, "one job is one trace, across both human gates");
    let (s, v) = api.call(get.clone(), &format!("/v1/activity?job={job}"), Some(&api.other), None).await;
    assert_eq!((s, error_code(&v)), (404, "not_found"));
    let (s, v) = api.get("/v1/activity?job=x&color=red").await;
    assert_eq!((s, error_code(&v)), (400, "invalid_request"));

    // The job view: an A2UI layout whose every entity reference is hydrated by the host.
    let (s, v) = api.get(&format!("/v1/jobs/{job}/view")).await;
    assert_eq!(s, 200, "{v}");
    let messages = v["layout"].as_array().expect("messages");
    assert_eq!(messages[0]["createSurface"]["catalogId"], harmonia_agents::a2ui::CATALOG_ID, "{v}");
    assert_eq!(v["version"], "0.9");
    let text = v["layout"].to_string();
    for (key, data) in v["entities"].as_object().expect("entities") {
        let id = key.split_once(':').map(|(_, id)| id).unwrap_or_default();
        assert!(text.contains(id), "layout references {key}");
        assert!(data.is_object());
    }
    let entities = v["entities"].as_object().expect("entities");
    for kind in ["job", "source", "strategy", "plan", "plan_item", "draft", "review", "policy_result", "publication"] {
        assert!(entities.keys().any(|k| k.starts_with(&format!("{kind}:"))), "the view hydrates {kind}");
    }
    assert!(
        !v.to_string().contains("rangers logged 4,200 notes while offline, and we lost none of them.\",\"speaker"),
        "no transcript in the view"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_oversized_requests_get_typed_4xx() {
    let api = api().await;
    let resp = api
        .http
        .post(format!("{}/v1/sources", api.server))
        .bearer_auth(&api.token)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 400);
    let (s, v) = api.post("/v1/sources", json!({"format": "json", "content": "{\"title\":\"x\"}"})).await;
    assert_eq!((s, error_code(&v)), (400, "source_malformed"));
    let (s, v) =
        api.post("/v1/sources", json!({"format": "srt", "content": "1\n00:00:02,000 --> 00:00:01,000\nx\n"})).await;
    assert_eq!((s, error_code(&v)), (400, "source_invalid_timing"));
    let huge = "a".repeat(MAX_BODY_BYTES + 10);
    let (s, v) = api.post("/v1/sources", json!({"format": "json", "content": huge})).await;
    assert_eq!((s, error_code(&v)), (413, "payload_too_large"));
    assert_eq!(
        harmonia_pipeline::gates::jobs(&api.local.env, &api.ws, 10).await.expect("jobs").len(),
        0,
        "nothing stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_paths_and_methods_answer_json_errors() {
    let api = api().await;
    let (s, v) = api.call(reqwest::Method::GET, "/nope", None, None).await;
    assert_eq!((s, error_code(&v)), (404, "unknown_route"));
    assert_eq!(v["error"]["category"], "not_found");
    let (s, v) = api.call(reqwest::Method::DELETE, "/v1/jobs", Some(&api.token), None).await;
    assert_eq!((s, error_code(&v)), (405, "method_not_allowed"));
    let (s, v) = api.get("/v1/sources").await;
    assert_eq!((s, error_code(&v)), (405, "method_not_allowed"), "the ingest handler's route answers alike");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn imports_through_the_api_store_every_row_or_none() {
    let api = api().await;
    let upload = |path: &str, content_type: &str, body: Vec<u8>| {
        let req = api
            .http
            .post(format!("{}{path}", api.server))
            .bearer_auth(&api.token)
            .header("content-type", content_type)
            .body(body);
        send(req)
    };
    let header =
        "post,platform,published_at,measured_at,impressions,reactions,comments,shares,clicks,source,provenance";
    let row = |post: &str, impressions: &str| {
        format!("{post},x,2026-11-02T14:00:00Z,2026-11-04T14:00:00Z,{impressions},5,1,1,2,analytics export,live")
    };
    let stored = || async {
        harmonia_store::scan_all(&*api.local.env.store, &api.ws, harmonia_pipeline::records::POST_METRICS)
            .await
            .expect("scan")
            .len()
    };

    let bad = format!("{header}\n{}\n{}\n", row("post-1", "10"), row("post-2", "lots"));
    let (status, body) = upload("/v1/imports/metrics", "text/csv", bad.into_bytes()).await;
    assert_eq!((status, error_code(&body)), (400, "import_invalid_row"), "{body}");
    assert_eq!(body["error"]["message"], "At line 3, column `impressions`: a whole number from 0 is expected.");
    assert_eq!(stored().await, 0, "nothing stored");

    let good = format!("{header}\n{}\n{}\n", row("post-1", "10"), row("post-2", "20"));
    let (status, body) = upload("/v1/imports/metrics", "text/csv; charset=utf-8", good.clone().into_bytes()).await;
    assert_eq!((status, body["stored"].as_u64()), (200, Some(2)), "{body}");
    assert_eq!(body["message"], format!("Stored 2 posts' metrics in workspace {}.", api.ws));
    upload("/v1/imports/metrics", "text/csv", good.clone().into_bytes()).await;
    assert_eq!(stored().await, 2, "the same rows again replace, never duplicate");

    let (status, body) = upload("/v1/imports/metrics", "application/json", b"[]".to_vec()).await;
    assert_eq!((status, error_code(&body)), (400, "import_malformed"));
    let huge = vec![b'a'; imports_limit() + 1];
    let (status, body) = upload("/v1/imports/metrics", "text/csv", huge).await;
    assert_eq!((status, error_code(&body)), (413, "import_too_large"));

    let signals = include_bytes!("../../../examples/trend-signals.json").to_vec();
    let (status, body) = upload("/v1/imports/signals", "application/json", signals).await;
    assert_eq!((status, body["import"].as_str()), (200, Some("signals")), "{body}");

    let calendar = "kind,date,reason,source,provenance\nblackout,2026-12-25,Holiday,Team calendar,live\n";
    let (status, body) = upload("/v1/imports/calendar", "text/csv", calendar.as_bytes().to_vec()).await;
    assert_eq!((status, body["stored"].as_u64()), (200, Some(1)), "{body}");
    let (status, body) = api.get("/v1/calendar").await;
    assert_eq!((status, body["entries"][0]["item"]["kind"].as_str()), (200, Some("blackout")), "{body}");

    let unauthenticated = api.http.post(format!("{}/v1/imports/metrics", api.server)).body(good);
    assert_eq!(send(unauthenticated).await.0, 401);
}

fn imports_limit() -> usize {
    harmonia_pipeline::imports::MAX_IMPORT_BYTES
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_manage_the_workspaces_operators() {
    let api = api().await;
    let (get, post, delete) = (reqwest::Method::GET, reqwest::Method::POST, reqwest::Method::DELETE);
    let admin = Some(api.admin.as_str());

    // 201 with the credential, shown once; it works at once, as an operator.
    let (s, v) = api.call(post.clone(), "/v1/operators", admin, Some(json!({"name": "bo", "role": "operator"}))).await;
    assert_eq!(s, 201, "{v}");
    assert_eq!((v["operator"].as_str(), v["role"].as_str()), (Some("bo"), Some("operator")));
    assert_eq!(v["workspace"].as_str(), Some(api.ws.as_str()));
    let bo = v["credential"].as_str().expect("credential").to_owned();
    let (s, _) = api.call(get.clone(), "/v1/jobs", Some(&bo), None).await;
    assert_eq!(s, 200);
    let (s, v) = api.call(post.clone(), "/v1/operators", admin, Some(json!({"name": "bo"}))).await;
    assert_eq!((s, error_code(&v)), (409, "already_exists"));
    let (s, v) = api.call(post.clone(), "/v1/operators", admin, Some(json!({"name": "x y"}))).await;
    assert_eq!((s, error_code(&v)), (400, "invalid_request"));
    let (s, v) = api.call(post.clone(), "/v1/operators", admin, Some(json!({"name": "z", "role": "owner"}))).await;
    assert_eq!((s, error_code(&v)), (400, "invalid_request"));

    // The list: every operator of this workspace, never a digest or a credential.
    let (s, v) = api.call(get.clone(), "/v1/operators", admin, None).await;
    assert_eq!(s, 200, "{v}");
    let names: Vec<(&str, &str, &str)> = v["operators"]
        .as_array()
        .expect("operators")
        .iter()
        .map(|o| {
            (o["operator"].as_str().unwrap_or(""), o["role"].as_str().unwrap_or(""), o["status"].as_str().unwrap_or(""))
        })
        .collect();
    assert_eq!(names, [("ada", "admin", "active"), ("ana", "operator", "active"), ("bo", "operator", "active")]);
    let text = v.to_string();
    assert!(!text.contains("digest") && !text.contains(&bo) && !text.contains(&api.admin), "{text}");

    // Operators are refused the admin routes: 403, not 401.
    let operator = Some(api.token.as_str());
    for (method, path, body) in [
        (get.clone(), "/v1/operators", None),
        (post.clone(), "/v1/operators", Some(json!({"name": "mallory", "role": "admin"}))),
        (delete.clone(), "/v1/operators/ada", None),
    ] {
        let (s, v) = api.call(method, path, operator, body).await;
        assert_eq!((s, error_code(&v)), (403, "forbidden"), "{path}");
    }
    let (s, v) = api.call(get.clone(), "/v1/operators", None, None).await;
    assert_eq!((s, error_code(&v)), (401, "unauthenticated"));

    // Revocation: the very next request with the credential is refused.
    let (s, v) = api.call(delete.clone(), "/v1/operators/bo", admin, None).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["operator"]["status"], "revoked");
    assert_eq!(v["operator"]["revoked_by"], "ada");
    let (s, v) = api.call(get.clone(), "/v1/jobs", Some(&bo), None).await;
    assert_eq!((s, error_code(&v)), (401, "unauthenticated"));
    let (s, v) = api.call(delete.clone(), "/v1/operators/bo", admin, None).await;
    assert_eq!((s, error_code(&v)), (404, "not_found"), "already revoked");

    // Another workspace's admin neither sees nor touches these operators.
    let other = Some(api.other.as_str());
    let (s, v) = api.call(get.clone(), "/v1/operators", other, None).await;
    assert_eq!(s, 200);
    let listed: Vec<&str> =
        v["operators"].as_array().expect("operators").iter().filter_map(|o| o["operator"].as_str()).collect();
    assert_eq!(listed, ["eve"]);
    let (s, v) = api.call(delete.clone(), "/v1/operators/ana", other, None).await;
    assert_eq!((s, error_code(&v)), (404, "not_found"));
    let (s, _) = api.call(get.clone(), "/v1/jobs", operator, None).await;
    assert_eq!(s, 200, "ana still works");

    // The last active admin is protected; with a second admin, the first can go.
    let (s, v) = api.call(delete.clone(), "/v1/operators/ada", admin, None).await;
    assert_eq!((s, error_code(&v)), (409, "last_admin"));
    let (s, v) = api.call(post.clone(), "/v1/operators", admin, Some(json!({"name": "cy", "role": "admin"}))).await;
    assert_eq!(s, 201, "{v}");
    let cy = v["credential"].as_str().expect("credential").to_owned();
    let (s, _) = api.call(delete.clone(), "/v1/operators/ada", Some(&cy), None).await;
    assert_eq!(s, 200);
    let (s, v) = api.call(get.clone(), "/v1/operators", admin, None).await;
    assert_eq!((s, error_code(&v)), (401, "unauthenticated"), "the revoked admin is out");
    let (s, v) = api.call(delete.clone(), "/v1/operators/cy", Some(&cy), None).await;
    assert_eq!((s, error_code(&v)), (409, "last_admin"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_detail_and_the_view_at_the_strategy_gate_show_the_strategy() {
    let api = api().await;
    let get = reqwest::Method::GET;
    let (job, _) = api.submit_and_wait_for_the_strategy().await;

    let path = format!("/v1/jobs/{job}/detail");
    let (s, v) = api.get(&path).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["job"]["status"], "awaiting_strategy_approval");
    let hash = v["strategy"]["content_hash"].as_str().expect("strategy version");
    assert_eq!(v["awaiting"]["subject"], "strategy");
    assert_eq!(v["awaiting"]["version"], hash);
    assert_eq!(v["awaiting"]["prefix"], &hash[..12]);
    let quote = &v["strategy"]["briefs"][0]["evidence"][0]["quote"];
    assert!(quote.as_str().is_some_and(|q| !q.is_empty()), "evidence is quoted inline: {v}");
    assert!(v["analysis"]["moments"].as_array().is_some_and(|m| !m.is_empty()));
    for later in ["plan", "selected_item", "publication"] {
        assert!(v[later].is_null(), "{later} is not reached yet");
    }
    for later in ["drafts", "reviews", "policy", "decisions"] {
        assert_eq!(v[later], json!([]), "{later} is not reached yet");
    }

    let (s, v) = api.call(get.clone(), &path, None, None).await;
    assert_eq!((s, error_code(&v)), (401, "unauthenticated"));
    let (s, v) = api.call(get.clone(), &path, Some(&api.other), None).await;
    assert_eq!((s, error_code(&v)), (404, "not_found"), "another workspace's job does not exist for it");
    let (s, v) = api.get("/v1/jobs/job-nothing/detail").await;
    assert_eq!((s, error_code(&v)), (404, "not_found"));

    // The job view at the strategy gate hydrates the strategy as well as the job and source.
    let (s, v) = api.get(&format!("/v1/jobs/{job}/view")).await;
    assert_eq!(s, 200, "{v}");
    let entities = v["entities"].as_object().expect("entities");
    let strategy = entities.iter().find(|(k, _)| k.starts_with("strategy:")).map(|(_, d)| d).expect("strategy");
    assert_eq!(strategy["content_hash"], hash);
    assert!(v["layout"].to_string().contains(&format!("strategy-{job}")), "Maya's layout references it");
}
