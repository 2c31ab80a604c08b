//! A job's progress as its operator follows it ([`JobEvent`]): the steps it completed (its
//! stage markers), the decisions made on it, and its status now, each with its sentence. The
//! operator API streams them and `harmonia status JOB --watch` prints them; both read them
//! here, so they say the same.

use harmonia_contracts::domain::{Decision, Job, JobEvent, JobEvents, JobStatus};
use harmonia_contracts::ids::{JobId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use harmonia_store::{MAX_QUERY_LIMIT, Query, decode_each, scan};

use crate::Env;
use crate::gates::awaited;
use crate::records::{JOBS, MARKERS, Marker, decisions, doc_id};

/// The job and its stored version (which grows with every write of it): one read, to tell
/// whether the job moved since an earlier look.
pub async fn job_version(env: &Env, workspace: &WorkspaceId, id: &JobId) -> Result<(Job, u64), Error> {
    let doc = env
        .store
        .get(workspace, JOBS, &doc_id(id))
        .await
        .map_err(Error::from)?
        .ok_or_else(|| Error::from_code(Code::NotFound))?;
    let version = doc.version;
    Ok((doc.decode().map_err(Error::from)?, version))
}

/// The job's events so far: its completed steps and the decisions made on it, oldest first,
/// then its status (`not_found` for a job the workspace does not have).
pub async fn events(env: &Env, workspace: &WorkspaceId, id: &JobId) -> Result<JobEvents, Error> {
    let (job, version) = job_version(env, workspace, id).await?;
    let query = Query::all(MAX_QUERY_LIMIT).filter("job", id.to_string()).map_err(Error::from)?;
    let markers: Vec<Marker> =
        decode_each(MARKERS, &scan(&*env.store, workspace, MARKERS, query).await.map_err(Error::from)?);
    let mut events: Vec<JobEvent> = markers
        .into_iter()
        .map(|m| JobEvent::Step {
            text: m.stage.completed_sentence(m.pass, m.round),
            stage: m.stage,
            pass: m.pass,
            round: m.round,
            at: m.completed_at,
        })
        .collect();
    for record in decisions(&*env.store, workspace, id).await? {
        let a = record.approval;
        let subject = a.subject.as_str();
        let (decision, did) = match a.decision {
            Decision::Approved => ("approved", format!("approved the {subject}")),
            Decision::Rejected { .. } => ("rejected", format!("rejected the {subject}")),
            Decision::ChangesRequested { .. } => ("changes_requested", format!("asked for changes to the {subject}")),
            Decision::Edited { .. } => ("edited", format!("wrote the next {subject} version themselves")),
            Decision::RoundsExhausted => {
                ("rounds_exhausted", format!("asked for a round beyond the last the {subject} gate allows"))
            }
        };
        events.push(JobEvent::Decision {
            text: format!("{} {did}.", a.operator),
            subject: a.subject,
            decision: decision.into(),
            by: a.operator,
            at: a.decided_at,
        });
    }
    events.sort_by_key(|e| match e {
        JobEvent::Step { at, .. } | JobEvent::Decision { at, .. } | JobEvent::Status { at, .. } => *at,
    });
    events.push(status(&job, version));
    Ok(JobEvents { job: id.clone(), events })
}

/// Where `job` (stored as `version`) is now.
pub fn status(job: &Job, version: u64) -> JobEvent {
    let mut text = job.status.sentence(job.pass, job.round);
    if let Some(f) = job.failure.as_ref().filter(|_| job.status == JobStatus::Failed) {
        text = format!("The job failed at {}: {} Nothing was published.", f.stage, f.safe_message);
    } else if let Some(f) = job.stalled.as_ref() {
        text.push_str(&format!(" Its {} step is waiting for a service to come back ({}).", f.stage, f.code));
    }
    JobEvent::Status {
        job: job.id.clone(),
        status: job.status,
        version,
        at: job.updated_at,
        text,
        awaiting: awaited(job.status),
        terminal: stopped(job.status),
    }
}

/// Whether a job in `status` has stopped for good, so that following it ends: a terminal
/// status, except `needs_human`, which an operator may still take further (a post whose
/// window passed can be rescheduled).
pub fn stopped(status: JobStatus) -> bool {
    status.is_terminal() && status != JobStatus::NeedsHuman
}
