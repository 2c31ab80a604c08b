//! Scheduled publishing on the embedded default, with a clock the tests move: an approved
//! draft waits for its window, dispatchers racing or dying still make one post, and the
//! operator's reschedule, publish-now and cancel do what they say; a decision stands when the
//! bus fails after it is stored.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::TimeDelta;
use harmonia_connectors::{Checked, Connector, Found, Outgoing, ReadBackFailed, Sent};
use harmonia_contracts::domain::{
    ApprovalSubject, Decision, JobStatus, Schedule, ScheduleAction, ScheduleState, SourceInput, Timestamp,
};
use harmonia_contracts::ids::{JobId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use harmonia_local::{Local, Wrap};
use harmonia_pipeline::clock::{Clock, ManualClock};
use harmonia_pipeline::gates;
use harmonia_pipeline::gates::schedule::{self, Acted};
use harmonia_pipeline::planning::windows;
use harmonia_pipeline::records;
use harmonia_pipeline::registry::Timing;
use harmonia_pipeline::step::watch;
use harmonia_pipeline::steps::ingest;

#[path = "schedule/engagement.rs"]
mod engagement;

const SAMPLE: &str = include_str!("../../../examples/launch-talk.json");
const WAIT: Duration = Duration::from_secs(120);

/// Monday 7 December 2026, 05:00 in Denver (12:00 UTC): before the demo brand's first window
/// of the day (weekdays 08:00-17:00 America/Denver).
fn monday_dawn() -> Timestamp {
    "2026-12-07T12:00:00Z".parse().expect("time")
}

fn sample() -> SourceInput {
    serde_json::from_str(SAMPLE).expect("sample parses")
}

async fn open(dir: &std::path::Path, clock: &Arc<ManualClock>) -> Local {
    let wrap = Wrap { clock: Some(clock.clone() as Arc<dyn Clock>), ..Wrap::default() };
    Local::open_with(dir, Timing::LOCAL, wrap).await.expect("open")
}

/// The embedded default in a new data dir on a clock standing at [`monday_dawn`], and its
/// workspace (the data dir goes when the first is dropped).
async fn started() -> (tempfile::TempDir, Arc<ManualClock>, Local, WorkspaceId) {
    let dir = tempfile::tempdir().expect("temp dir");
    let clock = Arc::new(ManualClock::new(monday_dawn()));
    let local = open(dir.path(), &clock).await;
    let ws = local.workspace().await.expect("workspace");
    (dir, clock, local, ws)
}

/// A job of the sample source, driven to the draft gate and its draft approved as `ana`.
async fn approved(local: &Local, ws: &WorkspaceId) -> (JobId, Schedule) {
    let job = ingest(&local.env, ws, sample(), None, None).await.expect("ingest");
    let strategy = local.drive(ws, &job.id, false, WAIT, |_| {}).await.expect("to the strategy gate");
    approve(local, ws, &job.id, ApprovalSubject::Strategy).await;
    let waiting = local.drive(ws, &job.id, false, WAIT, |_| {}).await.expect("to the draft gate");
    assert_eq!(
        (strategy.status, waiting.status),
        (JobStatus::AwaitingStrategyApproval, JobStatus::AwaitingDraftApproval)
    );
    approve(local, ws, &job.id, ApprovalSubject::Draft).await;
    let schedule = schedule::of_job(&local.env, ws, &job.id).await.expect("read").expect("a schedule");
    (job.id, schedule)
}

/// Approve `job`'s `subject` as `ana`: what was recorded (with what the bus left unfinished).
async fn approve(
    local: &Local,
    ws: &WorkspaceId,
    job: &JobId,
    subject: ApprovalSubject,
) -> gates::Recorded<harmonia_contracts::domain::Approval> {
    let current = gates::job(&local.env, ws, job).await.expect("job");
    let version = gates::current_version(&local.env, ws, &current, subject).await.expect("version");
    let request = gates::DecisionRequest {
        job: job.clone(),
        operator: "ana".parse().expect("operator"),
        subject,
        decision: Decision::Approved,
        subject_hash: version,
        trace: None,
    };
    gates::decide(&local.env, ws, request).await.expect("decide")
}

async fn status(local: &Local, ws: &WorkspaceId, job: &JobId) -> JobStatus {
    gates::job(&local.env, ws, job).await.expect("job").status
}

async fn act(local: &Local, ws: &WorkspaceId, job: &JobId, action: ScheduleAction) -> Result<Acted, Error> {
    schedule::act(&local.env, ws, job, "ana".parse().expect("operator"), action)
        .await
        .and_then(harmonia_pipeline::gates::Recorded::finished)
}

/// A bus that fails every publish while `down` is set.
struct Flaky {
    inner: Arc<dyn harmonia_bus::Bus>,
    down: Arc<std::sync::atomic::AtomicBool>,
}

#[async_trait]
impl harmonia_bus::Bus for Flaky {
    async fn publish(&self, message: harmonia_bus::OutboundMessage) -> Result<String, harmonia_bus::Error> {
        match self.down.load(std::sync::atomic::Ordering::SeqCst) {
            true => Err(harmonia_bus::Error::Unavailable { kind: "down".into() }),
            false => self.inner.publish(message).await,
        }
    }
}

/// The embedded default on `clock`, with a bus that fails every publish while the flag it
/// returns is set.
async fn open_with_flaky_bus(
    dir: &std::path::Path,
    clock: &Arc<ManualClock>,
) -> (Local, Arc<std::sync::atomic::AtomicBool>) {
    let down = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flaky = down.clone();
    let wrap = Wrap {
        clock: Some(clock.clone() as Arc<dyn Clock>),
        bus: Some(Box::new(move |inner| Arc::new(Flaky { inner, down: flaky }))),
        ..Wrap::default()
    };
    (Local::open_with(dir, Timing::LOCAL, wrap).await.expect("open"), down)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_decision_stands_when_the_bus_fails_after_it_and_its_work_carries_on_later() {
    let dir = tempfile::tempdir().expect("temp dir");
    let clock = Arc::new(ManualClock::new(monday_dawn()));
    let (local, down) = open_with_flaky_bus(dir.path(), &clock).await;
    let ws = local.workspace().await.expect("workspace");
    let job = ingest(&local.env, &ws, sample(), None, None).await.expect("ingest").id;
    local.drive(&ws, &job, false, WAIT, |_| {}).await.expect("to the strategy gate");
    let current = gates::job(&local.env, &ws, &job).await.expect("job");
    let version = gates::current_version(&local.env, &ws, &current, ApprovalSubject::Strategy).await.expect("version");
    let request = |decision| gates::DecisionRequest {
        job: job.clone(),
        operator: "ana".parse().expect("operator"),
        subject: ApprovalSubject::Strategy,
        decision,
        subject_hash: version[..12].to_owned(),
        trace: None,
    };

    // The bus fails after the commit: the approval is stored and answered, with what is left.
    down.store(true, std::sync::atomic::Ordering::SeqCst);
    let recorded = gates::decide(&local.env, &ws, request(Decision::Approved)).await.expect("stored");
    assert_eq!(recorded.unfinished.as_ref().map(|e| e.code), Some(Code::BusUnavailable));
    assert!(!recorded.earlier);
    assert_eq!(status(&local, &ws, &job).await, JobStatus::StrategyApproved);
    // Sent again while the bus is still down: the same stored decision, still unfinished; a
    // different decision is refused.
    let again = gates::decide(&local.env, &ws, request(Decision::Approved)).await.expect("again");
    assert!(again.earlier && again.unfinished.is_some());
    assert_eq!((again.value.decided_at, &again.value.operator), (recorded.value.decided_at, &recorded.value.operator));
    let other = gates::decide(&local.env, &ws, request(Decision::Rejected { reason: "No.".into() })).await;
    assert_eq!(other.expect_err("another decision").code, Code::InvalidTransition);

    // Back up: the repeat sends what the decision released, and the job goes on to its draft.
    down.store(false, std::sync::atomic::Ordering::SeqCst);
    let resent = gates::decide(&local.env, &ws, request(Decision::Approved)).await.expect("again");
    assert!(resent.earlier && resent.unfinished.is_none(), "{:?}", resent.unfinished);
    let waiting = local.drive(&ws, &job, false, WAIT, |_| {}).await.expect("to the draft gate");
    assert_eq!(waiting.status, JobStatus::AwaitingDraftApproval);

    // Publish-now with the bus down: the post is handed over on record, and goes out once the
    // next command resumes what was recorded.
    approve(&local, &ws, &job, ApprovalSubject::Draft).await;
    down.store(true, std::sync::atomic::Ordering::SeqCst);
    let acted = schedule::act(&local.env, &ws, &job, "ana".parse().expect("operator"), ScheduleAction::PublishNow)
        .await
        .expect("stored");
    assert_eq!(acted.unfinished.as_ref().map(|e| e.code), Some(Code::BusUnavailable));
    let Acted::Released(released) = &acted.value else { panic!("released: {:?}", acted.value) };
    assert_eq!(released.state, ScheduleState::Dispatched);
    assert_eq!(status(&local, &ws, &job).await, JobStatus::DraftApproved);
    down.store(false, std::sync::atomic::Ordering::SeqCst);
    gates::resume(&local.env, &ws).await.expect("resume");
    assert_eq!(local.drive(&ws, &job, false, WAIT, |_| {}).await.expect("drive").status, JobStatus::Verified);
    assert_eq!(local.sandbox.posts(&ws).await.expect("posts"), 1, "one post");
}

/// The job watch (run by the deployed dispatcher): a job whose event was lost is found once it
/// has not moved for three leases, re-driven once per re-drive time, and goes on; a job at a
/// gate is never stuck, however long it waits; checks closer than a lease do nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_whose_event_was_lost_is_found_by_the_watch_and_goes_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let clock = Arc::new(ManualClock::new(monday_dawn()));
    let (local, down) = open_with_flaky_bus(dir.path(), &clock).await;
    let ws = local.workspace().await.expect("workspace");
    let (env, after) = (&local.env, watch::stuck_after(&local.env));
    let lease = TimeDelta::from_std(env.step_lease).expect("lease");
    let job = ingest(env, &ws, sample(), None, None).await.expect("ingest").id;
    local.drive(&ws, &job, false, WAIT, |_| {}).await.expect("to the strategy gate");

    // Waiting at a gate for days is not being stuck.
    clock.advance(after * 100);
    let at_gate = watch::check(env).await.expect("check");
    assert_eq!((at_gate.ran, at_gate.stuck, at_gate.redriven), (true, 0, 0), "{at_gate:?}");

    // Approved while the bus is down: stored, and nothing left to move the job on.
    down.store(true, std::sync::atomic::Ordering::SeqCst);
    let recorded = approve(&local, &ws, &job, ApprovalSubject::Strategy).await;
    assert_eq!(recorded.unfinished.as_ref().map(|e| e.code), Some(Code::BusUnavailable));
    down.store(false, std::sync::atomic::Ordering::SeqCst);
    local.settle(WAIT).await.expect("settle");
    assert_eq!(status(&local, &ws, &job).await, JobStatus::StrategyApproved);

    // Not yet stuck one lease later; a second check within the lease does not run.
    clock.advance(lease);
    let early = watch::check(env).await.expect("check");
    assert_eq!((early.ran, early.stuck), (true, 0), "{early:?}");
    assert!(!watch::check(env).await.expect("check").ran, "a check within a lease of the last does nothing");
    assert_eq!(status(&local, &ws, &job).await, JobStatus::StrategyApproved);

    // Three leases still: found, re-driven once, and on it goes to the draft gate.
    clock.advance(after - lease);
    let found = watch::check(env).await.expect("check");
    assert_eq!((found.ran, found.stuck, found.redriven, found.failed), (true, 1, 1, 0), "{found:?}");
    let waiting = local.drive(&ws, &job, false, WAIT, |_| {}).await.expect("to the draft gate");
    assert_eq!(waiting.status, JobStatus::AwaitingDraftApproval);
    clock.advance(after * 4);
    let later = watch::check(env).await.expect("check");
    assert_eq!((later.stuck, later.redriven), (0, 0), "{later:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_approved_post_waits_for_its_window_and_then_goes_out_once() {
    let (_dir, clock, local, ws) = started().await;
    let (job, planned) = approved(&local, &ws).await;

    assert_eq!(planned.state, ScheduleState::Scheduled);
    assert!(planned.window.start > monday_dawn(), "the plan's window is ahead: {:?}", planned.window);
    assert_eq!(planned.due_at, planned.window.start, "due at the window's start");
    assert_eq!(status(&local, &ws, &job).await, JobStatus::Scheduled);
    let listed = schedule::upcoming(&local.env, &ws).await.expect("upcoming");
    assert_eq!(listed.iter().map(|s| &s.job).collect::<Vec<_>>(), [&job]);

    // Until the window opens, nothing goes out however often the dispatcher runs.
    clock.set(planned.window.start - TimeDelta::seconds(1));
    for _ in 0..3 {
        assert!(schedule::tick(&local.env).await.expect("tick").released.is_empty());
    }
    local.settle(WAIT).await.expect("settle");
    assert_eq!(local.sandbox.posts(&ws).await.expect("posts"), 0, "nothing published before the window");
    assert_eq!(status(&local, &ws, &job).await, JobStatus::Scheduled);

    clock.set(planned.window.start);
    let tick = schedule::tick(&local.env).await.expect("tick");
    assert_eq!(tick.released, [(ws.clone(), job.clone())]);
    let done = local.drive(&ws, &job, false, WAIT, |_| {}).await.expect("drive");
    assert_eq!(done.status, JobStatus::Verified, "{:?}", done.failure);
    assert_eq!(local.sandbox.posts(&ws).await.expect("posts"), 1);
    // Later ticks find nothing more to do, and the index is cleaned up.
    clock.advance(TimeDelta::hours(1));
    let later = schedule::tick(&local.env).await.expect("tick");
    assert!(later.released.is_empty() && later.redispatched.is_empty(), "{later:?}");
    assert!(schedule::upcoming(&local.env, &ws).await.expect("upcoming").is_empty());
    local.settle(WAIT).await.expect("settle");
    assert_eq!(local.sandbox.posts(&ws).await.expect("posts"), 1, "still one post");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_dispatchers_racing_on_a_due_post_make_one_post() {
    let dir = tempfile::tempdir().expect("temp dir");
    let clock = Arc::new(ManualClock::new(monday_dawn()));
    let first = open(dir.path(), &clock).await;
    let second = open(dir.path(), &clock).await;
    let ws = first.workspace().await.expect("workspace");
    let (job, planned) = approved(&first, &ws).await;
    clock.set(planned.due_at + TimeDelta::minutes(1));
    let (a, b) = tokio::join!(schedule::tick(&first.env), schedule::tick(&second.env));
    let (a, b) = (a.expect("first tick"), b.expect("second tick"));
    assert_eq!(a.released.len() + b.released.len(), 1, "one dispatcher releases it: {a:?} {b:?}");
    let done = first.drive(&ws, &job, false, WAIT, |_| {}).await.expect("drive");
    assert_eq!(done.status, JobStatus::Verified, "{:?}", done.failure);
    first.settle(WAIT).await.expect("settle");
    assert_eq!(first.sandbox.posts(&ws).await.expect("posts"), 1);
}

/// How a [`Steered`] sandbox departs from the sandbox.
enum Steer {
    /// The process "dies" between the call and the receipt: the post is made (and the notify
    /// told), then the call never returns.
    DiesAfterPosting(Arc<tokio::sync::Notify>),
    /// The first send is refused as rate-limited until the time given; the flag says it was.
    ThrottledOnce(Timestamp, std::sync::atomic::AtomicBool),
}

/// The sandbox, steered.
struct Steered {
    inner: Arc<dyn Connector>,
    steer: Steer,
}

#[async_trait]
impl Connector for Steered {
    fn kind(&self) -> harmonia_contracts::domain::ConnectorKind {
        self.inner.kind()
    }

    async fn create(&self, workspace: &WorkspaceId, post: &Outgoing) -> Sent {
        match &self.steer {
            Steer::DiesAfterPosting(posted) => {
                let _ = self.inner.send(workspace, post).await;
                posted.notify_one();
                std::future::pending().await
            }
            Steer::ThrottledOnce(until, refused) => {
                if !refused.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    return Sent::Refused(harmonia_connectors::Refusal::Throttled(Some(*until)));
                }
                self.inner.send(workspace, post).await
            }
        }
    }

    async fn read_back(&self, lookup: harmonia_connectors::Lookup<'_>) -> Result<Found, ReadBackFailed> {
        self.inner.read_back(lookup).await
    }

    async fn check(&self) -> Result<Checked, Code> {
        self.inner.check().await
    }
}

/// The embedded default in `dir` on `clock`, publishing through the sandbox (over its own
/// store) steered by `steer`: a job approved, then handed to publishing by the tick at its due
/// time. The runner, its workspace, the job and its schedule.
async fn released_through(
    dir: &std::path::Path,
    clock: &Arc<ManualClock>,
    steer: Steer,
) -> (Local, WorkspaceId, JobId, Schedule) {
    let store = {
        let probe = open(dir, clock).await;
        let store = probe.env.store.clone();
        probe.shutdown().await.expect("shutdown");
        store
    };
    let connector = Arc::new(Steered { inner: Arc::new(harmonia_connectors::Sandbox::new(store)), steer });
    let wrap = Wrap { clock: Some(clock.clone() as Arc<dyn Clock>), connector: Some(connector), ..Wrap::default() };
    let local = Local::open_with(dir, Timing::LOCAL, wrap).await.expect("open");
    let ws = local.workspace().await.expect("workspace");
    let (job, planned) = approved(&local, &ws).await;
    clock.set(planned.due_at);
    assert_eq!(schedule::tick(&local.env).await.expect("tick").released.len(), 1);
    (local, ws, job, planned)
}

/// The publication of `schedule`'s draft, as stored.
async fn publication(local: &Local, ws: &WorkspaceId, schedule: &Schedule) -> harmonia_contracts::domain::Publication {
    let doc = local.env.store.get(ws, records::PUBLICATIONS, &records::doc_id(&schedule.draft)).await.expect("read");
    doc.expect("claimed").decode().expect("decode")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dispatcher_killed_between_the_claim_and_the_receipt_is_resolved_by_read_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let clock = Arc::new(ManualClock::new(monday_dawn()));
    let posted = Arc::new(tokio::sync::Notify::new());
    let (first, ws, job, planned) = released_through(dir.path(), &clock, Steer::DiesAfterPosting(posted.clone())).await;
    posted.notified().await;
    // Killed mid-call: the claim exists, the receipt does not.
    first.shutdown().await.expect("shutdown");
    assert!(publication(&first, &ws, &planned).await.receipt.is_none());
    drop(first);

    let next = open(dir.path(), &clock).await;
    next.prepare(&ws).await.expect("resume");
    let done = next.drive(&ws, &job, false, WAIT, |_| {}).await.expect("drive");
    assert_eq!(done.status, JobStatus::Verified, "{:?}", done.failure);
    next.settle(WAIT).await.expect("settle");
    assert_eq!(next.sandbox.posts(&ws).await.expect("posts"), 1, "read back, not posted again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reschedule_publish_now_and_cancel_do_what_they_say_until_the_claim() {
    let (_dir, clock, local, ws) = started().await;

    // Reschedule: only into a posting window, and only ahead.
    let (job, planned) = approved(&local, &ws).await;
    let sunday: Timestamp = "2026-12-13T18:00:00Z".parse().expect("time");
    let outside = act(&local, &ws, &job, ScheduleAction::Reschedule { at: sunday }).await.expect_err("a Sunday");
    assert_eq!(outside.code, Code::InvalidRequest);
    assert!(
        outside.message.contains("the nearest is Mon 2026-12-14 08:00-17:00 America/Denver"),
        "{}",
        outside.message
    );
    let past = act(&local, &ws, &job, ScheduleAction::Reschedule { at: monday_dawn() - TimeDelta::days(1) }).await;
    assert_eq!(past.map_err(|e| e.code).err(), Some(Code::InvalidRequest));
    let tuesday: Timestamp = "2026-12-08T17:30:00Z".parse().expect("time"); // 10:30 in Denver
    let Acted::Rescheduled(moved) =
        act(&local, &ws, &job, ScheduleAction::Reschedule { at: tuesday }).await.expect("move")
    else {
        panic!("rescheduled")
    };
    assert_eq!((moved.due_at, moved.state), (tuesday, ScheduleState::Scheduled));
    assert_eq!(moved.decisions.len(), 1);
    assert_eq!(moved.decisions[0].operator.as_str(), "ana");
    // Its old time passes: nothing happens; its new time comes: it goes out.
    clock.set(planned.due_at + TimeDelta::minutes(5));
    assert!(schedule::tick(&local.env).await.expect("tick").released.is_empty());
    assert_eq!(status(&local, &ws, &job).await, JobStatus::Scheduled);
    clock.set(tuesday);
    assert_eq!(schedule::tick(&local.env).await.expect("tick").released.len(), 1);
    assert_eq!(local.drive(&ws, &job, false, WAIT, |_| {}).await.expect("drive").status, JobStatus::Verified);
    // Once claimed, nothing can change it.
    for action in [
        ScheduleAction::PublishNow,
        ScheduleAction::Cancel,
        ScheduleAction::Reschedule { at: tuesday + TimeDelta::hours(1) },
    ] {
        let refused = act(&local, &ws, &job, action.clone()).await.expect_err("claimed");
        assert_eq!(refused.code, Code::InvalidTransition, "{action:?}");
        assert!(refused.message.contains("already claimed"), "{}", refused.message);
    }

    // Publish now: out at once, before its window.
    clock.set(monday_dawn() + TimeDelta::days(7));
    let (now_job, planned) = approved(&local, &ws).await;
    assert!(planned.due_at > clock.now());
    let Acted::Released(released) = act(&local, &ws, &now_job, ScheduleAction::PublishNow).await.expect("now") else {
        panic!("released")
    };
    assert_eq!(released.decisions.last().map(|d| d.action.name()), Some("publish_now"));
    // Handed over, it is no longer in the index of what is due.
    let system = harmonia_pipeline::steps::system_workspace();
    let due = harmonia_store::scan_all(&*local.env.store, &system, schedule::DUE).await.expect("index");
    let indexed: Vec<schedule::DueEntry> = harmonia_store::decode_each(schedule::DUE, &due);
    assert!(!indexed.iter().any(|e| e.job == now_job), "a post published now keeps no entry due at its old time");
    assert_eq!(local.drive(&ws, &now_job, false, WAIT, |_| {}).await.expect("drive").status, JobStatus::Verified);
    assert!(clock.now() < planned.window.start, "published before its window");

    // Cancel: never published, even when its time comes.
    let posts = local.sandbox.posts(&ws).await.expect("posts");
    let (cancelled, planned) = approved(&local, &ws).await;
    let Acted::Cancelled(_) = act(&local, &ws, &cancelled, ScheduleAction::Cancel).await.expect("cancel") else {
        panic!("cancelled")
    };
    assert_eq!(status(&local, &ws, &cancelled).await, JobStatus::Cancelled);
    clock.set(planned.window.start + TimeDelta::minutes(1));
    assert!(schedule::tick(&local.env).await.expect("tick").released.is_empty());
    local.settle(WAIT).await.expect("settle");
    assert_eq!(local.sandbox.posts(&ws).await.expect("posts"), posts, "a cancelled post is never published");
    let again = act(&local, &ws, &cancelled, ScheduleAction::PublishNow).await.expect_err("cancelled");
    assert_eq!(again.code, Code::InvalidTransition);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_approval_after_the_window_needs_a_person_and_is_never_published_late() {
    let (_dir, clock, local, ws) = started().await;
    let job = ingest(&local.env, &ws, sample(), None, None).await.expect("ingest");
    local.drive(&ws, &job.id, false, WAIT, |_| {}).await.expect("to the strategy gate");
    approve(&local, &ws, &job.id, ApprovalSubject::Strategy).await;
    local.drive(&ws, &job.id, false, WAIT, |_| {}).await.expect("to the draft gate");
    let plan: records::PlanRecord = local
        .env
        .store
        .get(&ws, records::PLANS, &records::doc_id(&job.id))
        .await
        .expect("read")
        .expect("plan")
        .decode()
        .expect("decode");
    let item = plan.plan.items.iter().find(|i| i.id == plan.selected).expect("selected");
    // The operator comes back after the window closed.
    clock.set(item.window.end + TimeDelta::minutes(1));
    approve(&local, &ws, &job.id, ApprovalSubject::Draft).await;
    assert_eq!(status(&local, &ws, &job.id).await, JobStatus::NeedsHuman);
    let passed = schedule::of_job(&local.env, &ws, &job.id).await.expect("read").expect("schedule");
    assert_eq!(passed.state, ScheduleState::WindowPassed);
    clock.advance(TimeDelta::days(1));
    assert!(schedule::tick(&local.env).await.expect("tick").released.is_empty());
    local.settle(WAIT).await.expect("settle");
    assert_eq!(local.sandbox.posts(&ws).await.expect("posts"), 0, "never published late on its own");

    // Rescheduling puts it back in the schedule, at a time inside a window.
    let config = harmonia_pipeline::workspace::current(&*local.env.store, &ws).await.expect("config").config;
    let ahead = windows::occurrences(&config, &[], clock.now(), clock.now() + TimeDelta::days(7));
    let next_window = ahead.iter().find(|w| w.start > clock.now()).expect("a window ahead");
    let at = next_window.start + TimeDelta::minutes(30);
    act(&local, &ws, &job.id, ScheduleAction::Reschedule { at }).await.expect("reschedule");
    assert_eq!(status(&local, &ws, &job.id).await, JobStatus::Scheduled);
    clock.set(at);
    assert_eq!(schedule::tick(&local.env).await.expect("tick").released.len(), 1);
    assert_eq!(local.drive(&ws, &job.id, false, WAIT, |_| {}).await.expect("drive").status, JobStatus::Verified);
    assert_eq!(local.sandbox.posts(&ws).await.expect("posts"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_throttled_post_fails_with_its_reset_and_an_operators_retry_publishes_it_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let clock = Arc::new(ManualClock::new(monday_dawn()));
    let until: Timestamp = "2026-12-08T00:00:00Z".parse().expect("time");
    let (local, ws, job, planned) =
        released_through(dir.path(), &clock, Steer::ThrottledOnce(until, Default::default())).await;
    let failed = local.drive(&ws, &job, false, WAIT, |_| {}).await.expect("drive");
    assert_eq!(failed.status, JobStatus::Failed);
    assert_eq!(failed.failure.as_ref().map(|f| f.code), Some(Code::ConnectorThrottled));
    let refused = publication(&local, &ws, &planned).await.receipt.expect("a receipt").outcome;
    assert_eq!(
        refused,
        harmonia_contracts::domain::ReceiptOutcome::Failed { code: Code::ConnectorThrottled, retry_after: Some(until) }
    );
    assert_eq!(local.sandbox.posts(&ws).await.expect("posts"), 0, "nothing was posted");

    // Past the reset, the operator retries: the publication is claimed again and goes out once.
    clock.set(until);
    harmonia_pipeline::retry::retry(&local.env, &ws, &job, "ana".parse().expect("operator")).await.expect("retry");
    let done = local.drive(&ws, &job, false, WAIT, |_| {}).await.expect("drive");
    assert_eq!(done.status, JobStatus::Verified, "{:?}", done.failure);
    local.settle(WAIT).await.expect("settle");
    assert_eq!(local.sandbox.posts(&ws).await.expect("posts"), 1);
    assert!(matches!(
        publication(&local, &ws, &planned).await.receipt.map(|r| r.outcome),
        Some(harmonia_contracts::domain::ReceiptOutcome::Applied { .. })
    ));
}
