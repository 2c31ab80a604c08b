//! A job's progress as its operator follows it ([`JobEvent`]): the steps it completed (its
//! stage markers), the decisions made on it, and its status now, each with its sentence. The
//! operator API streams them and `harmonia status JOB --watch` prints them; both read them
//! here, so they say the same.

use harmonia_contracts::domain::{
    Decision, Job, JobEvent, JobEvents, JobFailure, JobStatus, Publication, ReceiptOutcome,
};
use harmonia_contracts::ids::{JobId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use harmonia_store::{MAX_QUERY_LIMIT, Query, decode_each, scan};

use crate::Env;
use crate::gates::awaited;
use crate::records::{JOBS, MARKERS, Marker, PUBLICATIONS, decisions, doc_id};

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
    let live = live_posts(env, workspace, &job).await?;
    events.push(status(&job, version, live));
    Ok(JobEvents { job: id.clone(), events })
}

/// The posts of a thread that are live though `job` failed: those its publication made
/// before the platform refused the next one, and how many it has (`None` when its publication
/// is no thread, or made none of its posts).
pub async fn live_posts(env: &Env, workspace: &WorkspaceId, job: &Job) -> Result<Option<(usize, usize)>, Error> {
    if job.status != JobStatus::Failed {
        return Ok(None);
    }
    let id = doc_id(crate::steps::current_draft_id(job));
    let Some(doc) = env.store.get(workspace, PUBLICATIONS, &id).await.map_err(Error::from)? else { return Ok(None) };
    let publication: Publication = doc.decode().map_err(Error::from)?;
    let live = publication.thread.iter().filter(|p| matches!(p.receipt, Some(ReceiptOutcome::Applied { .. }))).count();
    Ok((live > 0).then_some((live, publication.thread.len())))
}

/// What a failed job's operator is told: where it failed (`by`: who failed there, as the
/// caller names it, or nothing) and why, and what is live. A thread refused part way (`live`:
/// the posts made, of how many) keeps the posts it made, and a retry (where the failure allows
/// one) makes the rest, each replying to the one before.
pub fn failure_sentence(failure: &JobFailure, by: &str, live: Option<(usize, usize)>) -> String {
    match live {
        None => format!("The job failed at {}{by}: {} Nothing was published.", failure.stage, failure.safe_message),
        Some((made, of)) => {
            let rest = match crate::retry::retryable(failure.code) {
                true => "a retry of the job makes the rest, each replying to the one before",
                false => "the rest were not posted",
            };
            let first =
                if made == 1 { "Its first post stays".to_owned() } else { format!("Its first {made} posts stay") };
            format!(
                "The job failed at {}{by} on post {} of its thread of {of}: {} {first} live; {rest}.",
                failure.stage,
                made + 1,
                failure.safe_message
            )
        }
    }
}

/// Where `job` (stored as `version`) is now, with the posts of a thread live though it failed
/// ([`live_posts`]).
pub fn status(job: &Job, version: u64, live: Option<(usize, usize)>) -> JobEvent {
    let mut text = job.status.sentence(job.pass, job.round);
    if let Some(f) = job.failure.as_ref().filter(|_| job.status == JobStatus::Failed) {
        text = failure_sentence(f, "", live);
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

#[cfg(test)]
mod tests {
    use harmonia_contracts::Code;
    use harmonia_contracts::domain::JobFailure;
    use harmonia_contracts::event::Stage;

    use super::failure_sentence;

    /// A thread refused part way says which post was refused and that the ones before it stay
    /// live; nothing made is "nothing published".
    #[test]
    fn a_failure_says_what_of_a_thread_stays_live() {
        let at = chrono::Utc::now();
        let throttled = JobFailure::of(Stage::Publish, None, Code::ConnectorThrottled, at);
        assert_eq!(
            failure_sentence(&throttled, "", None),
            "The job failed at publish: The platform is limiting the channel's posts for now; nothing was posted. Nothing was published."
        );
        assert_eq!(
            failure_sentence(&throttled, "", Some((1, 3))),
            "The job failed at publish on post 2 of its thread of 3: The platform is limiting the channel's posts for now; nothing was posted. Its first post stays live; a retry of the job makes the rest, each replying to the one before."
        );
        let duplicate = JobFailure::of(Stage::Publish, None, Code::ConnectorDuplicate, at);
        let said = failure_sentence(&duplicate, "", Some((2, 4)));
        assert!(said.starts_with("The job failed at publish on post 3 of its thread of 4: "), "{said}");
        assert!(said.ends_with("Its first 2 posts stay live; the rest were not posted."), "{said}");
    }
}
