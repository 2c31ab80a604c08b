//! In-flight step claims: deleted when their step settles (a finished job leaves none), free
//! again at once when released, and released only by their holder.

use std::time::Duration;

use harmonia_agents::model::{self, Model, ModelRequest, ModelResponse, Wrapped, Wrapper};
use harmonia_connectors::SandboxMode;
use harmonia_contracts::Role;
use harmonia_contracts::domain::{JobStatus, SourceInput};
use harmonia_contracts::event::{Pass, Stage};
use harmonia_local::{Local, Wrap};
use harmonia_pipeline::records::{MARKERS, RUNNING};
use harmonia_pipeline::registry::Timing;
use harmonia_pipeline::step::{StageRef, claim};
use harmonia_pipeline::steps::ingest;
use harmonia_store::scan_all;

const SAMPLE: &str = include_str!("../../../examples/launch-talk.json");
const WAIT: Duration = Duration::from_secs(120);

fn sample() -> SourceInput {
    serde_json::from_str(SAMPLE).expect("sample parses")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_verified_job_leaves_no_stage_running_claim() {
    let dir = tempfile::tempdir().expect("temp dir");
    let local = Local::open_with(dir.path(), Timing::LOCAL, Wrap::default()).await.expect("open");
    let ws = local.workspace().await.expect("workspace");
    let job = ingest(&local.env, &ws, sample(), None, None).await.expect("ingest");
    let done = local.drive(&ws, &job.id, true, WAIT, |_| {}).await.expect("drive");
    local.settle(WAIT).await.expect("settle");
    assert_eq!(done.status, JobStatus::Verified, "{:?}", done.failure);
    let store = &*local.env.store;
    // Every step ran under a claim (ten stage markers besides ingest's) …
    assert_eq!(scan_all(store, &ws, MARKERS).await.expect("markers").len(), 11);
    // … and none of the claims is left behind.
    assert_eq!(scan_all(store, &ws, RUNNING).await.expect("claims").len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_job_leaves_no_stage_running_claim() {
    let dir = tempfile::tempdir().expect("temp dir");
    let local = Local::open_with(dir.path(), Timing::LOCAL, Wrap::default()).await.expect("open");
    local.sandbox.next(SandboxMode::Fail);
    let ws = local.workspace().await.expect("workspace");
    let job = ingest(&local.env, &ws, sample(), None, None).await.expect("ingest");
    let done = local.drive(&ws, &job.id, true, WAIT, |_| {}).await.expect("drive");
    local.settle(WAIT).await.expect("settle");
    assert_eq!(done.status, JobStatus::Failed);
    assert_eq!(scan_all(&*local.env.store, &ws, RUNNING).await.expect("claims").len(), 0);
}

#[tokio::test]
async fn a_released_claim_can_be_taken_at_once_and_a_stale_token_releases_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let local = Local::open(dir.path()).await.expect("open");
    let ws = local.workspace().await.expect("workspace");
    let job = "job-claims".parse().expect("job");
    let at = StageRef { workspace: &ws, job: &job, stage: Stage::Review, round: Default::default(), pass: Pass::FIRST };
    let first = claim::acquire(&local.env, &at).await.expect("acquire").expect("free");
    assert!(claim::acquire(&local.env, &at).await.expect("acquire").is_none(), "held by the first delivery");
    claim::release(&local.env, &at, &first).await.expect("release");
    let second = claim::acquire(&local.env, &at).await.expect("acquire").expect("released, so free again");
    // The first delivery's token no longer proves anything: the second delivery keeps its claim.
    claim::release(&local.env, &at, &first).await.expect("release");
    assert!(claim::acquire(&local.env, &at).await.expect("acquire").is_none(), "still held by the second");
    claim::release(&local.env, &at, &second).await.expect("release");
    assert_eq!(scan_all(&*local.env.store, &ws, RUNNING).await.expect("claims").len(), 0);
}

/// The offline model, except that Nimi never answers: the analyze step stays in flight, its
/// delivery leased and its claim held, and `entered` is notified once it is.
struct Stuck(std::sync::Arc<tokio::sync::Notify>);

#[async_trait::async_trait]
impl Wrapper for Stuck {
    async fn generate(&self, inner: &dyn Model, request: &ModelRequest) -> Result<ModelResponse, model::Error> {
        if request.role == Role::Nimi {
            self.0.notify_one();
            std::future::pending::<()>().await;
        }
        inner.generate(request).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_process_that_stops_mid_step_hands_its_lease_and_claim_back_and_the_next_one_carries_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let entered = std::sync::Arc::new(tokio::sync::Notify::new());
    let signal = entered.clone();
    let wrap = Wrap {
        model: Some(Box::new(move |m| {
            std::sync::Arc::new(Wrapped::new(m, Stuck(signal))) as std::sync::Arc<dyn Model>
        })),
        ..Wrap::default()
    };
    let first = Local::open_with(dir.path(), Timing::LOCAL, wrap).await.expect("open");
    let ws = first.workspace().await.expect("workspace");
    let job = ingest(&first.env, &ws, sample(), None, None).await.expect("ingest");
    entered.notified().await;
    // Mid-step: the analyze delivery is leased and its step claimed, until well after now.
    assert_eq!(first.bus.leased().await.expect("leased"), 1);
    let claims = scan_all(&*first.env.store, &ws, RUNNING).await.expect("claims");
    let [claim] = claims.as_slice() else { panic!("one claim: {claims:?}") };
    let held: harmonia_pipeline::records::Running = claim.decode().expect("a claim");

    // The command ends (or gets SIGTERM): it hands back what it holds.
    let (claims, leases) = first.shutdown().await.expect("shutdown");
    assert_eq!((claims, leases), (1, 1));
    assert_eq!(first.bus.leased().await.expect("leased"), 0);
    assert_eq!(scan_all(&*first.env.store, &ws, RUNNING).await.expect("claims").len(), 0);

    // The next process carries on at once: the job reaches the strategy gate before the old
    // claim would even have lapsed.
    let next = Local::open(dir.path()).await.expect("open again");
    next.prepare(&ws).await.expect("resume");
    let done = next.drive(&ws, &job.id, false, WAIT, |_| {}).await.expect("drive");
    assert_eq!(done.status, JobStatus::AwaitingStrategyApproval, "{:?}", done.failure);
    assert!(chrono::Utc::now() < held.until, "carried on without waiting out the claim");
    drop(first);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_of_a_process_whose_heartbeat_stopped_is_taken_over_at_once_and_a_live_ones_is_not() {
    use harmonia_pipeline::records::{Running, running_id};
    let dir = tempfile::tempdir().expect("temp dir");
    let local = Local::open(dir.path()).await.expect("open");
    let other = Local::open(dir.path()).await.expect("another process on the same file");
    let ws = local.workspace().await.expect("workspace");
    let store = &*local.env.store;
    let claim_of = |holder: &str| Running {
        owner: format!("owner-of-{holder}"),
        until: chrono::Utc::now() + chrono::TimeDelta::hours(1),
        holder: Some(holder.to_owned()),
    };
    let left = |job: &'static str, running: Running| {
        let ws = ws.clone();
        async move {
            let job: harmonia_contracts::ids::JobId = job.parse().expect("job");
            let id = running_id(&job, Stage::Review, Default::default(), Pass::FIRST);
            let data = harmonia_store::encode(&running).expect("encode");
            harmonia_store::create_if_absent(store, &ws, RUNNING, &id, data).await.expect("store a claim");
            job
        }
    };
    // Left by a process that was killed: its holder will never beat again.
    let killed = left("job-killed", claim_of("a-killed-process")).await;
    let at =
        StageRef { workspace: &ws, job: &killed, stage: Stage::Review, round: Default::default(), pass: Pass::FIRST };
    let taken = claim::acquire(&local.env, &at).await.expect("acquire");
    assert!(taken.is_some(), "taken over at once, not in an hour");

    // Held by a process that is alive (its heartbeat is fresh): respected.
    harmonia_testkit::eventually("the other process beats", || async {
        match other.bus.alive(other.bus.holder()).await.expect("heartbeat") {
            true => Ok(()),
            false => Err("no heartbeat yet"),
        }
    })
    .await;
    let busy = left("job-busy", claim_of(other.bus.holder())).await;
    let at =
        StageRef { workspace: &ws, job: &busy, stage: Stage::Review, round: Default::default(), pass: Pass::FIRST };
    assert!(claim::acquire(&local.env, &at).await.expect("acquire").is_none(), "a live holder keeps it");
}

/// A session of an invocation that never ended and a claim whose lease lapsed are removed by
/// the sweep once their lease has lapsed, and only then; counting only removes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dead_processs_session_and_claim_are_swept_once_their_lease_has_lapsed() {
    use chrono::{TimeDelta, Utc};
    use harmonia_pipeline::records::{Running, running_id};
    use harmonia_pipeline::step::sweep::{Swept, session_lapse, sweep};

    let dir = tempfile::tempdir().expect("temp dir");
    let local = Local::open_with(dir.path(), Timing::LOCAL, Wrap::default()).await.expect("open");
    // A workspace no step runs in, so no background sweep removes anything before this one.
    let ws: harmonia_contracts::ids::WorkspaceId = "left-behind".parse().expect("ws");
    let store = &*local.env.store;
    let job: harmonia_contracts::ids::JobId = "job-0123456789abcdef0123456789abcdef".parse().expect("job");
    // What a process killed mid-step leaves: its session, and its claim (one lapsed, one not).
    let user = "pipeline".parse().expect("user");
    harmonia_agents::session::open(store, &ws, &user, &job, Role::Noni, "0123456789abcdef").await.expect("session");
    let now = Utc::now();
    for (pass, until) in [(Pass::FIRST, now - TimeDelta::seconds(1)), (Pass::REVISION, now + TimeDelta::hours(1))] {
        let claim = Running { owner: "dead".into(), until, holder: Some("gone".into()) };
        let id = running_id(&job, Stage::Draft, harmonia_contracts::event::Round::ORIGINAL, pass);
        let data = harmonia_store::encode(&claim).expect("encode");
        harmonia_store::create(store, &ws, RUNNING, &id, data).await.expect("claim");
    }
    let sessions = harmonia_agents::session::SESSIONS;

    assert_eq!(sweep(&local.env, &ws, now, false).await.expect("count"), Swept { sessions: 0, claims: 1 });
    assert_eq!(scan_all(store, &ws, RUNNING).await.expect("claims").len(), 2, "counting removes nothing");
    assert_eq!(sweep(&local.env, &ws, now, true).await.expect("sweep"), Swept { sessions: 0, claims: 1 });
    assert_eq!(scan_all(store, &ws, RUNNING).await.expect("claims").len(), 1, "the live claim stays");
    assert_eq!(scan_all(store, &ws, sessions).await.expect("sessions").len(), 1, "a session still in its lease stays");
    let later = now + session_lapse(&local.env) + TimeDelta::hours(2);
    assert_eq!(sweep(&local.env, &ws, later, true).await.expect("sweep"), Swept { sessions: 1, claims: 1 });
    assert!(scan_all(store, &ws, sessions).await.expect("sessions").is_empty());
    assert!(scan_all(store, &ws, RUNNING).await.expect("claims").is_empty());
    assert_eq!(sweep(&local.env, &ws, later, true).await.expect("again"), Swept::default(), "nothing twice");
}

/// The steps of a workspace sweep it in the background: a claim left lapsed there by a dead
/// process is gone once the workspace's next job has run a step.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_workspaces_steps_sweep_what_dead_processes_left_there() {
    use harmonia_pipeline::records::{Running, running_id};

    let dir = tempfile::tempdir().expect("temp dir");
    let local = Local::open_with(dir.path(), Timing::LOCAL, Wrap::default()).await.expect("open");
    let ws = local.workspace().await.expect("workspace");
    let store = &*local.env.store;
    let dead: harmonia_contracts::ids::JobId = "job-0123456789abcdef0123456789abcdef".parse().expect("job");
    let claim = Running { owner: "dead".into(), until: chrono::Utc::now(), holder: Some("gone".into()) };
    let id = running_id(&dead, Stage::Review, harmonia_contracts::event::Round::ORIGINAL, Pass::FIRST);
    harmonia_store::create(store, &ws, RUNNING, &id, harmonia_store::encode(&claim).expect("encode"))
        .await
        .expect("claim");
    let job = ingest(&local.env, &ws, sample(), None, None).await.expect("ingest").id;
    local.drive(&ws, &job, false, WAIT, |_| {}).await.expect("to the strategy gate");
    harmonia_testkit::eventually("the dead process's claim is swept", || async {
        let left = store.get(&ws, RUNNING, &id).await.expect("read");
        left.is_none().then_some(())
    })
    .await;
}
