//! Approve and reject: decisions arrive only here — through the authenticated operator API or
//! the CLI acting as an operator — never from a model. An approval names the exact version it
//! approves (the strategy's or draft's content hash); a stale hash is refused. Resuming
//! re-publishes what a decision or a completed step recorded but had not yet sent.

use chrono::Utc;
use harmonia_bus::OutboundMessage;
use harmonia_contracts::domain::{Approval, ApprovalSubject, Decision, Job, JobStatus, Schedule, ScheduleState};
use harmonia_contracts::event::{Pass, Stage, StageEvent, StrategyApproved};
use harmonia_contracts::ids::{JobId, OperatorId, WorkspaceId};
use harmonia_contracts::trace::TraceParent;
use harmonia_contracts::{Code, Error};
use harmonia_store::{MAX_QUERY_LIMIT, Query, Tx, decode_each, encode, run_transaction, scan, scan_all};

use super::Recorded;
use super::waiting::{
    checked_version, decision_trace, job, moved_meanwhile, names_version, require_waiting, waiting_status,
};
use crate::Env;
use crate::records::{
    APPROVALS, ApprovalRecord, JOBS, MARKERS, Marker, PendingMessage, SCHEDULES, approval_id, doc_id,
};
use crate::step::republish;
use crate::steps::current_draft_id;

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

/// The longest rejection reason, in characters (the same for the CLI and the API).
pub const MAX_REASON_CHARS: usize = 500;

/// Decide on the strategy or the draft of `job`. The version may be the whole content hash or
/// any prefix of at least [`MIN_VERSION_PREFIX`](super::MIN_VERSION_PREFIX) hexadecimal characters; the approval records
/// the whole hash. Refuses a malformed version or reason (`invalid_request`), a job not waiting
/// for this decision (`invalid_transition`, naming its status), a version that is not the
/// current one (`stale_version`), and a second decision.
///
/// The same decision on the same version again (a request sent again after its answer was
/// lost, or a command run again after it was killed) is not refused: it answers with the
/// decision stored before ([`Recorded::earlier`]) and sends again what that decision released.
pub async fn decide(env: &Env, workspace: &WorkspaceId, request: DecisionRequest) -> Result<Recorded<Approval>, Error> {
    check_reason(&request.decision)?;
    let job = job(env, workspace, &request.job).await?;
    if require_waiting(&job, request.subject).is_err()
        && let Some(approval) =
            earlier(env, workspace, &job, request.subject, &request.decision, Some(&request.subject_hash)).await?
    {
        let followed = resume_job(env, workspace, &job).await.map(|_| ());
        return Ok(Recorded { earlier: true, ..Recorded::after(approval, followed) });
    }
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
            crate::gates::schedule::on_approval(
                env,
                workspace,
                &job,
                current_draft_id(&job),
                approval.subject_hash.clone(),
            )
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
        crate::gates::schedule::index(env, workspace, &job.id, s.due_at).await?;
    }
    let record = ApprovalRecord { approval: approval.clone(), next: next.iter().map(PendingMessage::from).collect() };
    record_decision(env, workspace, &job.id, &record, schedule.as_ref()).await?;
    // Stored: from here on the decision stands, and a failure is what is left to do.
    let followed = async {
        env.publish(&next).await.map_err(crate::step::Error::into_error)?;
        if scheduled.is_some_and(|s| s.due_at <= env.clock.now()) {
            // Approved inside its window: due now, so it goes out without waiting for a tick.
            crate::gates::schedule::release_if_due(env, workspace, &job.id).await?;
        }
        Ok(())
    }
    .await;
    Ok(Recorded::after(approval, followed))
}

/// The approval or rejection of `job`'s `subject` already stored, when it is the decision
/// `decision` asks for (the same verdict) on the version `given` names (the whole hash or a
/// prefix of it; any version when `None`).
pub async fn earlier(
    env: &Env,
    workspace: &WorkspaceId,
    job: &Job,
    subject: ApprovalSubject,
    decision: &Decision,
    given: Option<&str>,
) -> Result<Option<Approval>, Error> {
    let Some(doc) = env.store.get(workspace, APPROVALS, &approval_id(&job.id, subject)).await.map_err(Error::from)?
    else {
        return Ok(None);
    };
    let record: ApprovalRecord = doc.decode().map_err(Error::from)?;
    let stored = &record.approval;
    let same_verdict = std::mem::discriminant(&stored.decision) == std::mem::discriminant(decision);
    // A malformed version names no decision: the caller's own checks say what is wrong with it.
    let same_version = given.is_none_or(|v| names_version(&stored.subject_hash, v).unwrap_or(false));
    Ok((same_verdict && same_version).then_some(record.approval))
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
        .map_err(|e| Error::from_code(Code::BusUnavailable).with_cause(e))
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
        Some(s) => crate::gates::schedule::status_with(s),
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
    for record in crate::records::decisions(store, workspace, &job.id).await? {
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
    republish(env, marker).await.map_err(crate::step::Error::into_error)?;
    Ok(marker.next.len())
}

#[cfg(test)]
mod tests {
    use super::*;

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
