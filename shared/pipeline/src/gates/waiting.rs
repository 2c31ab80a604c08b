//! What a gate waits for: the job as the operator sees it, the version a decision must name
//! now, and the checks every decision, round and schedule change shares. Nothing here decides.

use harmonia_contracts::domain::{ApprovalSubject, Draft, Job, JobStatus};
use harmonia_contracts::event::{Pass, Stage};
use harmonia_contracts::ids::{JobId, WorkspaceId};
use harmonia_contracts::trace::TraceParent;
use harmonia_contracts::{Code, Error};
use harmonia_store::{Direction, Query, decode_each};

use crate::Env;
use crate::records::{DRAFTS, JOBS, STRATEGIES, StrategyRecord, doc_id};
use crate::steps::current_draft_id;

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

/// The fewest hexadecimal characters of a content hash that name a version.
pub const MIN_VERSION_PREFIX: usize = 8;

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
pub(super) fn names_version(current: &str, given: &str) -> Result<bool, Error> {
    let given = given.trim();
    if given.len() < MIN_VERSION_PREFIX || given.len() > 64 || !given.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::new(
            Code::InvalidRequest,
            "A version is 8 to 64 hexadecimal characters: the start of the content hash or all of it.",
        ));
    }
    Ok(current.len() >= given.len() && current[..given.len()].eq_ignore_ascii_case(given))
}

/// The decision a job in `status` waits for, if any (the inverse of `waiting_status`).
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
}
