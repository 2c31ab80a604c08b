//! The cloud-shaped run: every function its own process over the Firestore and Pub/Sub
//! emulators, push delivery through real push subscriptions, final state read back from the
//! Firestore emulator.

use std::collections::HashMap;
use std::time::Duration;

use chrono::Utc;
use harmonia_auth::{Credentials, Identity};
use harmonia_bus_pubsub::{PubSubBus, PubSubConfig};
use harmonia_contracts::domain::{
    Job, JobStatus, PlanningSnapshot, Publication, VerificationOutcome, Workspace, WorkspaceMode,
};
use harmonia_contracts::ids::WorkspaceId;
use harmonia_e2e::FunctionProcess;
use harmonia_pipeline::records::{JOBS, PLANNING_SNAPSHOTS, PUBLICATIONS, WORKSPACES, doc_id};
use harmonia_pipeline::registry::{FUNCTIONS, Timing};
use harmonia_store::{Query, Store, create_if_absent, encode};
use harmonia_store_firestore::FirestoreStore;
use serde_json::{Value, json};

const SAMPLE: &str = include_str!("../../examples/launch-talk.json");
const SNAPSHOT: &str = include_str!("../../examples/planning-snapshot.json");

/// Quick retries for the emulator run.
const EMULATOR: Timing = Timing {
    min_backoff: Duration::from_secs(1),
    max_backoff: Duration::from_secs(5),
    model_ack_deadline: Duration::from_secs(60),
    ack_deadline: Duration::from_secs(30),
};

struct Cloud {
    functions: HashMap<String, FunctionProcess>,
    store: FirestoreStore,
    ws: WorkspaceId,
    token: String,
    http: reqwest::Client,
    _dir: harmonia_testkit::LeakedDir,
}

async fn cloud() -> Cloud {
    harmonia_testkit::firestore_emulator();
    harmonia_testkit::pubsub_emulator();
    let project = harmonia_testkit::unique("cloud");
    let dir = harmonia_testkit::temp_dir();
    let ws: WorkspaceId = "demo".parse().expect("ws");
    let mut credentials = Credentials::default();
    let token = credentials.issue(Identity { operator: "ana".parse().expect("op"), workspace: ws.clone() });
    let creds = dir.path().join("operators.json");
    std::fs::write(&creds, serde_json::to_vec(&credentials).expect("json")).expect("write credentials");

    let store = FirestoreStore::connect(&project, "(default)").await.expect("firestore");
    let workspace = Workspace {
        id: ws.clone(),
        name: "Field Notes".into(),
        mode: WorkspaceMode::Development,
        banned_phrases: Vec::new(),
        link_allow_list: vec!["video.example.com".into()],
        goals: vec!["Show how offline-first tools help teams in the field".into()],
        created_at: Utc::now(),
    };
    create_if_absent(&store, &ws, WORKSPACES, &doc_id(&ws), encode(&workspace).expect("enc")).await.expect("ws");
    let mut snapshot: PlanningSnapshot = serde_json::from_str(SNAPSHOT).expect("snapshot");
    snapshot.workspace = ws.clone();
    create_if_absent(&store, &ws, PLANNING_SNAPSHOTS, &doc_id(&snapshot.id), encode(&snapshot).expect("enc"))
        .await
        .expect("snap");

    let env: Vec<(String, String)> = vec![
        ("GOOGLE_CLOUD_PROJECT".into(), project.clone()),
        ("HARMONIA_STORE".into(), "firestore".into()),
        ("HARMONIA_MODEL".into(), "offline".into()),
        ("HARMONIA_OPERATOR_CREDENTIALS".into(), creds.to_string_lossy().into_owned()),
        (
            "HARMONIA_SKILLS_DIR".into(),
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills").to_string_lossy().into_owned(),
        ),
        ("HARMONIA_LOG".into(), "warn".into()),
    ];
    let mut functions = HashMap::new();
    for name in FUNCTIONS.iter().filter(|f| **f != "nova") {
        functions.insert((*name).to_owned(), FunctionProcess::start(name, &env).await);
    }
    let bus = PubSubBus::connect(PubSubConfig::from_env(&project)).await.expect("pubsub");
    let urls: HashMap<String, String> = functions.iter().map(|(k, v)| (k.clone(), v.url.clone())).collect();
    harmonia_host::provision(&bus, "", EMULATOR, |f| urls.get(f).cloned()).await.expect("provision");
    Cloud { functions, store, ws, token, http: reqwest::Client::new(), _dir: dir }
}

impl Cloud {
    async fn api(&self, function: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req =
            self.http.request(method, format!("{}{path}", self.functions[function].url)).bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.expect("request");
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }

    async fn wait_for(&self, job: &str, want: impl Fn(JobStatus) -> bool) -> (JobStatus, Value) {
        for _ in 0..1200 {
            let (_, v) = self.api("operator", reqwest::Method::GET, &format!("/v1/jobs/{job}"), None).await;
            let status: Option<JobStatus> = serde_json::from_value(v["job"]["status"].clone()).ok();
            if let Some(s) = status
                && (want(s) || s.is_terminal())
            {
                return (s, v);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("job {job} did not reach the expected state");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_job_through_every_function_as_its_own_process() {
    let cloud = cloud().await;
    let post = reqwest::Method::POST;
    let (s, v) =
        cloud.api("ingest", post.clone(), "/v1/sources", Some(json!({"format": "json", "content": SAMPLE}))).await;
    assert_eq!(s, 201, "{v}");
    let job = v["job"]["id"].as_str().expect("id").to_owned();

    let (status, v) = cloud.wait_for(&job, |s| s == JobStatus::AwaitingStrategyApproval).await;
    assert_eq!(status, JobStatus::AwaitingStrategyApproval, "{v}");
    let version = v["awaiting_version"].as_str().expect("version").to_owned();
    let decide = format!("/v1/jobs/{job}/decisions");
    let (s, v) = cloud
        .api(
            "operator",
            post.clone(),
            &decide,
            Some(json!({"subject": "strategy", "decision": "approve", "version": version})),
        )
        .await;
    assert_eq!(s, 200, "{v}");

    let (status, v) = cloud.wait_for(&job, |s| s == JobStatus::AwaitingDraftApproval).await;
    assert_eq!(status, JobStatus::AwaitingDraftApproval, "{v}");
    let version = v["awaiting_version"].as_str().expect("version").to_owned();
    let (s, v) = cloud
        .api("operator", post, &decide, Some(json!({"subject": "draft", "decision": "approve", "version": version})))
        .await;
    assert_eq!(s, 200, "{v}");

    let (status, v) = cloud.wait_for(&job, |s| s == JobStatus::Verified).await;
    assert_eq!(status, JobStatus::Verified, "{v}");

    // Read the final state straight from the Firestore emulator.
    let stored: Job =
        cloud.store.get(&cloud.ws, JOBS, &doc_id(&job)).await.expect("get").expect("job").decode().expect("decode");
    assert_eq!(stored.status, JobStatus::Verified);
    let publications: Vec<Publication> = cloud
        .store
        .query(&cloud.ws, PUBLICATIONS, &Query::all(10))
        .await
        .expect("query")
        .iter()
        .map(|d| d.decode().expect("decode"))
        .collect();
    assert_eq!(publications.len(), 1, "exactly one publication");
    assert!(matches!(
        publications[0].verification.as_ref().map(|v| &v.outcome),
        Some(VerificationOutcome::Verified { .. })
    ));
}
