//! `get_job_status`: a redacted status summary of one job of this workspace.

use harmonia_contracts::Code;
use harmonia_contracts::domain::{Job, Publication};
use harmonia_contracts::ids::JobId;
use harmonia_contracts::tool::Provenance;
use harmonia_pipeline::records::{JOBS, PUBLICATIONS, doc_id};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::NovaTool;
use super::outcome::{Fail, Found, record};
use super::read::Reads;

/// A redacted status summary of one job of this workspace.
#[derive(Clone, Copy, Debug, Default)]
pub struct GetJobStatus;

/// Arguments of `get_job_status`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobStatusArgs {
    /// The id of one job of this workspace.
    // Text here, parsed by the tool, so that a malformed id is the contract's `invalid_id`.
    #[schemars(with = "JobId")]
    pub job_id: String,
}

impl NovaTool for GetJobStatus {
    type Args = JobStatusArgs;

    async fn run(&self, reads: Reads<'_>, args: JobStatusArgs) -> Result<Found, Fail> {
        let id: JobId = args.job_id.parse().map_err(|_| Fail::code(Code::InvalidId, "The job id is malformed."))?;
        reads.workspace().await?;
        // Read in the caller's workspace only: another workspace's job is indistinguishable
        // from a missing one, so nothing leaks about its existence.
        let job: Job = reads
            .get(JOBS, &doc_id(&id))
            .await?
            .ok_or_else(|| Fail::code(Code::NotFound, "No job with that id exists in this workspace."))?;
        let evidence_id = format!("job-{}", job.id);
        let publications: Vec<Publication> = reads.of_job(PUBLICATIONS, &job.id).await?;
        let evidence = record(&evidence_id, job_provenance(&publications))?;
        Ok(Found::new([("job", summary(&job, &evidence_id)), ("count", json!(1))]).cite([evidence]))
    }
}

/// A job's provenance as evidence: live only when one of its publications went to a real
/// platform and was verified there ([`Publication::provenance`]); mock otherwise.
pub(crate) fn job_provenance<'a>(publications: impl IntoIterator<Item = &'a Publication>) -> Provenance {
    match publications.into_iter().any(|p| p.provenance() == Provenance::Live) {
        true => Provenance::Live,
        false => Provenance::Mock,
    }
}

/// Status, pass, times and the failure's stage and code; nothing of the content.
fn summary(job: &Job, evidence_id: &str) -> Value {
    json!({
        "evidence_id": evidence_id, "job": job.id, "status": job.status, "pass": job.pass,
        "created_at": job.created_at, "updated_at": job.updated_at,
        "failure": job.failure.as_ref().map(|f| json!({"stage": f.stage, "code": f.code, "retryable": f.retryable})),
    })
}
