//! Human decisions and read views. Decisions arrive only here — through the authenticated
//! operator API or the CLI acting as an operator — never from a model. An approval names the
//! exact version it approves (the strategy's or draft's content hash); a stale hash is refused.

use chrono::Utc;
use harmonia_contracts::domain::{Approval, ApprovalSubject, Decision, Draft, Job, JobStatus};
use harmonia_contracts::event::{DraftApproved, Pass, StageEvent, StrategyApproved};
use harmonia_contracts::ids::{DocId, JobId, OperatorId, WorkspaceId};
use harmonia_contracts::trace::TraceParent;
use harmonia_contracts::{Code, Error};
use harmonia_store::{Direction, Query, Tx, encode, run_transaction};
use serde::{Deserialize, Serialize};

use crate::Env;
use crate::records::{APPROVALS, DRAFTS, JOBS, MARKERS, Marker, PendingMessage, STRATEGIES, StrategyRecord, doc_id};
use crate::step::republish;
use crate::steps::draft_id_of;

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
            let doc =
                env.store.get(workspace, DRAFTS, &doc_id(draft_id_of(&job.id, job.pass))).await.map_err(Error::from)?;
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

/// Decide on the strategy or the draft of `job`. Refuses a job not waiting for this decision
/// (`invalid_transition`), a hash that is not the current version (`stale_version`), and a
/// second decision.
pub async fn decide(env: &Env, workspace: &WorkspaceId, request: DecisionRequest) -> Result<Approval, Error> {
    let DecisionRequest { job: job_id, operator, subject, decision, subject_hash, trace } = request;
    let (job_id, operator, subject_hash) = (&job_id, &operator, subject_hash.as_str());
    let job: Job = env
        .store
        .get(workspace, JOBS, &doc_id(job_id))
        .await
        .map_err(Error::from)?
        .ok_or_else(|| Error::from_code(Code::NotFound))?
        .decode()
        .map_err(Error::from)?;
    let waiting = match subject {
        ApprovalSubject::Strategy => JobStatus::AwaitingStrategyApproval,
        ApprovalSubject::Draft => JobStatus::AwaitingDraftApproval,
    };
    if job.status != waiting {
        return Err(Error::from_code(Code::InvalidTransition));
    }
    let current = current_version(env, workspace, &job, subject).await?;
    if current != subject_hash {
        return Err(Error::from_code(Code::StaleVersion));
    }
    let approval = Approval {
        job: job_id.clone(),
        subject,
        subject_hash: current.clone(),
        decision: decision.clone(),
        operator: operator.clone(),
        decided_at: Utc::now(),
    };
    let approved = decision == Decision::Approved;
    let next_status = match (subject, approved) {
        (ApprovalSubject::Strategy, true) => JobStatus::StrategyApproved,
        (ApprovalSubject::Strategy, false) => JobStatus::StrategyRejected,
        (ApprovalSubject::Draft, true) => JobStatus::DraftApproved,
        (ApprovalSubject::Draft, false) => JobStatus::DraftRejected,
    };
    // A decision continues the job's trace (from the event that asked for it), so one job is
    // one trace across its human gates; the request's own context is the fallback.
    let gate = match subject {
        ApprovalSubject::Strategy => (harmonia_contracts::event::Stage::Strategize, Pass::FIRST),
        ApprovalSubject::Draft => (harmonia_contracts::event::Stage::Policy, job.pass),
    };
    let job_trace = crate::step::marker(env, workspace, job_id, gate.0, gate.1)
        .await
        .ok()
        .flatten()
        .and_then(|m| m.next.first().and_then(|n| n.attributes.get("traceparent").cloned()))
        .and_then(|t| t.parse::<TraceParent>().ok());
    // The decision is a span of the job's trace, under the exported span of the event that
    // asked for it; the event it releases is created under it.
    let subject_name = match subject {
        ApprovalSubject::Strategy => "strategy",
        ApprovalSubject::Draft => "draft",
    };
    let verdict = if approved { "approved" } else { "rejected" };
    let span = tracing::info_span!(
        "decision",
        otel.name = %format_args!("decision {subject_name}"),
        job = %job_id,
        decision = verdict,
    );
    let trace = crate::trace::origin(&span, job_trace.or(trace).as_ref());
    let mut next = Vec::new();
    if approved {
        let message = span
            .in_scope(|| match subject {
                ApprovalSubject::Strategy => env.message(&StageEvent::new(
                    workspace.clone(),
                    job_id.clone(),
                    Pass::FIRST,
                    &trace,
                    StrategyApproved { strategy_hash: current },
                )),
                ApprovalSubject::Draft => env.message(&StageEvent::new(
                    workspace.clone(),
                    job_id.clone(),
                    job.pass,
                    &trace,
                    DraftApproved { draft: draft_id_of(job_id, job.pass), content_hash: current },
                )),
            })
            .map_err(|_| Error::from_code(Code::BusUnavailable))?;
        next.push(message);
    }
    let record = ApprovalRecord {
        approval: approval.clone(),
        next: next
            .iter()
            .map(|m| PendingMessage {
                topic: m.topic.to_string(),
                data: base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &m.data),
                attributes: m.attributes.clone(),
            })
            .collect(),
    };
    let data = encode(&record).map_err(Error::from)?;
    let store = &*env.store;
    let data = &data;
    run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
        let mut tx = Tx::begin(store, workspace);
        let id = approval_id(job_id, subject);
        if tx.get(APPROVALS, &id).await?.is_some() {
            return Err(harmonia_store::Error::AlreadyExists);
        }
        let mut current: Job = tx.get(JOBS, &doc_id(job_id)).await?.ok_or(harmonia_store::Error::NotFound)?.decode()?;
        if current.status != waiting {
            return Err(harmonia_store::Error::PreconditionFailed);
        }
        current.advance(next_status, Utc::now()).map_err(|_| harmonia_store::Error::PreconditionFailed)?;
        tx.put(JOBS, &doc_id(job_id), encode(&current)?);
        tx.put(APPROVALS, &id, data.clone());
        tx.commit().await
    })
    .await
    .map_err(|e| match e {
        harmonia_store::Error::AlreadyExists | harmonia_store::Error::PreconditionFailed => {
            Error::new(Code::InvalidTransition, "the job is no longer waiting for this decision")
        }
        other => Error::from(other),
    })?;
    env.publish(&next).await.map_err(|_| Error::from_code(Code::BusUnavailable))?;
    Ok(approval)
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
    docs.iter().map(|d| d.decode().map_err(Error::from)).collect()
}

/// After a restart: re-publish what every unfinished job's completed steps and decisions
/// released. Consumers skip what they already completed (their markers), so this is safe to
/// run at any time; it is how a job interrupted between a commit and its publish moves on.
pub async fn resume(env: &Env, workspace: &WorkspaceId) -> Result<usize, Error> {
    let mut republished = 0;
    for job in jobs(env, workspace, 1000).await? {
        if job.status.is_terminal() {
            continue;
        }
        let query = Query::all(100).filter("job", job.id.to_string()).map_err(Error::from)?;
        for doc in env.store.query(workspace, MARKERS, &query).await.map_err(Error::from)? {
            let marker: Marker = doc.decode().map_err(Error::from)?;
            republish(env, &marker).await.map_err(|_| Error::from_code(Code::BusUnavailable))?;
            republished += marker.next.len();
        }
        for subject in [ApprovalSubject::Strategy, ApprovalSubject::Draft] {
            if let Some(doc) =
                env.store.get(workspace, APPROVALS, &approval_id(&job.id, subject)).await.map_err(Error::from)?
            {
                let record: ApprovalRecord = doc.decode().map_err(Error::from)?;
                let marker = Marker {
                    job: job.id.clone(),
                    stage: harmonia_contracts::event::Stage::Operator,
                    pass: job.pass,
                    next: record.next,
                    completed_at: Utc::now(),
                };
                republish(env, &marker).await.map_err(|_| Error::from_code(Code::BusUnavailable))?;
                republished += marker.next.len();
            }
        }
    }
    Ok(republished)
}
