//! An operator's retry of the step that failed a job (`harmonia retry JOB`,
//! `POST /v1/jobs/{job}/retry`).
//!
//! A job failed by a model or contract error (a specialist's answer still wrong after its
//! corrective turns, a provider that refused) is not lost: the retry puts the job back at the
//! status it had when the step began, removes the step's failure marker, and re-publishes the
//! event that step consumes (it is the `next` of the step before it, or of the operator's
//! decision, so [`crate::gates::resume_job`] finds it). The step then runs as any delivery
//! does: a new invocation, with its own activity record, the same repair bound and limits, and
//! the same idempotency (a duplicate delivery finds the claim or the new marker). The retry is
//! recorded ([`Retry`]): who asked, when, and the failure it cleared. A failure of input
//! (`source_*`), policy or an unknown cause is not retried: running the same step again on the
//! same input cannot change it.

use chrono::Utc;
use harmonia_contracts::domain::{Job, JobFailure, JobStatus, Timestamp};
use harmonia_contracts::ids::{DocId, JobId, OperatorId, WorkspaceId};
use harmonia_contracts::{Category, Code, Error};
use harmonia_store::{MAX_QUERY_LIMIT, Query, Tx, decode_each, encode, run_transaction, scan};
use serde::{Deserialize, Serialize};

use crate::Env;
use crate::records::{JOBS, MARKERS, RETRIES, doc_id, marker_id};

/// One retry of a failed step: the failure it cleared, who asked and when.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Retry {
    /// The job.
    pub job: JobId,
    /// The failure the retry cleared (its stage, role, code and where the step stood).
    pub failure: JobFailure,
    /// The operator who asked.
    pub by: OperatorId,
    /// When.
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub at: Timestamp,
}

/// The id of the retry of `job`'s failure at `failed_at` (one retry clears one failure).
fn retry_id(job: &JobId, failed_at: Timestamp) -> DocId {
    doc_id(format!("{job}.retry.{}", failed_at.timestamp_micros()))
}

/// Whether a failure with `code` may be retried: a model's error or a broken contract, which
/// another invocation can get right, or a platform's refusal that passes (credentials the
/// operator has since fixed, a rate limit past its reset, an outage), which posted nothing;
/// never bad input, policy, or a post the platform refused for its content.
pub fn retryable(code: Code) -> bool {
    let passes = matches!(code, Code::ConnectorAuth | Code::ConnectorThrottled | Code::ConnectorFailed);
    code.category() == Category::Contract || code.is_model() || passes
}

/// Why `job` cannot be retried, as an operator-facing error; `None` when it can.
fn refusal(job: &Job) -> Option<Error> {
    let refuse = |message: String| Some(Error::new(Code::InvalidTransition, message));
    let Some(failure) = job.failure.as_ref().filter(|_| job.status == JobStatus::Failed) else {
        return refuse(match &job.stalled {
            Some(stall) => format!(
                "The job has not failed: its {} step waits for the model ({}) and runs again on its own with the next command.",
                stall.stage, stall.code
            ),
            None => format!("Only a failed job can be retried; this one is {}.", job.status),
        });
    };
    if !retryable(failure.code) {
        return refuse(format!(
            "The job failed at {} with {}, which running the step again cannot change; only a model or contract error, or a platform refusal that passes, is retried.",
            failure.stage, failure.code
        ));
    }
    if failure.step.is_none() {
        return refuse(format!(
            "The job failed at {} before failed steps were recorded for retrying; run its source again instead.",
            failure.stage
        ));
    }
    None
}

/// Retry the step that failed `job`, as `by`: put the job back where the step began and
/// re-publish its input event. `invalid_transition` (with the reason) when the job is not
/// failed, failed for a reason a retry cannot change, or has no step recorded.
pub async fn retry(env: &Env, workspace: &WorkspaceId, job: &JobId, by: OperatorId) -> Result<(Job, Retry), Error> {
    let current = crate::gates::job(env, workspace, job).await?;
    if let Some(refused) = refusal(&current) {
        return Err(refused);
    }
    let store = &*env.store;
    let by = &by;
    let (resumed, record) = run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
        let mut tx = Tx::begin(store, workspace);
        let doc = tx.get(JOBS, &doc_id(job)).await?.ok_or(harmonia_store::Error::NotFound)?;
        let mut resumed: Job = doc.decode()?;
        // Checked again inside the transaction: a concurrent retry finds the job moved on.
        if refusal(&resumed).is_some() {
            return Err(harmonia_store::Error::Aborted(Code::InvalidTransition));
        }
        let failure = resumed.failure.take().ok_or(harmonia_store::Error::Aborted(Code::InvalidTransition))?;
        let step = failure.step.ok_or(harmonia_store::Error::Aborted(Code::InvalidTransition))?;
        let now = Utc::now();
        resumed.status = step.status;
        resumed.updated_at = now;
        resumed.stalled = None;
        tx.put(JOBS, &doc_id(job), encode(&resumed)?);
        // The failure's marker made redeliveries ack; without it the step runs again.
        let marker = marker_id(job, failure.stage, step.round, step.pass);
        tx.get(MARKERS, &marker).await?;
        tx.delete(MARKERS, &marker);
        let record = Retry { job: job.clone(), failure, by: by.clone(), at: now };
        tx.put(RETRIES, &retry_id(job, record.failure.at), encode(&record)?);
        tx.commit().await?;
        Ok((resumed, record))
    })
    .await
    .map_err(|e| match e.code() {
        Code::InvalidTransition => Error::new(Code::InvalidTransition, "The job changed while it was being retried."),
        _ => Error::from(e),
    })?;
    tracing::info!(
        workspace = %workspace, job = %job, stage = %record.failure.stage, code = %record.failure.code,
        operator = %record.by, "a failed step is retried"
    );
    // What the step consumes is published again. Should that fail, the job is back in a
    // status that `resume` (run by every command) re-publishes from.
    crate::gates::resume_job(env, workspace, &resumed).await?;
    Ok((resumed, record))
}

/// Every retry of `job`, oldest first.
pub async fn of_job(env: &Env, workspace: &WorkspaceId, job: &JobId) -> Result<Vec<Retry>, Error> {
    let query = Query::all(MAX_QUERY_LIMIT).filter("job", job.to_string()).map_err(Error::from)?;
    let docs = scan(&*env.store, workspace, RETRIES, query).await.map_err(Error::from)?;
    let mut retries: Vec<Retry> = decode_each(RETRIES, &docs);
    retries.sort_by_key(|r| r.at);
    Ok(retries)
}

#[cfg(test)]
mod tests {
    use harmonia_contracts::domain::FailedStep;
    use harmonia_contracts::event::{Pass, Round, Stage};

    use super::*;

    fn job(status: JobStatus, failure: Option<JobFailure>) -> Job {
        serde_json::from_value::<Job>(serde_json::json!({
            "id": "job-1", "workspace": "ws-1", "source": "src-1", "workspace_version": 1, "title": "t",
            "status": status, "pass": 1, "created_at": "2026-12-06T10:00:00Z", "updated_at": "2026-12-06T10:00:00Z"
        }))
        .map(|j| Job { failure, ..j })
        .expect("job")
    }

    fn failed(code: Code, step: bool) -> Job {
        let at = Utc::now();
        let step =
            step.then_some(FailedStep { status: JobStatus::Ingested, round: Round::ORIGINAL, pass: Pass::FIRST });
        job(JobStatus::Failed, Some(JobFailure { step, ..JobFailure::of(Stage::Analyze, None, code, at) }))
    }

    #[test]
    fn only_a_model_or_contract_failure_with_its_step_recorded_is_retried() {
        for code in [Code::SchemaViolation, Code::RoutingMismatch, Code::EvidenceUnknown, Code::ModelRefused] {
            assert!(refusal(&failed(code, true)).is_none(), "{code:?}");
        }
        for (job, why) in [
            (failed(Code::SourceMalformed, true), "running the step again cannot change"),
            (failed(Code::PolicyViolation, true), "running the step again cannot change"),
            (failed(Code::SchemaViolation, false), "before failed steps were recorded"),
            (job(JobStatus::AwaitingStrategyApproval, None), "this one is awaiting_strategy_approval"),
        ] {
            let refused = refusal(&job).expect("refused");
            assert_eq!(refused.code, Code::InvalidTransition);
            assert!(refused.message.contains(why), "{}", refused.message);
        }
        let mut stalled = job(JobStatus::Ingested, None);
        stalled.stalled = Some(JobFailure::of(Stage::Analyze, None, Code::ModelThrottled, Utc::now()));
        let refused = refusal(&stalled).expect("a stall is not a failure");
        assert!(refused.message.contains("runs again on its own"), "{}", refused.message);
    }
}
