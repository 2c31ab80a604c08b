//! The cloud-shaped run: every function its own process over the Firestore and Pub/Sub
//! emulators, push delivery through real push subscriptions, final state read back from the
//! Firestore emulator.

use std::collections::HashMap;
use std::time::Duration;

use harmonia_auth::{Role, operators};
use harmonia_bus_pubsub::{PubSubBus, PubSubConfig};
use harmonia_client::api::{DecisionBody, DecisionKind, JobReply, NewSource, SourceFormat};
use harmonia_client::{Auth, Client};
use harmonia_contracts::Code;
use harmonia_contracts::domain::{
    ApprovalSubject, Decision, Job, JobEvent, JobStatus, Publication, StoredSource, VerificationOutcome,
};
use harmonia_contracts::event::Stage;
use harmonia_contracts::ids::{JobId, WorkspaceId};
use harmonia_e2e::{FunctionProcess, Signal};
use harmonia_pipeline::records::{
    DEAD_LETTERS, INGEST_FAILURES, JOB_SNAPSHOTS, JOBS, JobSnapshot, PLANNING_SNAPSHOTS, PUBLICATIONS, SOURCES,
    WORKSPACES, doc_id,
};
use harmonia_pipeline::registry::{Function, SOURCE_UPLOADS, Timing};
use harmonia_pipeline::steps::IngestFailure;
use harmonia_store::{Query, Store};
use harmonia_store_firestore::FirestoreStore;
use serde_json::{Value, json};

use harmonia_testkit::samples::LAUNCH_TALK as SAMPLE;

mod load;

/// Quick retries for the emulator run.
const EMULATOR: Timing = Timing {
    min_backoff: Duration::from_secs(1),
    max_backoff: Duration::from_secs(5),
    model_ack_deadline: Duration::from_secs(60),
    ack_deadline: Duration::from_secs(30),
    max_attempts: 10,
};

struct Cloud {
    functions: HashMap<String, FunctionProcess>,
    store: FirestoreStore,
    ws: WorkspaceId,
    /// The operator `ana`'s credential, for the requests the typed client cannot send (a
    /// request killed mid-answer, a refusal matrix).
    token: String,
    /// `ana` on the operator function, through the typed client.
    operator: Client,
    /// `ana` on the ingest function.
    ingest: Client,
    http: reqwest::Client,
    bus: PubSubBus,
    /// The blob bucket (in the Cloud Storage emulator) every function uses.
    bucket: String,
}

async fn cloud() -> Cloud {
    cloud_with(&[], 0).await
}

/// The cloud with `extra` environment on every function and `copies` additional push
/// subscriptions per route (so every message is delivered `1 + copies` times).
async fn cloud_with(extra: &[(&str, &str)], copies: usize) -> Cloud {
    cloud_in(&harmonia_testkit::unique("cloud"), extra, copies).await
}

/// [`cloud_with`] in the emulator project `project`. The blob bucket is made in the Cloud
/// Storage emulator the functions use (`STORAGE_EMULATOR_HOST` in `extra`, else the shared one).
async fn cloud_in(project: &str, extra: &[(&str, &str)], copies: usize) -> Cloud {
    cloud_fronted(project, extra, copies, false).await
}

/// [`cloud_in`], with each function reached through a [`load::Front`] when `fronted`: its
/// address then stays up while the process behind it is killed and started again, as a Cloud
/// Run service's does.
async fn cloud_fronted(project: &str, extra: &[(&str, &str)], copies: usize, fronted: bool) -> Cloud {
    harmonia_testkit::firestore_emulator();
    harmonia_testkit::pubsub_emulator();
    let project = project.to_owned();
    let ws: WorkspaceId = "demo".parse().expect("ws");
    let store = FirestoreStore::connect(&project, "(default)").await.expect("firestore");
    let storage = extra
        .iter()
        .find(|(k, _)| *k == "STORAGE_EMULATOR_HOST")
        .map_or_else(harmonia_testkit::storage_emulator, |(_, v)| (*v).to_owned());
    let bucket = harmonia_testkit::create_bucket(&storage, "blobs").await;
    let env: Vec<(String, String)> = vec![
        ("GOOGLE_CLOUD_PROJECT".into(), project.clone()),
        ("HARMONIA_STORE".into(), "firestore".into()),
        ("HARMONIA_BLOBS".into(), format!("gcs:{bucket}")),
        ("HARMONIA_MODEL".into(), "offline".into()),
        (
            "HARMONIA_SKILLS_DIR".into(),
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills").to_string_lossy().into_owned(),
        ),
        ("HARMONIA_LOG".into(), "error".into()),
    ]
    .into_iter()
    .chain(extra.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())))
    .collect();
    let mut functions = HashMap::new();
    for function in Function::ALL.iter().filter(|f| **f != Function::Nova) {
        functions.insert(function.as_str().to_owned(), FunctionProcess::start(function.as_str(), &env).await);
    }
    if fronted {
        for process in functions.values_mut() {
            process.url = load::Front::start(&process.url).await;
        }
    }
    let bus = PubSubBus::connect(PubSubConfig::from_env(&project)).await.expect("pubsub");
    let urls: HashMap<String, String> = functions.iter().map(|(k, v)| (k.clone(), v.url.clone())).collect();
    harmonia_host::provision(&bus, "", EMULATOR, |f| urls.get(f).cloned()).await.expect("provision");
    for copy in 1..=copies {
        for (function, spec) in harmonia_pipeline::registry::subscriptions("", EMULATOR) {
            let name = format!("{}.copy{copy}", spec.name).parse().expect("name");
            let spec = harmonia_bus::SubscriptionSpec { name, ..spec };
            bus.create_push_subscription(&spec, &format!("{}/push/{}", urls[function.as_str()], spec.topic))
                .await
                .expect("copy");
        }
    }
    let token = bootstrap(&env, &store, &ws, &functions["operator"].url).await;
    let operator = Client::new(&functions["operator"].url, Auth::from_text(&token)).expect("client");
    let ingest = operator.at(&functions["ingest"].url).expect("client");
    Cloud { functions, store, ws, token, operator, ingest, http: reqwest::Client::new(), bus, bucket }
}

/// Bring an empty deployment to a working workspace the documented way, with no seeding:
/// the first admin through `harmonia first-admin NAME` (the deployer's own access to
/// Firestore), then the workspace configuration and an operator through the operator API with
/// the typed client. Returns the operator's credential.
async fn bootstrap(env: &[(String, String)], store: &FirestoreStore, ws: &WorkspaceId, operator_url: &str) -> String {
    let head = store.get(ws, WORKSPACES, &doc_id(ws)).await.expect("read the workspace record");
    assert!(head.is_none(), "the deployment starts empty");
    let first_admin = || async {
        tokio::process::Command::new(harmonia_e2e::FunctionProcess::cli())
            .args(["--workspace", ws.as_str(), "--json", "first-admin", "root"])
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .output()
            .await
            .expect("run harmonia")
    };
    let added = first_admin().await;
    assert!(added.status.success(), "first-admin: {}", String::from_utf8_lossy(&added.stderr));
    let added: Value = serde_json::from_slice(&added.stdout).expect("first-admin prints JSON");
    assert_eq!((added["operator"].as_str(), added["role"].as_str()), (Some("root"), Some("admin")), "{added}");
    let admin = added["credential"].as_str().expect("the credential, shown once").to_owned();
    // Once there is an admin, the deployer's access makes no other.
    let again = first_admin().await;
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("already_exists"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );

    let root = Client::new(operator_url, Auth::from_text(&admin)).expect("client");
    let configured = root.put_workspace(harmonia_testkit::samples::DEMO_WORKSPACE).await.expect("configure");
    assert_eq!((configured.workspace.version, configured.changed), (1, true));
    let body = harmonia_client::api::NewOperator { name: "ana".parse().expect("name"), role: Role::Operator };
    let issued = root.add_operator(&body).await.expect("add ana");
    assert_eq!(issued.role, Role::Operator);
    issued.credential
}

impl Cloud {
    async fn api(&self, function: &str, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req =
            self.http.request(method, format!("{}{path}", self.functions[function].url)).bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        harmonia_testkit::send(req).await
    }

    /// Submit the sample and take it to a terminal state, approving both gates; `at` runs
    /// whenever the job is seen in a new status.
    async fn run_job(&mut self, mut at: impl AsyncFnMut(&mut Self, JobStatus)) -> (String, JobStatus) {
        let job = self.submit().await;
        let mut last = None;
        loop {
            let (status, _) = self.wait_view(&job, "moves to a new status", |s, _| Some(s) != last).await;
            last = Some(status);
            at(self, status).await;
            if status.is_terminal() {
                return (job.to_string(), status);
            }
            if status == JobStatus::Scheduled {
                // The operator publishes the approved post now rather than at its window.
                if let Err(e) = self.operator.publish_now(&job).await {
                    assert_eq!(e.code, Code::InvalidTransition, "{e}");
                }
                continue;
            }
            let subject = match status {
                JobStatus::AwaitingStrategyApproval => ApprovalSubject::Strategy,
                JobStatus::AwaitingDraftApproval => ApprovalSubject::Draft,
                _ => continue,
            };
            let (now, v) = self
                .wait_view(&job, "shows the version awaiting approval", |s, v| {
                    s != status || v.awaiting_version.is_some()
                })
                .await;
            if let (true, Some(version)) = (now == status, v.awaiting_version)
                && let Err(e) = self.operator.approve(&job, subject, &version).await
            {
                assert_eq!(e.code, Code::InvalidTransition, "{e}");
            }
        }
    }

    async fn count(&self, ws: &WorkspaceId, collection: harmonia_store::Collection) -> usize {
        self.store.query(ws, collection, &Query::all(1000)).await.expect("query").len()
    }

    /// Wait until `collection` holds at least one document.
    async fn wait_for_any(&self, ws: &WorkspaceId, collection: harmonia_store::Collection) {
        harmonia_testkit::eventually(format!("a document in {}", collection.as_str()), || async {
            (self.count(ws, collection).await > 0).then_some(())
        })
        .await;
    }

    /// Submit the sample to the ingest function; the new job.
    async fn submit(&self) -> JobId {
        let source = NewSource { format: SourceFormat::Json, content: SAMPLE.to_owned(), title: None, language: None };
        self.ingest.submit(&source, None).await.expect("submitted").job.id
    }

    /// The job as the operator API shows it once its status satisfies `want` (or is terminal).
    async fn wait_for(&self, job: &JobId, want: impl Fn(JobStatus) -> bool) -> (JobStatus, JobReply) {
        self.wait_view(job, "reaches the expected status", |s, _| want(s)).await
    }

    /// The job as the operator API shows it once `want(status, reply)` holds or the job is
    /// terminal.
    async fn wait_view(
        &self,
        job: &JobId,
        what: &str,
        want: impl Fn(JobStatus, &JobReply) -> bool,
    ) -> (JobStatus, JobReply) {
        harmonia_testkit::eventually(format!("job {job} {what}"), || async {
            match self.operator.job(job).await {
                Ok(v) if want(v.job.status, &v) || v.job.status.is_terminal() => Ok((v.job.status, v)),
                Ok(v) => Err(format!("status {}", v.job.status)),
                Err(e) => Err(format!("{e}")),
            }
        })
        .await
    }
}

/// A request for changes to `subject` at `version`, with `feedback`.
fn changes(subject: ApprovalSubject, version: &str, feedback: &str) -> DecisionBody {
    DecisionBody {
        subject,
        decision: DecisionKind::RequestChanges,
        version: version.to_owned(),
        reason: None,
        feedback: Some(feedback.to_owned()),
    }
}

/// `harmonia --cloud` with `vars` (and nothing of this process's own environment that could
/// name a credential or a login): its exit status, stdout and stderr.
async fn cloud_cli(args: &[&str], vars: &[(&str, &str)]) -> (bool, String, String) {
    let out = tokio::process::Command::new(harmonia_e2e::FunctionProcess::cli())
        .arg("--cloud")
        .args(args)
        .env_remove("HARMONIA_CREDENTIAL")
        .env_remove("HARMONIA_API_URL")
        .env_remove("HARMONIA_WORKSPACE")
        .envs(vars.iter().copied())
        .output()
        .await
        .expect("run harmonia");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_deployed_system_bootstraps_from_an_empty_firestore_and_takes_a_job_to_verified() {
    let cloud = cloud().await;
    let job = cloud.submit().await;
    let (status, v) = cloud.wait_for(&job, |s| s == JobStatus::AwaitingStrategyApproval).await;
    assert_eq!(status, JobStatus::AwaitingStrategyApproval, "{v:?}");
    let first = v.awaiting_version.expect("version");
    // An operator round over Pub/Sub push: the strategize function writes the next version.
    let asked = changes(ApprovalSubject::Strategy, &first, "Lead with what was measured.");
    let answered = cloud.operator.decide(&job, &asked).await.expect("changes requested");
    assert_eq!(answered.approval.operator.as_str(), "ana");
    let (status, v) = cloud
        .wait_view(&job, "shows the round's strategy", |s, v| {
            s == JobStatus::AwaitingStrategyApproval && v.awaiting_version.as_ref().is_some_and(|a| *a != first)
        })
        .await;
    assert_eq!((status, v.job.round.get()), (JobStatus::AwaitingStrategyApproval, 1), "{v:?}");

    // The CLI acts on the deployment only through the operator API, as the credential's
    // operator. Without a credential (none in the environment, no stored login) it is refused
    // before anything is sent, and nothing is recorded.
    let url = cloud.functions["operator"].url.clone();
    let home = tempfile::tempdir().expect("an empty home");
    let home_path = home.path().to_string_lossy().into_owned();
    let bare =
        [("HARMONIA_API_URL", url.as_str()), ("HOME", home_path.as_str()), ("XDG_CONFIG_HOME", home_path.as_str())];
    let (ok, _, err) = cloud_cli(&["--json", "approve", job.as_str(), "strategy"], &bare).await;
    assert!(!ok, "refused");
    assert!(err.contains("\"unauthenticated\""), "{err}");
    // A credential the deployment does not know is refused by the API the same way.
    let forged = [bare.as_slice(), &[("HARMONIA_CREDENTIAL", "hop_demo/ana/not-the-secret")]].concat();
    let (ok, _, err) = cloud_cli(&["--json", "approve", job.as_str(), "strategy"], &forged).await;
    assert!(!ok && err.contains("\"unauthenticated\""), "{err}");
    let detail = cloud.operator.detail(&job).await.expect("detail");
    assert_eq!(detail.decisions.len(), 1, "only the request for changes is recorded: {:?}", detail.decisions);
    assert_eq!(detail.job.status, JobStatus::AwaitingStrategyApproval);

    // `harmonia login` checks the credential with the API and keeps it for its owner alone;
    // `--cloud approve` then records the approval as that operator.
    let login = tokio::process::Command::new(harmonia_e2e::FunctionProcess::cli())
        .args(["login", url.as_str()])
        .env_remove("HARMONIA_CREDENTIAL")
        .envs(bare.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run harmonia login");
    let mut login = login;
    {
        use tokio::io::AsyncWriteExt as _;
        let mut stdin = login.stdin.take().expect("stdin");
        stdin.write_all(format!("{}\n", cloud.token).as_bytes()).await.expect("type the credential");
    }
    let login = login.wait_with_output().await.expect("login");
    let said = String::from_utf8_lossy(&login.stdout);
    assert!(login.status.success(), "{}", String::from_utf8_lossy(&login.stderr));
    assert!(said.contains("as ana (operator) of workspace demo"), "{said}");
    assert!(!said.contains(&cloud.token), "the credential is not printed back");
    let stored = home.path().join("harmonia").join("login.toml");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(std::fs::metadata(&stored).expect("stored").permissions().mode() & 0o777, 0o600);
    let logged_in = [("HOME", home_path.as_str()), ("XDG_CONFIG_HOME", home_path.as_str())];
    let (ok, out, err) = cloud_cli(&["approve", job.as_str(), "strategy"], &logged_in).await;
    assert!(ok, "{err}");
    assert!(out.contains("recorded as operator ana"), "{out}");
    // Naming another workspace than the credential's is refused.
    let (ok, _, err) = cloud_cli(&["--workspace", "other", "status"], &logged_in).await;
    assert!(!ok && err.contains("The credential is for workspace demo, not other."), "{err}");
    let detail = cloud.operator.detail(&job).await.expect("detail");
    let approval = detail.decisions.last().expect("the approval");
    assert_eq!((approval.subject, &approval.decision), (ApprovalSubject::Strategy, &Decision::Approved));
    assert_eq!(approval.operator.as_str(), "ana", "attributed to the credential's operator");

    let (status, v) = cloud.wait_for(&job, |s| s == JobStatus::AwaitingDraftApproval).await;
    assert_eq!(status, JobStatus::AwaitingDraftApproval, "{v:?}");
    let first = v.awaiting_version.expect("version");
    // A draft round: the draft, review and policy functions run a new writing cycle.
    cloud.operator.decide(&job, &changes(ApprovalSubject::Draft, &first, "Shorter.")).await.expect("changes requested");
    let (status, v) = cloud
        .wait_view(&job, "shows the round's draft", |s, v| {
            s == JobStatus::AwaitingDraftApproval && v.awaiting_version.as_ref().is_some_and(|a| *a != first)
        })
        .await;
    assert_eq!((status, v.job.round.get()), (JobStatus::AwaitingDraftApproval, 1), "{v:?}");
    let version = v.awaiting_version.expect("version");
    let answered = cloud.operator.approve(&job, ApprovalSubject::Draft, &version).await.expect("approved");
    assert_eq!(answered.job.status, JobStatus::Scheduled, "approved is scheduled for the plan item's window");
    let listed = cloud.operator.schedule().await.expect("schedule");
    assert_eq!(listed.schedule.first().map(|s| &s.job), Some(&job));
    // Published now through the CLI, as the logged-in operator.
    let (ok, _, err) = cloud_cli(&["--json", "publish-now", job.as_str()], &logged_in).await;
    assert!(ok, "{err}");

    let (status, v) = cloud.wait_for(&job, |s| s == JobStatus::Verified).await;
    assert_eq!(status, JobStatus::Verified, "{v:?}");
    // The job's progress, streamed by the deployed operator function from Firestore: every
    // stage's step once, the decisions by name, and the end (the stream closes by itself).
    let mut streamed = Vec::new();
    let followed = cloud.operator.follow(&job, |e| {
        streamed.push(e.clone());
        std::ops::ControlFlow::Continue(())
    });
    assert_eq!(followed.await.expect("followed"), harmonia_client::Followed::Stopped);
    let stages: Vec<Stage> = streamed
        .iter()
        .filter_map(|e| if let JobEvent::Step { stage, .. } = e { Some(*stage) } else { None })
        .collect();
    for stage in
        [Stage::Ingest, Stage::Analyze, Stage::Strategize, Stage::Plan, Stage::Draft, Stage::Review, Stage::Policy]
    {
        assert!(stages.contains(&stage), "{stage:?} in {stages:?}");
    }
    assert!(stages.ends_with(&[Stage::Publish, Stage::Verify]), "{stages:?}");
    assert!(
        streamed.iter().any(
            |e| matches!(e, JobEvent::Decision { by, decision, .. } if by.as_str() == "ana" && decision == "approved")
        ),
        "{streamed:?}"
    );
    assert!(matches!(streamed.last(), Some(JobEvent::Status { status: JobStatus::Verified, terminal: true, .. })));
    let (ok, out, err) = cloud_cli(&["status", job.as_str(), "--watch"], &logged_in).await;
    assert!(ok && out.trim_end().ends_with("The post is published and verified."), "{out}{err}");
    let job = job.to_string();

    // Read the final state straight from the Firestore emulator.
    let stored: Job =
        cloud.store.get(&cloud.ws, JOBS, &doc_id(&job)).await.expect("get").expect("job").decode().expect("decode");
    assert_eq!(stored.status, JobStatus::Verified);
    assert_eq!(stored.workspace_version, 1, "the job records the configuration version it used");
    // The plan stage built the job's planning snapshot itself and froze it under its hash.
    let pointer: JobSnapshot = cloud
        .store
        .get(&cloud.ws, JOB_SNAPSHOTS, &doc_id(&job))
        .await
        .expect("get")
        .expect("the job's snapshot record")
        .decode()
        .expect("decode");
    let frozen = cloud.store.get(&cloud.ws, PLANNING_SNAPSHOTS, &doc_id(&pointer.snapshot)).await.expect("get");
    assert!(frozen.is_some(), "the snapshot the job planned from is stored");
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

/// A 3 MiB transcript submitted to the ingest function is stored as a blob in the Cloud
/// Storage bucket (the emulator), the Firestore record names it, and the analyze function
/// reads it back from the bucket to take the job to the strategy gate.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_three_mebibyte_source_goes_through_cloud_storage_to_the_strategy_gate() {
    let cloud = cloud().await;
    let vtt = harmonia_testkit::samples::long_webvtt(3 * 1024 * 1024);
    let body = json!({"format": "webvtt", "content": vtt, "title": "Long keynote"});
    let (s, v) = cloud.api("ingest", reqwest::Method::POST, "/v1/sources", Some(body)).await;
    assert_eq!(s, 201, "{v}");
    let job = v["job"]["id"].as_str().expect("id").to_owned();
    let source = v["job"]["source"].as_str().expect("source id").to_owned();

    let stored = cloud.store.get(&cloud.ws, SOURCES, &doc_id(&source)).await.expect("get").expect("the source record");
    let stored: StoredSource = stored.decode().expect("a stored source");
    assert!(stored.segments.is_empty(), "the Firestore record holds no transcript");
    let cues = vtt.matches(" --> ").count();
    assert_eq!(stored.segment_count(), cues);
    let blob = stored.blob().expect("the record names a blob").clone();

    // The object, read over the JSON API as any Cloud Storage tool would: exactly the bytes named.
    let name = format!("workspaces/{}/sha256/{}", cloud.ws, blob.sha256);
    let url = format!(
        "http://{}/storage/v1/b/{}/o/{}?alt=media",
        harmonia_testkit::storage_emulator(),
        cloud.bucket,
        name.replace('/', "%2F")
    );
    let object = reqwest::get(&url).await.expect("download").bytes().await.expect("object");
    assert!(blob.matches(&object), "the object is the blob its record names");

    let job: JobId = job.parse().expect("job id");
    let (status, v) = cloud.wait_for(&job, |s| s == JobStatus::AwaitingStrategyApproval).await;
    assert_eq!(status, JobStatus::AwaitingStrategyApproval, "{v:?}");
}

/// Sources uploaded to the sources bucket are ingested through its notification: a 3 MiB
/// transcript becomes one job (also when its notification arrives twice) that reaches the
/// strategy gate, and uploads that cannot become a job are each recorded once with their
/// code — in the workspace they name, or `system` — and acknowledged, never retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_upload_to_the_sources_bucket_is_ingested_and_a_bad_one_is_recorded_once() {
    let project = harmonia_testkit::unique("uploads");
    let topic = harmonia_pipeline::registry::topic("", SOURCE_UPLOADS);
    // The topic exists before any object is written (the emulator drops events otherwise).
    let bus = PubSubBus::connect(PubSubConfig::from_env(&project)).await.expect("pubsub");
    bus.create_topic(&topic).await.expect("topic");
    let storage = harmonia_testkit::NotifyingStorage::start(&project, topic.as_str()).await;
    let sources = storage.bucket("sources").await;
    let cloud = cloud_in(
        &project,
        &[("STORAGE_EMULATOR_HOST", storage.host.as_str()), ("HARMONIA_SOURCES_BUCKET", sources.as_str())],
        0,
    )
    .await;
    let ws = cloud.ws.clone();
    let system = harmonia_pipeline::steps::system_workspace();

    let vtt = harmonia_testkit::samples::long_webvtt(3 * 1024 * 1024);
    let short = harmonia_testkit::samples::long_webvtt(2000);
    let keynote = [("workspace", "demo"), ("title", "Uploaded keynote")];
    let resource = storage.upload(&sources, "talks/keynote.vtt", &keynote, vtt.as_bytes()).await;
    let broken = "1\n00:00:01,000 --> 00:00:05,000\nFirst.\n\n2\n00:00:03,000 --> 00:00:06,000\nOverlaps.\n";
    storage.upload(&sources, "talks/broken.srt", &[("workspace", "demo")], broken.as_bytes()).await;
    storage.upload(&sources, "notes/agenda.txt", &[("workspace", "demo")], b"not a transcript").await;
    storage.upload(&sources, "talks/orphan.vtt", &[("title", "No workspace")], short.as_bytes()).await;

    let job: Job = harmonia_testkit::eventually("the upload's job", || async {
        let jobs = cloud.store.query(&ws, JOBS, &Query::all(100)).await.expect("jobs");
        jobs.into_iter().filter_map(|d| d.decode::<Job>().ok()).find(|j| j.title == "Uploaded keynote")
    })
    .await;
    let (status, v) = cloud.wait_for(&job.id, |s| s == JobStatus::AwaitingStrategyApproval).await;
    assert_eq!(status, JobStatus::AwaitingStrategyApproval, "{v:?}");
    let stored: StoredSource = cloud
        .store
        .get(&ws, SOURCES, &doc_id(&job.source))
        .await
        .expect("get")
        .expect("the source")
        .decode()
        .expect("a stored source");
    assert_eq!(stored.segment_count(), vtt.matches(" --> ").count(), "the whole upload, through a blob");

    let failures = |ws: WorkspaceId| {
        let store = cloud.store.clone();
        async move {
            let docs = store.query(&ws, INGEST_FAILURES, &Query::all(100)).await.expect("failures");
            docs.into_iter().map(|d| d.decode::<IngestFailure>().expect("a failure record")).collect::<Vec<_>>()
        }
    };
    let recorded = harmonia_testkit::eventually("both refused uploads recorded", || async {
        let found = failures(ws.clone()).await;
        (found.len() >= 2).then_some(found)
    })
    .await;
    let code_of = |object: &str| recorded.iter().find(|f| f.object.ends_with(object)).map(|f| f.code);
    assert_eq!(code_of("/talks/broken.srt"), Some(Code::SourceOverlappingSegments), "{recorded:?}");
    assert_eq!(code_of("/notes/agenda.txt"), Some(Code::InvalidRequest), "{recorded:?}");
    let orphan = harmonia_testkit::eventually("the upload without a workspace recorded", || async {
        failures(system.clone()).await.into_iter().find(|f| f.object.ends_with("/talks/orphan.vtt"))
    })
    .await;
    assert_eq!(orphan.code, Code::InvalidRequest);
    assert!(orphan.message.contains("workspace"), "{}", orphan.message);

    // The keynote's notification again (Pub/Sub delivers at least once): no second job.
    let again = harmonia_bus::OutboundMessage {
        topic: topic.clone(),
        data: serde_json::to_vec(&resource).expect("json"),
        attributes: [("eventType", "OBJECT_FINALIZE"), ("payloadFormat", "JSON_API_V1")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
    };
    harmonia_bus::Bus::publish(&bus, again).await.expect("publish");
    let marker = "after the duplicate";
    storage.upload(&sources, "talks/marker.vtt", &[("workspace", "demo"), ("title", marker)], short.as_bytes()).await;
    harmonia_testkit::eventually("the upload after the duplicate ingested", || async {
        let jobs = cloud.store.query(&ws, JOBS, &Query::all(100)).await.expect("jobs");
        jobs.into_iter().filter_map(|d| d.decode::<Job>().ok()).find(|j| j.title == marker)
    })
    .await;
    let jobs = cloud.store.query(&ws, JOBS, &Query::all(100)).await.expect("jobs");
    let keynotes = jobs.iter().filter_map(|d| d.decode::<Job>().ok()).filter(|j| j.title == "Uploaded keynote").count();
    assert_eq!(keynotes, 1, "one job per uploaded generation");
    assert_eq!(failures(ws.clone()).await.len(), 2, "each refusal recorded once, never retried into more");
    assert_eq!(cloud.count(&ws, DEAD_LETTERS).await + cloud.count(&system, DEAD_LETTERS).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_message_delivered_three_times_yields_one_of_each_output_and_one_post() {
    let mut cloud = cloud_with(&[("HARMONIA_STEP_LEASE_SECS", "20")], 2).await;
    let (_, status) = cloud.run_job(async |_, _| {}).await;
    assert_eq!(status, JobStatus::Verified);
    let ws = cloud.ws.clone();
    assert_eq!(cloud.count(&ws, PUBLICATIONS).await, 1);
    assert_eq!(cloud.count(&ws, harmonia_connectors::SANDBOX_POSTS).await, 1, "one post");
    assert_eq!(cloud.count(&ws, harmonia_pipeline::records::ANALYSES).await, 1);
    assert_eq!(cloud.count(&ws, harmonia_pipeline::records::DRAFTS).await, 2);
    assert_eq!(cloud.count(&ws, harmonia_pipeline::records::REVIEWS).await, 2);
    assert_eq!(
        cloud.count(&ws, harmonia_pipeline::records::ACTIVITY).await,
        10,
        "each specialist ran once (Nimi, Ryan and Temi after their route)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_poison_message_is_dead_lettered_and_recorded_while_other_jobs_complete() {
    let mut cloud = cloud_with(&[], 0).await;
    let poison = harmonia_bus::OutboundMessage {
        topic: "source.ingested".parse().expect("topic"),
        data: b"\xff\x00 not an event".to_vec(),
        attributes: [("workspace".to_owned(), "demo".to_owned())].into_iter().collect(),
    };
    harmonia_bus::Bus::publish(&cloud.bus, poison).await.expect("publish poison");
    let (_, status) = cloud.run_job(async |_, _| {}).await;
    assert_eq!(status, JobStatus::Verified, "the other job completes");
    let ws = cloud.ws.clone();
    cloud.wait_for_any(&ws, harmonia_pipeline::records::DEAD_LETTERS).await;
    let letters =
        cloud.store.query(&ws, harmonia_pipeline::records::DEAD_LETTERS, &Query::all(10)).await.expect("query");
    assert_eq!(letters.len(), 1, "recorded by the dead-letter function");
    let letter: harmonia_pipeline::records::DeadLetter = letters[0].decode().expect("decode");
    assert!(letter.source_subscription.ends_with("source.ingested.analyze"), "{}", letter.source_subscription);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_stage_function_killed_mid_step_still_reaches_verified_with_one_post() {
    // Each push is held 2 s before its step runs: the window in which the function is killed.
    // The function reports the hold (its drill ready file); the test kills it on that signal,
    // then checks that the hold had not ended, so the kill provably landed before the step ran.
    // The restart runs in the background, so observing never stalls.
    let mut cloud = cloud_with(&[("HARMONIA_FAULT_DELAY_MS", "2000"), ("HARMONIA_STEP_LEASE_SECS", "3")], 0).await;
    let mut killed = Vec::new();
    let mut restarts: Vec<tokio::task::JoinHandle<FunctionProcess>> = Vec::new();
    let (_, status) = cloud
        .run_job(async |cloud: &mut Cloud, status: JobStatus| {
            let victim = match status {
                JobStatus::Ingested => "analyze",
                JobStatus::Analyzed => "strategize",
                JobStatus::StrategyApproved => "plan",
                JobStatus::Planned | JobStatus::RevisionRequested => "draft",
                JobStatus::Drafted => "review",
                JobStatus::Reviewed => "policy",
                JobStatus::DraftApproved => "publish",
                JobStatus::Published | JobStatus::PublishUnknown => "verify",
                _ => return,
            };
            // A function still restarting from an earlier kill is back before it is killed again.
            if !cloud.functions.contains_key(victim) {
                for r in restarts.drain(..) {
                    let p = r.await.expect("restart");
                    cloud.functions.insert(p.name.clone(), p);
                }
            }
            if let Some(f) = cloud.functions.remove(victim) {
                let (name, env, port) = f.kill_for_restart().await;
                restarts.push(tokio::spawn(async move { FunctionProcess::start_on(&name, &env, port).await }));
                killed.push(victim);
            }
        })
        .await;
    for r in restarts {
        let p = r.await.expect("restart");
        cloud.functions.insert(p.name.clone(), p);
    }
    assert_eq!(status, JobStatus::Verified);
    for f in ["analyze", "strategize", "plan", "draft", "review", "policy", "publish", "verify"] {
        assert!(killed.contains(&f), "{f} was killed mid-step: {killed:?}");
    }
    let ws = cloud.ws.clone();
    assert_eq!(cloud.count(&ws, harmonia_connectors::SANDBOX_POSTS).await, 1, "exactly one post");
    assert_eq!(cloud.count(&ws, PUBLICATIONS).await, 1);
}

/// Benchmark, not a test (nothing is asserted about time): p50 wall time of one job end to end
/// across processes on the emulators with the offline model, approvals given as soon as asked.
/// Run with `./infra/bench-cloud.sh` (`BENCH_JOBS` jobs, default 7).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a benchmark; run ./infra/bench-cloud.sh"]
async fn bench_wall_time_of_one_job_across_processes() {
    let jobs: usize = std::env::var("BENCH_JOBS").ok().and_then(|v| v.parse().ok()).unwrap_or(7);
    let mut cloud = cloud().await;
    let mut times = Vec::with_capacity(jobs);
    for _ in 0..jobs {
        let start = std::time::Instant::now();
        let (_, status) = cloud.run_job(async |_, _| {}).await;
        assert_eq!(status, JobStatus::Verified);
        times.push(start.elapsed());
    }
    times.sort_unstable();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let line = format!(
        "cross-process job (11 functions, each its own process, Firestore + Pub/Sub emulators, offline model), {jobs} jobs: p50 {:.0} ms, min {:.0} ms, max {:.0} ms",
        ms(times[times.len() / 2]),
        ms(times[0]),
        ms(times[times.len() - 1])
    );
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("{line}\n").as_bytes());
}

/// Benchmark, not a test (nothing is asserted about time): a stage function's start, from the
/// spawn of its process to its first served request (`/healthz`), and its resident memory once
/// idle, on the emulators. Prints one line and, last, `{"bench":"cold_start",…}`. Run with
/// `./infra/bench-cloud.sh` (`BENCH_STARTS` starts, default 7; the median is reported).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark; run ./infra/bench-cloud.sh"]
async fn bench_cold_start_of_a_stage_function() {
    harmonia_testkit::firestore_emulator();
    harmonia_testkit::pubsub_emulator();
    let starts: usize = std::env::var("BENCH_STARTS").ok().and_then(|v| v.parse().ok()).unwrap_or(7);
    let client = reqwest::Client::builder().timeout(Duration::from_millis(200)).build().expect("client");
    let (mut firsts, mut rss) = (Vec::with_capacity(starts), Vec::with_capacity(starts));
    for _ in 0..starts {
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("port").port();
        let began = std::time::Instant::now();
        let mut child = tokio::process::Command::new(FunctionProcess::binary("analyze"))
            .env("PORT", port.to_string())
            .env("HARMONIA_BIND", "127.0.0.1")
            .env("GOOGLE_CLOUD_PROJECT", harmonia_testkit::unique("cold"))
            .env("HARMONIA_STORE", "firestore")
            .env("HARMONIA_BLOBS", "gcs:harmonia-cold-start")
            .env("HARMONIA_MODEL", "offline")
            .env("HARMONIA_LOG", "error")
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the analyze function");
        let healthz = format!("http://127.0.0.1:{port}/healthz");
        // Polled as fast as the loopback allows: the figure is the first answer.
        loop {
            if client.get(&healthz).send().await.is_ok_and(|r| r.status().is_success()) {
                break;
            }
            assert!(began.elapsed() < Duration::from_secs(60), "the function never answered");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        firsts.push(began.elapsed());
        // Idle: nothing to do for a second, then its resident set.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let pid = child.id().expect("pid");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
        let kb: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS");
        rss.push(kb / 1024.0);
        child.kill().await.expect("stop it");
    }
    firsts.sort_unstable();
    rss.sort_by(f64::total_cmp);
    let (first, idle) = (firsts[starts / 2].as_secs_f64() * 1000.0, rss[starts / 2]);
    let line = format!(
        "stage function cold start (analyze, emulators, offline model), {starts} starts: first request after {first:.1} ms (median), idle RSS {idle:.1} MB (median)"
    );
    let json = json!({"bench": "cold_start", "first_request_ms": (first * 10.0).round() / 10.0, "idle_rss_mb": (idle * 10.0).round() / 10.0});
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("{line}\n{json}\n").as_bytes());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ingest_operator_and_dead_letter_functions_killed_mid_request_lose_and_duplicate_nothing() {
    // HTTP functions hold each response 1 s after doing the work; the dead-letter recorder holds
    // each push 1 s before recording. Each reports its hold and is killed on that signal, inside
    // the window (checked after the kill).
    let mut cloud = cloud_with(
        &[
            ("HARMONIA_FAULT_RESPONSE_HOLD_MS", "1000"),
            ("HARMONIA_FAULT_DELAY_MS", "1000"),
            ("HARMONIA_STEP_LEASE_SECS", "3"),
        ],
        0,
    )
    .await;

    // ingest: the job is created, the answer is lost; the retry with the same key gets it.
    let body = json!({"format": "json", "content": SAMPLE});
    let url = format!("{}/v1/sources", cloud.functions["ingest"].url);
    let request =
        cloud.http.post(&url).bearer_auth(&cloud.token).header("idempotency-key", "upload-1").json(&body).send();
    let (lost, _) = tokio::join!(request, async {
        let ingest = cloud.functions.get_mut("ingest").expect("ingest");
        ingest.kill_and_restart("its answer to POST /v1/sources", |s| is_response(s, "POST", "/v1/sources")).await
    });
    assert!(lost.is_err() || !lost.as_ref().is_ok_and(|r| r.status().is_success()), "the first answer is lost");
    let retry = cloud
        .http
        .post(&url)
        .bearer_auth(&cloud.token)
        .header("idempotency-key", "upload-1")
        .json(&body)
        .send()
        .await
        .expect("retry");
    assert_eq!(retry.status().as_u16(), 201);
    let job: JobId =
        retry.json::<Value>().await.expect("json")["job"]["id"].as_str().expect("id").parse().expect("job id");

    // operator: the approval is recorded, the answer is lost; the retry answers with the
    // approval stored before (nothing new), and sends again what it released.
    let (status, v) = cloud.wait_for(&job, |s| s == JobStatus::AwaitingStrategyApproval).await;
    assert_eq!(status, JobStatus::AwaitingStrategyApproval, "{v:?}");
    let version = v.awaiting_version.expect("the strategy awaiting approval");
    let decide = json!({"subject": "strategy", "decision": "approve", "version": version});
    let url = format!("{}/v1/jobs/{job}/decisions", cloud.functions["operator"].url);
    let request = cloud.http.post(&url).bearer_auth(&cloud.token).json(&decide).send();
    let decisions = format!("/v1/jobs/{job}/decisions");
    let (lost, _) = tokio::join!(request, async {
        let operator = cloud.functions.get_mut("operator").expect("operator");
        operator.kill_and_restart("its answer to the approval", |s| is_response(s, "POST", &decisions)).await
    });
    assert!(lost.is_err() || !lost.as_ref().is_ok_and(|r| r.status().is_success()));
    let again = cloud.operator.approve(&job, ApprovalSubject::Strategy, &version).await.expect("the same decision");
    assert_eq!((again.approval.subject_hash.as_str(), again.unfinished), (version.as_str(), None));

    let (status, v) = cloud.wait_for(&job, |s| s == JobStatus::AwaitingDraftApproval).await;
    assert_eq!(status, JobStatus::AwaitingDraftApproval, "{v:?}");
    let version = v.awaiting_version.expect("the draft awaiting approval");
    cloud.operator.approve(&job, ApprovalSubject::Draft, &version).await.expect("approved");
    cloud.operator.publish_now(&job).await.expect("published now");
    let (status, _) = cloud.wait_for(&job, |s| s == JobStatus::Verified).await;
    assert_eq!(status, JobStatus::Verified);

    // dead letters: a dead-lettered message reaches the recorder, which is killed while holding it.
    let letter = harmonia_bus::OutboundMessage {
        topic: "draft.written.dead-letter".parse().expect("topic"),
        data: b"not an event".to_vec(),
        attributes: [
            ("workspace".to_owned(), "demo".to_owned()),
            (
                harmonia_bus::DEAD_LETTER_SOURCE_ATTRIBUTE.to_owned(),
                "projects/p/subscriptions/draft.written.review".to_owned(),
            ),
        ]
        .into_iter()
        .collect(),
    };
    harmonia_bus::Bus::publish(&cloud.bus, letter).await.expect("publish");
    let recorder = cloud.functions.get_mut("deadletter").expect("deadletter");
    recorder.kill_and_restart("the dead letter", |s| s.topic.as_deref() == Some("draft.written.dead-letter")).await;
    let ws = cloud.ws.clone();
    cloud.wait_for_any(&ws, harmonia_pipeline::records::DEAD_LETTERS).await;
    assert_eq!(cloud.count(&ws, harmonia_pipeline::records::DEAD_LETTERS).await, 1, "recorded exactly once");
    assert_eq!(cloud.count(&ws, JOBS).await, 1, "one job despite the retried submission");
    assert_eq!(cloud.count(&ws, harmonia_connectors::SANDBOX_POSTS).await, 1);
}

/// Whether a drill signal is the held response to `method path`.
fn is_response(signal: &Signal, method: &str, path: &str) -> bool {
    signal.kind == "response" && signal.method.as_deref() == Some(method) && signal.path.as_deref() == Some(path)
}

/// Operator credentials live in Firestore, so every HTTP function sees the same records: an
/// operator an admin adds through the operator function works on ingest and Nova at once, and
/// its revocation refuses the very next request to each of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_credential_revoked_through_the_api_stops_working_in_every_function() {
    use harmonia_testkit::{error_code, send};

    harmonia_testkit::firestore_emulator();
    let project = harmonia_testkit::unique("credentials");
    let ws: WorkspaceId = "brand".parse().expect("ws");
    let store = FirestoreStore::connect(&project, "(default)").await.expect("firestore");
    // The first admin, the way `harmonia first-admin ada` creates it.
    let admin = operators::add(&store, &ws, &"ada".parse().expect("op"), Role::Admin, &"cli".parse().expect("op"))
        .await
        .expect("admin")
        .credential;
    let skills = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills").to_string_lossy().into_owned();
    let env: Vec<(String, String)> = [
        ("GOOGLE_CLOUD_PROJECT", project.as_str()),
        ("HARMONIA_STORE", "firestore"),
        ("HARMONIA_BLOBS", "gcs:harmonia-unused"),
        ("HARMONIA_MODEL", "offline"),
        ("HARMONIA_SKILLS_DIR", skills.as_str()),
        ("HARMONIA_LOG", "error"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let mut functions = HashMap::new();
    for name in ["nova", "ingest"] {
        functions.insert(name, FunctionProcess::start(name, &env).await);
    }
    // The console's questions reach Nova through the operator function.
    let nova_url = [("HARMONIA_NOVA_URL".to_owned(), functions["nova"].url.clone())];
    let operator_env: Vec<(String, String)> = env.iter().cloned().chain(nova_url).collect();
    functions.insert("operator", FunctionProcess::start("operator", &operator_env).await);
    let http = reqwest::Client::new();
    let url = |function: &str, path: &str| format!("{}{path}", functions[function].url);

    let (s, v) =
        send(http.post(url("operator", "/v1/operators")).bearer_auth(&admin).json(&json!({"name": "bo"}))).await;
    assert_eq!(s, 201, "{v}");
    let bo = v["credential"].as_str().expect("credential").to_owned();
    // A request each function authenticates before it reads the body: 400 once the caller is
    // known, 401 when it is not.
    let probes = |credential: &str| {
        [
            ("operator", http.get(url("operator", "/v1/jobs")).bearer_auth(credential)),
            (
                "ingest",
                http.post(url("ingest", "/v1/sources"))
                    .bearer_auth(credential)
                    .json(&json!({"format": "json", "content": "{"})),
            ),
            ("nova", http.post(url("nova", "/v1/ask")).bearer_auth(credential).json(&json!({}))),
        ]
    };
    for (function, request) in probes(&bo) {
        let (s, v) = send(request).await;
        assert!(s == 200 || s == 400, "{function} knows bo: {s} {v}");
    }
    let (s, v) = send(http.get(url("operator", "/v1/operators")).bearer_auth(&bo)).await;
    assert_eq!((s, error_code(&v)), (403, "forbidden"), "an operator is not an admin");
    // bo's console session asks Nova through the operator function: Nova, its own process,
    // checks the session again in Firestore and answers in bo's workspace.
    let signed_in = http
        .post(url("operator", "/v1/console/session"))
        .json(&json!({"credential": bo}))
        .send()
        .await
        .expect("sign in");
    assert_eq!(signed_in.status(), 201);
    let cookie = signed_in.headers()["set-cookie"].to_str().expect("text").split(';').next().expect("pair").to_owned();
    let csrf = signed_in.json::<Value>().await.expect("json")["csrf"].as_str().expect("csrf").to_owned();
    let ask = || {
        http.post(url("operator", "/v1/ask"))
            .header("cookie", &cookie)
            .header("x-csrf-token", &csrf)
            .header("origin", url("operator", "").trim_end_matches('/'))
            .json(&json!({"question": "What is pending in the feed?"}))
    };
    let (s, v) = send(ask()).await;
    assert_eq!(s, 200, "Nova answered through the operator function: {v}");
    assert_eq!(v["tool_calls"][0]["name"], "get_operator_feed", "{v}");
    // Nova's answer is in the workspace's activity, read from Firestore newest first.
    let (s, v) = send(http.get(url("operator", "/v1/workspace/activity?agent=nova")).header("cookie", &cookie)).await;
    assert_eq!(s, 200, "{v}");
    assert!(v["total"].as_u64() >= Some(1) && v["activity"][0]["agent"] == "nova", "{v}");
    assert!(v["days"][0]["invocations"].as_u64() >= Some(1), "{v}");

    let (s, v) = send(http.delete(url("operator", "/v1/operators/bo")).bearer_auth(&admin)).await;
    assert_eq!(s, 200, "{v}");
    for (function, request) in probes(&bo) {
        let (s, v) = send(request).await;
        assert_eq!((s, error_code(&v)), (401, "unauthenticated"), "{function} refuses the revoked credential");
    }
    let (s, v) = send(ask()).await;
    assert_eq!((s, error_code(&v)), (401, "unauthenticated"), "the revocation ended bo's console session: {v}");
    for (function, request) in probes(&admin) {
        let (s, v) = send(request).await;
        assert!(s == 200 || s == 400, "{function} still knows the admin: {s} {v}");
    }
}

impl Cloud {
    /// Ingest the sample through the API, approve its strategy, and wait at the draft gate;
    /// the job id.
    async fn to_the_draft_gate(&self) -> JobId {
        let job = self.submit().await;
        let (status, v) = self.wait_for(&job, |s| s == JobStatus::AwaitingStrategyApproval).await;
        assert_eq!(status, JobStatus::AwaitingStrategyApproval, "{v:?}");
        let version = v.awaiting_version.expect("the strategy awaiting approval");
        self.operator.approve(&job, ApprovalSubject::Strategy, &version).await.expect("approved");
        let (status, v) = self.wait_for(&job, |s| s == JobStatus::AwaitingDraftApproval).await;
        assert_eq!(status, JobStatus::AwaitingDraftApproval, "{v:?}");
        job
    }

    /// Approve the job's draft through the API; the answer and the schedule it made.
    async fn approve_draft(
        &self,
        job: &JobId,
    ) -> (harmonia_client::api::DecisionReply, harmonia_contracts::domain::Schedule) {
        let version = self.operator.job(job).await.expect("job").awaiting_version.expect("the draft awaiting approval");
        let v = self.operator.approve(job, ApprovalSubject::Draft, &version).await.expect("approved");
        let doc = self
            .store
            .get(&self.ws, harmonia_pipeline::records::SCHEDULES, &doc_id(job))
            .await
            .expect("read")
            .expect("scheduled");
        (v, doc.decode().expect("a schedule"))
    }
}

/// A dispatcher in this process on the same emulators as the deployed functions, with a clock
/// the test moves (the deployed functions keep the system's).
async fn dispatcher_at(
    cloud: &Cloud,
    project: &str,
    clock: &std::sync::Arc<harmonia_pipeline::clock::ManualClock>,
) -> harmonia_pipeline::Env {
    let vars: HashMap<&str, String> = HashMap::from([
        ("GOOGLE_CLOUD_PROJECT", project.to_owned()),
        ("HARMONIA_BLOBS", format!("gcs:{}", cloud.bucket)),
        ("HARMONIA_STORE", "firestore".to_owned()),
        ("HARMONIA_MODEL", "offline".to_owned()),
        ("HARMONIA_LOG", "error".to_owned()),
        (
            "HARMONIA_SKILLS_DIR",
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills").to_string_lossy().into_owned(),
        ),
    ]);
    let config = harmonia_host::Config::from_lookup(|k| vars.get(k).map(Into::into).or_else(|| std::env::var_os(k)))
        .expect("config");
    let env = harmonia_host::env_from_config(&config, Vec::new()).await.expect("env");
    let mut env = std::sync::Arc::try_unwrap(env).expect("the only reference");
    env.clock = clock.clone();
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_the_emulators_an_approved_post_waits_for_its_window_and_racing_dispatchers_make_one_post() {
    use harmonia_contracts::domain::ScheduleState;
    use harmonia_pipeline::clock::ManualClock;
    use harmonia_pipeline::gates::schedule;

    let project = harmonia_testkit::unique("sched");
    let cloud = cloud_in(&project, &[], 0).await;
    let post = reqwest::Method::POST;
    let sandbox = harmonia_connectors::Sandbox::new(std::sync::Arc::new(cloud.store.clone()));
    // Approved before its window: scheduled, and the deployed dispatcher (the system's clock)
    // finds nothing due.
    let job = cloud.to_the_draft_gate().await;
    let (v, planned) = cloud.approve_draft(&job).await;
    assert_eq!(v.job.status, JobStatus::Scheduled, "{v:?}");
    assert_eq!((planned.state, planned.due_at), (ScheduleState::Scheduled, planned.window.start));
    // The calendar, read from Firestore: the post at its time, in UTC and the workspace's zone.
    let calendar = cloud.operator.calendar_between(planned.due_at, planned.due_at + chrono::TimeDelta::hours(1)).await;
    let calendar = calendar.expect("the calendar");
    assert_eq!(calendar.posts.iter().map(|p| (&p.job, p.at)).collect::<Vec<_>>(), [(&job, planned.due_at)]);
    assert!(
        calendar.posts[0].at_local.parse::<chrono::DateTime<chrono::FixedOffset>>().is_ok_and(|t| t == planned.due_at)
    );
    let (s, v) = cloud.api("dispatch", post.clone(), "/dispatch", None).await;
    assert_eq!((s, v["released"].as_u64()), (200, Some(0)), "not due yet: {v}");

    // Dispatchers whose clock the test moves: nothing before the window starts, then exactly
    // one of two racing dispatchers releases it, and one post is made.
    let clock = std::sync::Arc::new(ManualClock::new(planned.due_at - chrono::TimeDelta::seconds(1)));
    let (a, b) = (dispatcher_at(&cloud, &project, &clock).await, dispatcher_at(&cloud, &project, &clock).await);
    assert!(schedule::tick(&a).await.expect("tick").released.is_empty());
    assert_eq!(cloud.count(&cloud.ws, PUBLICATIONS).await, 0, "nothing published before the window");
    clock.set(planned.due_at);
    let (one, two) = tokio::join!(schedule::tick(&a), schedule::tick(&b));
    let (one, two) = (one.expect("tick"), two.expect("tick"));
    assert_eq!(one.released.len() + two.released.len(), 1, "{one:?} {two:?}");
    let (status, v) = cloud.wait_for(&job, |s| s == JobStatus::Verified).await;
    assert_eq!(status, JobStatus::Verified, "{v:?}");
    assert_eq!(sandbox.posts(&cloud.ws).await.expect("posts"), 1);
    let refused = cloud.operator.cancel(&job).await.map(|_| ()).expect_err("claimed");
    assert_eq!(refused.code, Code::InvalidTransition, "claimed: {refused}");

    // An hour after it was verified, the dispatcher reads its engagement (the sandbox's mock
    // counts) into Firestore, and the operator API lists the snapshot and the fact from it.
    let verified_at = chrono::Utc::now();
    clock.set(verified_at + chrono::TimeDelta::minutes(61));
    let measured = harmonia_pipeline::engagement::tick(&a).await.expect("engagement tick");
    assert_eq!(
        measured.taken.iter().map(|(_, j, o)| (j, o.to_string())).collect::<Vec<_>>(),
        [(&job, "1h".to_owned())]
    );
    assert!(harmonia_pipeline::engagement::tick(&b).await.expect("again").taken.is_empty(), "taken once");
    let metrics = cloud.operator.metrics(&job).await.expect("metrics");
    assert_eq!(metrics.snapshots.len(), 1, "{metrics:?}");
    assert_eq!(metrics.snapshots[0].provenance, harmonia_contracts::tool::Provenance::Mock);
    let memory = cloud.operator.memory().await.expect("memory");
    let fact = memory.facts.iter().find(|f| f.id.as_str().ends_with("-median")).expect("a derived fact");
    assert_eq!((fact.sample_size, fact.offered), (Some(1), false), "a mock fact is never offered: {fact:?}");
    assert_eq!(fact.evidence, [metrics.snapshots[0].evidence_id.clone()]);

    // Reschedule inside a window, then publish now; and cancel: never published.
    let moved = cloud.to_the_draft_gate().await;
    let (_, planned) = cloud.approve_draft(&moved).await;
    let at = planned.window.start + chrono::TimeDelta::minutes(30);
    let v = cloud.operator.reschedule(&moved, &harmonia_client::api::RescheduleBody { at }).await.expect("moved");
    assert_eq!(v.schedule.decisions.first().map(|d| d.operator.as_str()), Some("ana"), "{v:?}");
    clock.set(planned.window.start + chrono::TimeDelta::minutes(1));
    assert!(schedule::tick(&a).await.expect("tick").released.is_empty(), "moved later: not due at its old time");
    cloud.operator.publish_now(&moved).await.expect("published now");
    assert_eq!(cloud.wait_for(&moved, |s| s == JobStatus::Verified).await.0, JobStatus::Verified);
    let cancelled = cloud.to_the_draft_gate().await;
    let (_, planned) = cloud.approve_draft(&cancelled).await;
    let v = cloud.operator.cancel(&cancelled).await.expect("cancelled");
    assert_eq!(v.job.status, JobStatus::Cancelled, "{v:?}");
    clock.set(planned.due_at + chrono::TimeDelta::minutes(5));
    assert!(schedule::tick(&a).await.expect("tick").released.is_empty());
    assert_eq!(sandbox.posts(&cloud.ws).await.expect("posts"), 2, "the cancelled post was never made");

    // Approved after its window (the operator's decision, taken at the dispatcher's clock):
    // needs a person, and is never published late on its own.
    let late = cloud.to_the_draft_gate().await;
    let plan: harmonia_pipeline::records::PlanRecord = cloud
        .store
        .get(&cloud.ws, harmonia_pipeline::records::PLANS, &doc_id(&late))
        .await
        .expect("read")
        .expect("plan")
        .decode()
        .expect("decode");
    let window = plan.plan.items.iter().find(|i| i.id == plan.selected).expect("selected").window;
    clock.set(window.end + chrono::TimeDelta::minutes(1));
    let late_id = late.clone();
    let current = harmonia_pipeline::gates::job(&a, &cloud.ws, &late_id).await.expect("job");
    let version = harmonia_pipeline::gates::current_version(
        &a,
        &cloud.ws,
        &current,
        harmonia_contracts::domain::ApprovalSubject::Draft,
    )
    .await
    .expect("version");
    let request = harmonia_pipeline::gates::DecisionRequest {
        job: late_id.clone(),
        operator: "ana".parse().expect("operator"),
        subject: harmonia_contracts::domain::ApprovalSubject::Draft,
        decision: harmonia_contracts::domain::Decision::Approved,
        subject_hash: version,
        trace: None,
    };
    harmonia_pipeline::gates::decide(&a, &cloud.ws, request).await.expect("approve");
    let v = cloud.operator.job(&late).await.expect("job");
    assert_eq!(v.job.status, JobStatus::NeedsHuman, "{v:?}");
    let listed = cloud.operator.schedule().await.expect("schedule").schedule;
    let entry = listed.iter().find(|e| e.job == late).map(|e| e.state);
    assert_eq!(entry, Some(ScheduleState::WindowPassed), "{listed:?}");
    clock.advance(chrono::TimeDelta::days(1));
    assert!(schedule::tick(&a).await.expect("tick").released.is_empty());
    assert_eq!(sandbox.posts(&cloud.ws).await.expect("posts"), 2, "not published late");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_the_emulators_a_publisher_killed_between_the_claim_and_the_receipt_is_resolved_by_read_back() {
    use harmonia_contracts::domain::ReceiptOutcome;
    use harmonia_pipeline::clock::ManualClock;

    // Every connector call is held once the platform has answered, before the receipt is
    // written; a step's claim on a dead process lapses after 5 s.
    let project = harmonia_testkit::unique("schedkill");
    let extra = [("HARMONIA_FAULT_EFFECT_HOLD_MS", "600000"), ("HARMONIA_STEP_LEASE_SECS", "5")];
    let mut cloud = cloud_in(&project, &extra, 0).await;
    let sandbox = harmonia_connectors::Sandbox::new(std::sync::Arc::new(cloud.store.clone()));
    let job = cloud.to_the_draft_gate().await;
    let (v, planned) = cloud.approve_draft(&job).await;
    assert_eq!(v.job.status, JobStatus::Scheduled, "{v:?}");

    // The window opens: the dispatcher releases it, and the publish function claims it and
    // posts; it is killed holding the platform's answer.
    let clock = std::sync::Arc::new(ManualClock::new(planned.due_at));
    let dispatcher = dispatcher_at(&cloud, &project, &clock).await;
    assert_eq!(harmonia_pipeline::gates::schedule::tick(&dispatcher).await.expect("tick").released.len(), 1);
    let publish = cloud.functions.get_mut("publish").expect("the publish function");
    publish.kill_while_holding("the platform's answer", |s| s.kind == "effect").await;
    let claimed = || async {
        cloud
            .store
            .get(&cloud.ws, PUBLICATIONS, &doc_id(&planned.draft))
            .await
            .expect("read")
            .expect("claimed")
            .decode::<Publication>()
            .expect("a publication")
    };
    assert!(claimed().await.receipt.is_none(), "killed before the receipt");
    assert_eq!(sandbox.posts(&cloud.ws).await.expect("posts"), 1, "the post was made");

    // Restarted, the redelivered release finds the claim without a receipt: unknown, and
    // verification's read-back finds the post the killed call made. Nothing is posted twice.
    cloud.functions.get_mut("publish").expect("the publish function").restart().await;
    let (status, v) = cloud.wait_for(&job, |s| s == JobStatus::Verified).await;
    assert_eq!(status, JobStatus::Verified, "{v:?}");
    let publication = claimed().await;
    let receipt = publication.receipt.as_ref().map(|r| &r.outcome);
    assert_eq!(receipt, Some(&ReceiptOutcome::Unknown), "no blind retry after the kill");
    assert!(
        matches!(publication.verification.as_ref().map(|v| &v.outcome), Some(VerificationOutcome::Verified { .. })),
        "read back: {:?}",
        publication.verification
    );
    assert_eq!(sandbox.posts(&cloud.ws).await.expect("posts"), 1, "read back, not posted again");
    let schedule = cloud
        .store
        .get(&cloud.ws, harmonia_pipeline::records::SCHEDULES, &doc_id(&job))
        .await
        .expect("read")
        .expect("its schedule")
        .decode::<harmonia_contracts::domain::Schedule>()
        .expect("a schedule");
    assert_eq!(schedule.state, harmonia_contracts::domain::ScheduleState::Dispatched);
}
