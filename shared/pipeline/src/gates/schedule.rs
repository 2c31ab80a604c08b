//! Scheduled publishing: an approved draft goes out in its plan item's window, not the moment
//! it is approved.
//!
//! - Approving a draft ([`crate::gates::decide`]) stores its [`Schedule`] (`schedules/{job}`)
//!   in the decision's transaction: due at the window's start (or at once, inside the window),
//!   the job `scheduled`. Approved after the window closed, it is `window_passed` and the job
//!   `needs_human`: it is never published late on its own.
//! - The operator moves it ([`Action::Reschedule`], inside the workspace's posting windows),
//!   publishes it now or cancels it ([`act`]); each change is an attributed entry of the
//!   schedule, refused with `invalid_transition` once the publication is claimed.
//! - The dispatcher ([`tick`]) hands what is due to publishing: in one transaction it marks the
//!   schedule `dispatched`, moves the job to `draft_approved` and records the `draft.approved`
//!   event in the approval record (so a restart re-publishes it), then publishes it. Publishing
//!   claims before it calls the connector, so two dispatchers racing, or one dying mid-way,
//!   still make one post.
//!
//! What is due is found through an index in the `system` workspace (`due_publications`, one
//! entry per scheduled job, ordered by `due_at`): the only cross-workspace read, and a hint
//! only. Every decision is taken on the workspace's own schedule record. An entry is written
//! before the schedule's transaction, never later than the time it names, so a crash between
//! the two leaves an entry that the next tick repairs (or removes once it is stale), never a
//! scheduled post nobody will dispatch.

use chrono::Duration;
use harmonia_bus::OutboundMessage;
use harmonia_contracts::domain::{
    ApprovalSubject, Job, JobStatus, MAX_SCHEDULE_DECISIONS, Schedule, ScheduleAction, ScheduleDecision, ScheduleState,
    Timestamp, WorkspaceConfig,
};
use harmonia_contracts::event::{DraftApproved, StageEvent};
use harmonia_contracts::ids::{JobId, OperatorId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use harmonia_store::{Collection, Query, Tx, Write, WriteOp, decode_each, encode, run_transaction};
use serde::{Deserialize, Serialize};

use crate::Env;
use crate::planning::windows;
use crate::records::{APPROVALS, JOBS, PLANS, PUBLICATIONS, PendingMessage, PlanRecord, SCHEDULES, doc_id};
use crate::records::{ApprovalRecord, approval_id};
use crate::steps::system_workspace;

/// The index of scheduled posts across workspaces, in the `system` workspace.
pub const DUE: Collection = Collection::new("due_publications");

/// How long a dispatched post may wait for its claim before the dispatcher releases its event
/// again (a dispatcher that died between its commit and its publish).
pub const REDISPATCH_AFTER: Duration = Duration::minutes(2);

/// How old an index entry with no scheduled post behind it must be before a tick removes it:
/// an approval writes its entry just before its own transaction commits.
pub const STALE_AFTER: Duration = Duration::minutes(5);

/// The most index entries one tick reads.
pub const TICK_LIMIT: u32 = 200;

/// One scheduled job in the index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DueEntry {
    /// The job's workspace.
    pub workspace: WorkspaceId,
    /// The job.
    pub job: JobId,
    /// No later than the schedule's own `due_at`.
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub due_at: Timestamp,
    /// When the entry was written.
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub written_at: Timestamp,
}

/// What an operator does to a scheduled post.
pub type Action = ScheduleAction;

/// The schedule an approval of `job`'s current draft (`draft`, version `content_hash`) makes
/// now: the selected plan item's window, due at its start (at once inside it); past its end,
/// `window_passed`.
pub(crate) async fn on_approval(
    env: &Env,
    workspace: &WorkspaceId,
    job: &Job,
    draft: harmonia_contracts::ids::DraftId,
    content_hash: String,
) -> Result<Schedule, Error> {
    let plan: PlanRecord = env
        .store
        .get(workspace, PLANS, &doc_id(&job.id))
        .await
        .map_err(Error::from)?
        .ok_or_else(|| Error::new(Code::NotFound, "The job has no plan to schedule its post by."))?
        .decode()
        .map_err(Error::from)?;
    let item = plan
        .plan
        .items
        .iter()
        .find(|i| i.id == plan.selected)
        .ok_or_else(|| Error::new(Code::StoreCorrupt, "The job's plan does not hold its selected item."))?;
    let config = crate::workspace::version_of_job(&*env.store, job).await?.config;
    let handle = config
        .channels
        .iter()
        .find(|c| c.platform == item.channel)
        .map(|c| c.handle.clone())
        .ok_or_else(|| Error::new(Code::NotFound, "The plan item's channel is not in the job's workspace."))?;
    let now = env.clock.now();
    Ok(Schedule {
        job: job.id.clone(),
        draft,
        content_hash,
        round: job.round,
        pass: job.pass,
        platform: item.channel,
        handle,
        window: item.window,
        due_at: item.window.start.max(now),
        state: if now >= item.window.end { ScheduleState::WindowPassed } else { ScheduleState::Scheduled },
        dispatched_at: None,
        decisions: Vec::new(),
    })
}

/// The status a job takes with `schedule`.
pub(crate) fn status_with(schedule: &Schedule) -> JobStatus {
    match schedule.state {
        ScheduleState::Scheduled => JobStatus::Scheduled,
        ScheduleState::WindowPassed => JobStatus::NeedsHuman,
        ScheduleState::Dispatched => JobStatus::DraftApproved,
        ScheduleState::Cancelled => JobStatus::Cancelled,
    }
}

/// Write (or move) the index entry of `job` to `due_at`.
pub(crate) async fn index(env: &Env, workspace: &WorkspaceId, job: &JobId, due_at: Timestamp) -> Result<(), Error> {
    let entry = DueEntry { workspace: workspace.clone(), job: job.clone(), due_at, written_at: env.clock.now() };
    let write =
        Write { collection: DUE, id: crate::records::index_id(workspace, job), op: WriteOp::Upsert(encode(&entry)?) };
    env.store.commit(&system_workspace(), vec![write]).await.map_err(Error::from)
}

/// Remove `job`'s index entry, if it is still at `version` (or whatever it is, without one).
async fn unindex(env: &Env, workspace: &WorkspaceId, job: &JobId, version: Option<u64>) -> Result<(), Error> {
    let write = Write {
        collection: DUE,
        id: crate::records::index_id(workspace, job),
        op: WriteOp::Delete { expected_version: version },
    };
    match env.store.commit(&system_workspace(), vec![write]).await {
        // Rewritten or removed meanwhile: whoever did it knows better.
        Ok(()) | Err(harmonia_store::Error::PreconditionFailed | harmonia_store::Error::NotFound) => Ok(()),
        Err(e) => Err(Error::from(e)),
    }
}

/// A job's schedule, if it has one.
pub async fn of_job(env: &Env, workspace: &WorkspaceId, job: &JobId) -> Result<Option<Schedule>, Error> {
    let doc = env.store.get(workspace, SCHEDULES, &doc_id(job)).await.map_err(Error::from)?;
    doc.map(|d| d.decode().map_err(Error::from)).transpose()
}

/// The workspace's scheduled posts that have not gone out: scheduled, waiting after their
/// window, or handed to publishing and not yet claimed; soonest first.
pub async fn upcoming(env: &Env, workspace: &WorkspaceId) -> Result<Vec<Schedule>, Error> {
    let mut out = Vec::new();
    for state in [ScheduleState::Scheduled, ScheduleState::WindowPassed, ScheduleState::Dispatched] {
        let query = Query::all(harmonia_store::MAX_QUERY_LIMIT).filter("state", state.as_str()).map_err(Error::from)?;
        let docs = harmonia_store::scan(&*env.store, workspace, SCHEDULES, query).await.map_err(Error::from)?;
        for s in decode_each::<Schedule>(SCHEDULES, &docs) {
            // Dispatched and claimed: publishing has it now, and the job says how it went.
            if s.state == ScheduleState::Dispatched && claimed(env, workspace, &s).await? {
                continue;
            }
            out.push(s);
        }
    }
    out.sort_by_key(|s| s.due_at);
    Ok(out)
}

/// The `draft.approved` event `schedule` releases, continuing the job's trace.
async fn release_message(env: &Env, workspace: &WorkspaceId, schedule: &Schedule) -> Result<OutboundMessage, Error> {
    let job = super::waiting::job(env, workspace, &schedule.job).await?;
    let span = tracing::info_span!("dispatch", otel.name = "dispatch draft", job = %job.id);
    let asked = super::waiting::decision_trace(env, workspace, &job, ApprovalSubject::Draft).await;
    let trace = crate::trace::origin(&span, asked.as_ref());
    let payload = DraftApproved { draft: schedule.draft.clone(), content_hash: schedule.content_hash.clone() };
    let event = StageEvent::in_round(workspace.clone(), job.id.clone(), schedule.round, schedule.pass, &trace, payload);
    span.in_scope(|| env.message(&event)).map_err(|e| Error::from_code(Code::BusUnavailable).with_cause(e))
}

/// Whether the publication of `schedule`'s draft is claimed.
async fn claimed(env: &Env, workspace: &WorkspaceId, schedule: &Schedule) -> Result<bool, Error> {
    Ok(env.store.get(workspace, PUBLICATIONS, &doc_id(&schedule.draft)).await.map_err(Error::from)?.is_some())
}

/// `job`'s schedule read in `tx`, if it may change: in one of `from`, its publication not
/// claimed. Otherwise the transaction aborts with `invalid_transition` ([`refusal`] says why).
async fn changeable(tx: &mut Tx<'_>, job: &JobId, from: &[ScheduleState]) -> Result<Schedule, harmonia_store::Error> {
    let schedule: Schedule = tx.get(SCHEDULES, &doc_id(job)).await?.ok_or(harmonia_store::Error::NotFound)?.decode()?;
    if !from.contains(&schedule.state) || tx.get(PUBLICATIONS, &doc_id(&schedule.draft)).await?.is_some() {
        return Err(harmonia_store::Error::Aborted(Code::InvalidTransition));
    }
    Ok(schedule)
}

/// The error of a change's transaction on `job`'s schedule, in words: a refusal says how the
/// post stands now, a full history says what is left to do.
async fn change_failed(env: &Env, workspace: &WorkspaceId, job: &JobId, e: harmonia_store::Error) -> Error {
    match e {
        harmonia_store::Error::Aborted(Code::InvalidTransition) => {
            let now = match expect_schedule(env, workspace, job).await {
                Ok(now) => now,
                Err(e) => return e,
            };
            let why = match claimed(env, workspace, &now).await {
                Err(e) => return e,
                Ok(true) => "its publication is already claimed",
                Ok(false) => match now.state {
                    ScheduleState::Dispatched => "it has been handed to publishing",
                    ScheduleState::Cancelled => "it was cancelled",
                    ScheduleState::Scheduled | ScheduleState::WindowPassed => "it moved on meanwhile",
                },
            };
            Error::new(Code::InvalidTransition, format!("The post can no longer be changed: {why}."))
        }
        harmonia_store::Error::Aborted(Code::OutOfRange) => Error::new(
            Code::OutOfRange,
            format!("The post has had its {MAX_SCHEDULE_DECISIONS} changes; publish it now or cancel it."),
        ),
        other => Error::from(other),
    }
}

/// Publish the event that hands `job`'s released post to publishing.
async fn hand_over(env: &Env, workspace: &WorkspaceId, job: &JobId, message: OutboundMessage) -> Result<(), Error> {
    env.publish(&[message]).await.map_err(crate::step::Error::into_error)?;
    tracing::info!(workspace = %workspace, job = %job, "scheduled post handed to publishing");
    Ok(())
}

/// Hand `job`'s post to publishing if its schedule is in one of `from` (and due, with
/// `when_due`), recording `decision`: when this call released the post, the event to publish
/// after the transaction (recorded, with the decision, in the draft's approval record, so
/// resuming sends it too) and the schedule as it now stands.
async fn record_release(
    env: &Env,
    workspace: &WorkspaceId,
    job: &JobId,
    from: &[ScheduleState],
    when_due: bool,
    decision: Option<ScheduleDecision>,
) -> Result<Option<(OutboundMessage, Schedule)>, Error> {
    let Some(before) = of_job(env, workspace, job).await? else {
        return Err(Error::new(Code::InvalidTransition, "The job has no scheduled post."));
    };
    let message = release_message(env, workspace, &before).await?;
    let pending = PendingMessage::from(&message);
    let now = env.clock.now();
    let (store, from, decision, pending, before) = (&*env.store, from, &decision, &pending, &before);
    let released = run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
        let mut tx = Tx::begin(store, workspace);
        let id = doc_id(job);
        let mut schedule = changeable(&mut tx, job, from).await?;
        if when_due && schedule.due_at > now {
            return Ok(None);
        }
        // Another version of the post than the one this message names: it was not built from
        // this schedule, so nothing is released.
        if schedule.content_hash != before.content_hash || schedule.draft != before.draft {
            return Err(harmonia_store::Error::Aborted(Code::StaleVersion));
        }
        let mut current: Job = tx.get(JOBS, &id).await?.ok_or(harmonia_store::Error::NotFound)?.decode()?;
        current
            .advance(JobStatus::DraftApproved, now)
            .map_err(|_| harmonia_store::Error::Aborted(Code::InvalidTransition))?;
        let approval = approval_id(job, ApprovalSubject::Draft);
        let mut record: ApprovalRecord =
            tx.get(APPROVALS, &approval).await?.ok_or(harmonia_store::Error::NotFound)?.decode()?;
        record.next = vec![pending.clone()];
        schedule.state = ScheduleState::Dispatched;
        schedule.dispatched_at = Some(now);
        if let Some(d) = decision {
            push(&mut schedule, d.clone())?;
        }
        tx.put(JOBS, &id, encode(&current)?);
        tx.put(APPROVALS, &approval, encode(&record)?);
        tx.put(SCHEDULES, &id, encode(&schedule)?);
        tx.commit().await.map(|()| Some(schedule))
    })
    .await;
    match released {
        Ok(released) => Ok(released.map(|schedule| (message, schedule))),
        Err(e) => Err(change_failed(env, workspace, job, e).await),
    }
}

/// Hand `job`'s post to publishing if it is scheduled and due (an approval inside its window).
pub(crate) async fn release_if_due(env: &Env, workspace: &WorkspaceId, job: &JobId) -> Result<bool, Error> {
    match record_release(env, workspace, job, &[ScheduleState::Scheduled], true, None).await {
        Ok(Some((message, _))) => hand_over(env, workspace, job, message).await.map(|()| true),
        Ok(None) => Ok(false),
        // A dispatcher (or the operator) got there first.
        Err(e) if e.code == Code::InvalidTransition => Ok(false),
        Err(e) => Err(e),
    }
}

fn push(schedule: &mut Schedule, decision: ScheduleDecision) -> Result<(), harmonia_store::Error> {
    if schedule.decisions.len() >= MAX_SCHEDULE_DECISIONS {
        return Err(harmonia_store::Error::Aborted(Code::OutOfRange));
    }
    schedule.decisions.push(decision);
    Ok(())
}

/// What one operator change did.
#[derive(Clone, Debug, PartialEq)]
pub enum Acted {
    /// Moved: the post is due at this time.
    Rescheduled(Schedule),
    /// Handed to publishing now.
    Released(Schedule),
    /// Cancelled: never published.
    Cancelled(Schedule),
}

/// Apply `action` to `job`'s scheduled post as `operator`. Refused with `invalid_transition`
/// when the job has no scheduled post, once its publication is claimed, and (a move or a
/// publish-now) once it has been handed to publishing; a move must be in the future and inside
/// one of the workspace's posting windows, else `invalid_request` naming the nearest window.
pub async fn act(
    env: &Env,
    workspace: &WorkspaceId,
    job: &JobId,
    operator: OperatorId,
    action: Action,
) -> Result<super::Recorded<Acted>, Error> {
    let decision = ScheduleDecision { action: action.clone(), operator, decided_at: env.clock.now() };
    let Some(schedule) = of_job(env, workspace, job).await? else {
        let current = super::waiting::job(env, workspace, job).await?;
        return Err(Error::new(
            Code::InvalidTransition,
            format!(
                "The job is {}; it has no scheduled post (a post is scheduled when its draft is approved).",
                current.status.as_str()
            ),
        ));
    };
    let waiting = [ScheduleState::Scheduled, ScheduleState::WindowPassed];
    match action {
        ScheduleAction::PublishNow => {
            let (message, released) = record_release(env, workspace, job, &waiting, false, Some(decision))
                .await?
                .ok_or_else(|| Error::new(Code::InvalidTransition, "The post is no longer waiting for its time."))?;
            // Handed over, it is no longer due at its old time: its index entry goes at once
            // (kept while the hand-over has not happened, so the dispatcher sends it again).
            // The entry is in the `system` workspace and a transaction spans one workspace, so
            // this is its own write; a failure leaves an entry the next tick removes.
            let followed = async {
                hand_over(env, workspace, job, message).await?;
                unindex(env, workspace, job, None).await
            }
            .await;
            Ok(super::Recorded::after(Acted::Released(released), followed))
        }
        ScheduleAction::Reschedule { at } => {
            let current = super::waiting::job(env, workspace, job).await?;
            let config = crate::workspace::version_of_job(&*env.store, &current).await?.config;
            check_time(env, workspace, &config, at).await?;
            // Never later than either time while the move is in flight (see the module's notes).
            index(env, workspace, job, at.min(schedule.due_at)).await?;
            let moved = change(env, workspace, job, &waiting, decision, move |s| {
                s.due_at = at;
                s.state = ScheduleState::Scheduled;
            })
            .await?;
            // The index still holds the earlier of the two times: the dispatcher looks then,
            // finds the post not due, and leaves it; a failure here costs a look, not the move.
            let followed = index(env, workspace, job, at).await;
            Ok(super::Recorded::after(Acted::Rescheduled(moved), followed))
        }
        ScheduleAction::Cancel => {
            let from = [ScheduleState::Scheduled, ScheduleState::WindowPassed, ScheduleState::Dispatched];
            let cancelled =
                change(env, workspace, job, &from, decision, |s| s.state = ScheduleState::Cancelled).await?;
            let followed = unindex(env, workspace, job, None).await;
            Ok(super::Recorded::after(Acted::Cancelled(cancelled), followed))
        }
    }
}

async fn expect_schedule(env: &Env, workspace: &WorkspaceId, job: &JobId) -> Result<Schedule, Error> {
    of_job(env, workspace, job).await?.ok_or_else(|| Error::from_code(Code::NotFound))
}

/// A time an operator may move a post to: after now, inside one of the workspace's windows
/// (its blackout dates aside).
async fn check_time(env: &Env, workspace: &WorkspaceId, config: &WorkspaceConfig, at: Timestamp) -> Result<(), Error> {
    let now = env.clock.now();
    if at <= now {
        return Err(Error::new(
            Code::InvalidRequest,
            format!("{} is not in the future: a post is moved to a time to come.", windows::instant(at)),
        ));
    }
    let blackout = windows::blackout_dates(&crate::imports::calendar::entries(&*env.store, workspace).await?);
    match windows::place(config, &blackout, at, now) {
        windows::Placement::Inside(_) => Ok(()),
        windows::Placement::Outside(nearest) => Err(Error::new(
            Code::InvalidRequest,
            match nearest {
                Some(w) => format!(
                    "{} is outside the workspace's posting windows; the nearest is {}.",
                    windows::instant(at),
                    windows::describe(config, &w)
                ),
                None => format!(
                    "{} is outside the workspace's posting windows, and none opens within {} days of it.",
                    windows::instant(at),
                    windows::SEARCH_DAYS
                ),
            },
        )),
    }
}

/// Change `job`'s schedule with `edit` if it is in one of `from` and unclaimed, recording
/// `decision` and moving the job to the status the new state means.
async fn change(
    env: &Env,
    workspace: &WorkspaceId,
    job: &JobId,
    from: &[ScheduleState],
    decision: ScheduleDecision,
    edit: impl Fn(&mut Schedule) + Send + Sync,
) -> Result<Schedule, Error> {
    let now = env.clock.now();
    let (store, decision, edit) = (&*env.store, &decision, &edit);
    let result = run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
        let mut tx = Tx::begin(store, workspace);
        let id = doc_id(job);
        let mut schedule = changeable(&mut tx, job, from).await?;
        let mut current: Job = tx.get(JOBS, &id).await?.ok_or(harmonia_store::Error::NotFound)?.decode()?;
        edit(&mut schedule);
        push(&mut schedule, decision.clone())?;
        let status = status_with(&schedule);
        if current.status != status {
            current.advance(status, now).map_err(|_| harmonia_store::Error::Aborted(Code::InvalidTransition))?;
            tx.put(JOBS, &id, encode(&current)?);
        }
        tx.put(SCHEDULES, &id, encode(&schedule)?);
        tx.commit().await.map(|()| schedule)
    })
    .await;
    match result {
        Ok(schedule) => Ok(schedule),
        Err(e) => Err(change_failed(env, workspace, job, e).await),
    }
}

/// What one dispatcher tick did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tick {
    /// The posts it handed to publishing.
    pub released: Vec<(WorkspaceId, JobId)>,
    /// The posts whose event it published again (dispatched, still unclaimed).
    pub redispatched: Vec<(WorkspaceId, JobId)>,
    /// Index entries it moved or removed.
    pub repaired: usize,
    /// Entries it could not handle this time (logged; the next tick tries again).
    pub failed: usize,
}

/// Hand every post that is due to publishing. Safe to run anywhere, any number of times at
/// once: every decision is a transaction on the post's own schedule, and publishing claims.
pub async fn tick(env: &Env) -> Result<Tick, Error> {
    let now = env.clock.now();
    let mut done = Tick::default();
    for (entry, version) in crate::records::due_entries::<DueEntry>(&*env.store, DUE, TICK_LIMIT).await? {
        if entry.due_at > now {
            break;
        }
        if let Err(e) = handle(env, &entry, version, now, &mut done).await {
            tracing::warn!(workspace = %entry.workspace, job = %entry.job, code = e.code.as_str(), "a scheduled post could not be dispatched this time");
            done.failed += 1;
        }
    }
    Ok(done)
}

async fn handle(env: &Env, entry: &DueEntry, version: u64, now: Timestamp, done: &mut Tick) -> Result<(), Error> {
    let (ws, job) = (&entry.workspace, &entry.job);
    match of_job(env, ws, job).await? {
        Some(s) if s.state == ScheduleState::Scheduled && s.due_at > now => {
            index(env, ws, job, s.due_at).await?;
            done.repaired += 1;
        }
        Some(s) if s.state == ScheduleState::Scheduled => {
            let released = release_if_due(env, ws, job).await?;
            done.released.extend(released.then(|| (ws.clone(), job.clone())));
        }
        Some(s) if s.state == ScheduleState::Dispatched => {
            let current = super::waiting::job(env, ws, job).await?;
            if current.status != JobStatus::DraftApproved {
                // Claimed (or cancelled): nothing more to dispatch.
                unindex(env, ws, job, Some(version)).await?;
                done.repaired += 1;
            } else if s.dispatched_at.is_none_or(|t| t + REDISPATCH_AFTER <= now) {
                redispatch(env, ws, job).await?;
                done.redispatched.push((ws.clone(), job.clone()));
            }
        }
        // Nothing scheduled behind it (cancelled, waiting after its window, or an approval
        // that never committed): removed once it cannot be an approval still in flight.
        _ if entry.written_at + STALE_AFTER <= now => {
            unindex(env, ws, job, Some(version)).await?;
            done.repaired += 1;
        }
        _ => {}
    }
    Ok(())
}

/// Publish again the `draft.approved` event a dispatch recorded.
async fn redispatch(env: &Env, workspace: &WorkspaceId, job: &JobId) -> Result<(), Error> {
    let doc =
        env.store.get(workspace, APPROVALS, &approval_id(job, ApprovalSubject::Draft)).await.map_err(Error::from)?;
    let record: ApprovalRecord = doc.ok_or_else(|| Error::from_code(Code::NotFound))?.decode().map_err(Error::from)?;
    let messages: Vec<OutboundMessage> = record
        .next
        .iter()
        .map(PendingMessage::outbound)
        .collect::<Option<_>>()
        .ok_or_else(|| Error::from_code(Code::StoreCorrupt))?;
    env.publish(&messages).await.map_err(crate::step::Error::into_error)
}

#[cfg(test)]
mod tests;
