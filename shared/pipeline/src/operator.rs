//! Human decisions and read views. Decisions arrive only here — through the authenticated
//! operator API or the CLI acting as an operator — never from a model. An approval names the
//! exact version it approves (the strategy's or draft's content hash); a stale hash is refused.

use chrono::Utc;
use harmonia_bus::OutboundMessage;
use harmonia_contracts::domain::{Approval, ApprovalSubject, Decision, Draft, Job, JobStatus, Schedule, ScheduleState};
use harmonia_contracts::event::{Pass, Stage, StageEvent, StrategyApproved};
use harmonia_contracts::ids::{DocId, JobId, OperatorId, WorkspaceId};
use harmonia_contracts::trace::TraceParent;
use harmonia_contracts::{Code, Error};
use harmonia_store::{Direction, MAX_QUERY_LIMIT, Query, Tx, decode_each, encode, run_transaction, scan, scan_all};
use serde::{Deserialize, Serialize};

use crate::Env;
use crate::records::{
    APPROVALS, DRAFTS, JOBS, MARKERS, Marker, PendingMessage, SCHEDULES, STRATEGIES, StrategyRecord, doc_id,
};
use crate::step::republish;
use crate::steps::current_draft_id;

/// A stored decision and the event it released (re-published on resume).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRecord {
    /// The decision.
    pub approval: Approval,
    /// The event to publish (none for a rejection).
    pub next: Vec<PendingMessage>,
}

/// The id of a job's decision on `subject`.
pub fn approval_id(job: &JobId, subject: ApprovalSubject) -> DocId {
    doc_id(format!("{job}.{}", subject.as_str()))
}

/// The version a decision on `subject` must name right now, for a job in `status`.
pub async fn current_version(
    env: &Env,
    workspace: &WorkspaceId,
    job: &Job,
    subject: ApprovalSubject,
) -> Result<String, Error> {
    match subject {
        ApprovalSubject::Strategy => {
            let doc = env.store.get(workspace, STRATEGIES, &doc_id(&job.id)).await.map_err(Error::from)?;
            let record: StrategyRecord =
                doc.ok_or_else(|| Error::from_code(Code::NotFound))?.decode().map_err(Error::from)?;
            Ok(record.content_hash)
        }
        ApprovalSubject::Draft => {
            let doc = env.store.get(workspace, DRAFTS, &doc_id(current_draft_id(job))).await.map_err(Error::from)?;
            let draft: Draft = doc.ok_or_else(|| Error::from_code(Code::NotFound))?.decode().map_err(Error::from)?;
            Ok(draft.content_hash)
        }
    }
}

/// One human decision, as the operator API or the CLI receives it.
#[derive(Clone, Debug, PartialEq)]
pub struct DecisionRequest {
    /// The job.
    pub job: JobId,
    /// Who decides (from the credential, never from a model).
    pub operator: OperatorId,
    /// Strategy or draft.
    pub subject: ApprovalSubject,
    /// Approve or reject.
    pub decision: Decision,
    /// The exact version decided on.
    pub subject_hash: String,
    /// Trace context of the request, if any.
    pub trace: Option<TraceParent>,
}

/// The fewest hexadecimal characters of a content hash that name a version.
pub const MIN_VERSION_PREFIX: usize = 8;
/// The longest rejection reason, in characters (the same for the CLI and the API).
pub const MAX_REASON_CHARS: usize = 500;

/// Decide on the strategy or the draft of `job`. The version may be the whole content hash or
/// any prefix of at least [`MIN_VERSION_PREFIX`] hexadecimal characters; the approval records
/// the whole hash. Refuses a malformed version or reason (`invalid_request`), a job not waiting
/// for this decision (`invalid_transition`, naming its status), a version that is not the
/// current one (`stale_version`), and a second decision.
pub async fn decide(env: &Env, workspace: &WorkspaceId, request: DecisionRequest) -> Result<Approval, Error> {
    check_reason(&request.decision)?;
    let job = job(env, workspace, &request.job).await?;
    let current = checked_version(env, workspace, &job, request.subject, &request.subject_hash).await?;
    let approval = Approval {
        job: job.id.clone(),
        subject: request.subject,
        subject_hash: current,
        round: job.round,
        decision: request.decision,
        operator: request.operator,
        decided_at: env.clock.now(),
    };
    // The decision is a span of the job's trace, under the exported span of the event that
    // asked for it; the event it releases is created under it.
    let verdict = approval.decision.describe();
    let span = tracing::info_span!(
        "decision",
        otel.name = %format_args!("decision {}", approval.subject.as_str()),
        job = %job.id,
        decision = verdict,
    );
    let asked = decision_trace(env, workspace, &job, request.subject).await;
    let trace = crate::trace::origin(&span, asked.or(request.trace).as_ref());
    // An approved draft is scheduled, not published: the dispatcher releases it when due.
    let schedule = match (approval.subject, &approval.decision) {
        (ApprovalSubject::Draft, Decision::Approved) => Some(
            crate::schedule::on_approval(env, workspace, &job, current_draft_id(&job), approval.subject_hash.clone())
                .await?,
        ),
        _ => None,
    };
    let next = match (&approval.decision, approval.subject) {
        (Decision::Approved, ApprovalSubject::Strategy) => {
            vec![span.in_scope(|| released(env, workspace, &job, &approval, &trace))?]
        }
        (Decision::Approved, ApprovalSubject::Draft) | (Decision::Rejected { .. }, _) => Vec::new(),
        (Decision::ChangesRequested { .. } | Decision::Edited { .. } | Decision::RoundsExhausted, _) => {
            return Err(Error::new(Code::InvalidRequest, "A decision here is to approve or to reject."));
        }
    };
    let scheduled = schedule.as_ref().filter(|s| s.state == ScheduleState::Scheduled);
    if let Some(s) = scheduled {
        crate::schedule::index(env, workspace, &job.id, s.due_at).await?;
    }
    let record = ApprovalRecord { approval: approval.clone(), next: next.iter().map(PendingMessage::from).collect() };
    record_decision(env, workspace, &job.id, &record, schedule.as_ref()).await?;
    env.publish(&next).await.map_err(|_| Error::from_code(Code::BusUnavailable))?;
    if scheduled.is_some_and(|s| s.due_at <= env.clock.now()) {
        // Approved inside its window: due now, so it goes out without waiting for a tick.
        crate::schedule::release_if_due(env, workspace, &job.id).await?;
    }
    Ok(approval)
}

/// The job must be waiting for a decision on `subject`; otherwise `invalid_transition`, naming
/// the job's status.
pub fn require_waiting(job: &Job, subject: ApprovalSubject) -> Result<(), Error> {
    if job.status == waiting_status(subject) {
        return Ok(());
    }
    Err(Error::new(
        Code::InvalidTransition,
        format!("The job is {}; it is not waiting for a {} decision.", job.status.as_str(), subject.as_str()),
    ))
}

/// The job must wait for a decision on `subject` (`invalid_transition`, naming its status), and
/// `given` must name its current version (`stale_version`); the whole current hash.
pub(crate) async fn checked_version(
    env: &Env,
    workspace: &WorkspaceId,
    job: &Job,
    subject: ApprovalSubject,
    given: &str,
) -> Result<String, Error> {
    require_waiting(job, subject)?;
    let current = current_version(env, workspace, job, subject).await?;
    if !names_version(&current, given)? {
        return Err(Error::from_code(Code::StaleVersion));
    }
    Ok(current)
}

/// Whether `given` names the version `current`: the whole hash or a prefix of at least
/// [`MIN_VERSION_PREFIX`] hexadecimal characters (either case). Anything else is not a version.
fn names_version(current: &str, given: &str) -> Result<bool, Error> {
    let given = given.trim();
    if given.len() < MIN_VERSION_PREFIX || given.len() > 64 || !given.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::new(
            Code::InvalidRequest,
            "A version is 8 to 64 hexadecimal characters: the start of the content hash or all of it.",
        ));
    }
    Ok(current.len() >= given.len() && current[..given.len()].eq_ignore_ascii_case(given))
}

/// A rejection's reason must say something, within [`MAX_REASON_CHARS`].
fn check_reason(decision: &Decision) -> Result<(), Error> {
    match decision {
        Decision::Rejected { reason } if reason.trim().is_empty() || reason.chars().count() > MAX_REASON_CHARS => {
            Err(Error::new(Code::InvalidRequest, "A rejection needs a reason of 1 to 500 characters."))
        }
        _ => Ok(()),
    }
}

/// The decision a job in `status` waits for, if any (the inverse of [`waiting_status`]).
pub fn awaited(status: JobStatus) -> Option<ApprovalSubject> {
    [ApprovalSubject::Strategy, ApprovalSubject::Draft].into_iter().find(|s| waiting_status(*s) == status)
}

/// The decision `job` waits for and the version it must name, when it waits for one.
pub async fn awaiting(
    env: &Env,
    workspace: &WorkspaceId,
    job: &Job,
) -> Result<Option<(ApprovalSubject, String)>, Error> {
    match awaited(job.status) {
        Some(subject) => Ok(Some((subject, current_version(env, workspace, job, subject).await?))),
        None => Ok(None),
    }
}

/// The status a job waits in for a decision on `subject`.
pub(crate) fn waiting_status(subject: ApprovalSubject) -> JobStatus {
    match subject {
        ApprovalSubject::Strategy => JobStatus::AwaitingStrategyApproval,
        ApprovalSubject::Draft => JobStatus::AwaitingDraftApproval,
    }
}

/// The status a decision without a schedule moves the job to (an approved draft takes the
/// status of its schedule instead).
fn decided_status(subject: ApprovalSubject, decision: &Decision) -> JobStatus {
    match (subject, decision == &Decision::Approved) {
        (ApprovalSubject::Strategy, true) => JobStatus::StrategyApproved,
        (ApprovalSubject::Strategy, false) => JobStatus::StrategyRejected,
        (ApprovalSubject::Draft, true) => JobStatus::Scheduled,
        (ApprovalSubject::Draft, false) => JobStatus::DraftRejected,
    }
}

/// The trace a decision continues: the job's own (from the event that asked for the
/// decision), so one job is one trace across its human gates. `None` when it cannot be read;
/// the request's context (or a new root) is then the fallback.
pub(crate) async fn decision_trace(
    env: &Env,
    workspace: &WorkspaceId,
    job: &Job,
    subject: ApprovalSubject,
) -> Option<TraceParent> {
    let (stage, pass) = match subject {
        ApprovalSubject::Strategy => (Stage::Strategize, Pass::FIRST),
        ApprovalSubject::Draft => (Stage::Policy, job.pass),
    };
    let asked = match crate::step::marker(env, workspace, &job.id, stage, job.round, pass).await {
        Ok(marker) => marker,
        Err(e) => {
            // The decision still stands; only its place in the job's trace is lost.
            tracing::warn!(job = %job.id, error = %e, "the job's trace could not be read; the decision starts its own");
            None
        }
    };
    asked
        .and_then(|m| m.next.first().and_then(|n| n.attributes.get("traceparent").cloned()))
        .and_then(|t| t.parse::<TraceParent>().ok())
}

/// The event a strategy's approval releases: `strategy.approved`, naming the exact version
/// approved, continuing `trace` (an approved draft waits for the dispatcher instead).
fn released(
    env: &Env,
    workspace: &WorkspaceId,
    job: &Job,
    approval: &Approval,
    trace: &TraceParent,
) -> Result<OutboundMessage, Error> {
    let hash = approval.subject_hash.clone();
    let (ws, id) = (workspace.clone(), job.id.clone());
    // Draft rounds start again from the original: `strategy.approved` carries round 0.
    env.message(&StageEvent::new(ws, id, Pass::FIRST, trace, StrategyApproved { strategy_hash: hash }))
        .map_err(|_| Error::from_code(Code::BusUnavailable))
}

/// Store the decision (and an approved draft's schedule) and move the job, in one transaction
/// that fails if the job stopped waiting or was decided meanwhile.
async fn record_decision(
    env: &Env,
    workspace: &WorkspaceId,
    job: &JobId,
    record: &ApprovalRecord,
    schedule: Option<&Schedule>,
) -> Result<(), Error> {
    let subject = record.approval.subject;
    let decided = match schedule {
        Some(s) => crate::schedule::status_with(s),
        None => decided_status(subject, &record.approval.decision),
    };
    let waiting = waiting_status(subject);
    let data = &encode(record).map_err(Error::from)?;
    let schedule = &schedule.map(encode).transpose().map_err(Error::from)?;
    let now = env.clock.now();
    let store = &*env.store;
    run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
        let mut tx = Tx::begin(store, workspace);
        let id = approval_id(job, subject);
        if tx.get(APPROVALS, &id).await?.is_some() {
            return Err(harmonia_store::Error::Aborted(Code::InvalidTransition));
        }
        let mut current: Job = tx.get(JOBS, &doc_id(job)).await?.ok_or(harmonia_store::Error::NotFound)?.decode()?;
        if current.status != waiting {
            return Err(harmonia_store::Error::Aborted(Code::InvalidTransition));
        }
        current.advance(decided, now).map_err(|_| harmonia_store::Error::Aborted(Code::InvalidTransition))?;
        tx.put(JOBS, &doc_id(job), encode(&current)?);
        tx.put(APPROVALS, &id, data.clone());
        if let Some(schedule) = schedule {
            tx.put(SCHEDULES, &doc_id(job), schedule.clone());
        }
        tx.commit().await
    })
    .await
    .map_err(moved_meanwhile)
}

/// A decision's transaction refused because the job moved on meanwhile, in words; other
/// errors as they are.
pub(crate) fn moved_meanwhile(e: harmonia_store::Error) -> Error {
    match e {
        harmonia_store::Error::Aborted(Code::InvalidTransition) => {
            Error::new(Code::InvalidTransition, "The job is no longer waiting for this decision.")
        }
        other => Error::from(other),
    }
}

/// A job by id.
pub async fn job(env: &Env, workspace: &WorkspaceId, id: &JobId) -> Result<Job, Error> {
    env.store
        .get(workspace, JOBS, &doc_id(id))
        .await
        .map_err(Error::from)?
        .ok_or_else(|| Error::from_code(Code::NotFound))?
        .decode()
        .map_err(Error::from)
}

/// The workspace's jobs, newest first.
pub async fn jobs(env: &Env, workspace: &WorkspaceId, limit: u32) -> Result<Vec<Job>, Error> {
    let query = Query::all(limit).order_by("created_at", Direction::Descending).map_err(Error::from)?;
    let docs = env.store.query(workspace, JOBS, &query).await.map_err(Error::from)?;
    // One job record that does not decode is skipped (logged and counted), never the listing.
    Ok(decode_each(JOBS, &docs))
}

/// After a restart: re-publish what every unfinished job's completed steps and decisions
/// released. Consumers skip what they already completed (their markers), so this is safe to
/// run at any time; it is how a job interrupted between a commit and its publish moves on.
pub async fn resume(env: &Env, workspace: &WorkspaceId) -> Result<usize, Error> {
    let store = &*env.store;
    let jobs: Vec<Job> = decode_each(JOBS, &scan_all(store, workspace, JOBS).await.map_err(Error::from)?);
    let mut republished = 0;
    for job in jobs.iter().filter(|j| !j.status.is_terminal()) {
        republished += resume_job(env, workspace, job).await?;
    }
    Ok(republished)
}

/// [`resume`] for one unfinished job: re-publish what its completed steps and decisions
/// released and no consumer has completed yet; the number of messages.
pub async fn resume_job(env: &Env, workspace: &WorkspaceId, job: &Job) -> Result<usize, Error> {
    let store = &*env.store;
    let mut republished = 0;
    let query = Query::all(MAX_QUERY_LIMIT).filter("job", job.id.to_string()).map_err(Error::from)?;
    let markers: Vec<Marker> =
        decode_each(MARKERS, &scan(store, workspace, MARKERS, query).await.map_err(Error::from)?);
    for marker in &markers {
        republished += resend(env, marker).await?;
    }
    for record in crate::rounds::decisions(store, workspace, &job.id).await? {
        let marker = Marker {
            job: job.id.clone(),
            stage: Stage::Operator,
            round: record.approval.round,
            pass: job.pass,
            next: record.next,
            completed_at: Utc::now(),
        };
        republished += resend(env, &marker).await?;
    }
    Ok(republished)
}

/// Re-publish what `marker` recorded; the number of its messages.
async fn resend(env: &Env, marker: &Marker) -> Result<usize, Error> {
    republish(env, marker).await.map_err(|_| Error::from_code(Code::BusUnavailable))?;
    Ok(marker.next.len())
}

#[cfg(test)]
mod version_tests {
    use super::*;

    const HASH: &str = "7d93716a9b8c4f1e0a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081";

    #[test]
    fn a_version_is_the_hash_or_a_prefix_of_at_least_eight_hex_characters() {
        assert_eq!(names_version(HASH, HASH).ok(), Some(true));
        assert_eq!(names_version(HASH, "7d93716a").ok(), Some(true));
        assert_eq!(names_version(HASH, "7D93716A9B8C").ok(), Some(true), "either case");
        assert_eq!(names_version(HASH, " 7d93716a9b8c ").ok(), Some(true), "surrounding space is not part of it");
        assert_eq!(names_version(HASH, "7d93716b").ok(), Some(false), "another version: stale");
        for malformed in ["", "7d93716", "7d93716z", "xxxxxxxx", &"a".repeat(65)] {
            let e = names_version(HASH, malformed).expect_err(malformed);
            assert_eq!(e.code, Code::InvalidRequest, "{malformed}");
        }
    }

    #[test]
    fn a_rejection_reason_is_one_to_five_hundred_characters() {
        let reject = |reason: String| Decision::Rejected { reason };
        assert!(check_reason(&Decision::Approved).is_ok());
        assert!(check_reason(&reject("Off brand.".into())).is_ok());
        assert!(check_reason(&reject("é".repeat(MAX_REASON_CHARS))).is_ok(), "characters, not bytes");
        for bad in [String::new(), "   ".into(), "x".repeat(MAX_REASON_CHARS + 1), "x".repeat(100_000)] {
            assert_eq!(check_reason(&reject(bad)).map_err(|e| e.code).err(), Some(Code::InvalidRequest));
        }
    }
}
