//! `get_operator_feed`: what waits for the operator, job health, goals and recent posts.

use harmonia_contracts::domain::{Job, JobStatus, Publication};
use harmonia_contracts::tool::Evidence;
use harmonia_pipeline::records::{JOBS, PUBLICATIONS};
use serde_json::{Value, json};
use std::collections::BTreeMap;

use super::job_status::job_provenance;
use super::outcome::{Fail, Found, dataset, record};
use super::read::Reads;
use super::{NoArgs, NovaTool};

/// Pending items, job health, goals and recent posts of this workspace.
#[derive(Clone, Copy, Debug, Default)]
pub struct GetOperatorFeed;

impl NovaTool for GetOperatorFeed {
    type Args = NoArgs;

    async fn run(&self, reads: Reads<'_>, _: NoArgs) -> Result<Found, Fail> {
        let config = reads.config().await?;
        let jobs: Vec<Job> = reads.every(JOBS).await?;
        let publications: Vec<Publication> = reads.every(PUBLICATIONS).await?;
        let (pending, mut evidence) = pending(&jobs, &publications)?;
        if !jobs.is_empty() {
            evidence.push(dataset("dataset-jobs", false)?);
        }
        let (recent, posted) = recent_posts(&publications)?;
        evidence.extend(posted);
        Ok(Found::new([
            ("pending", Value::Array(pending)),
            ("job_health", json!(health(&jobs))),
            ("goals", json!(config.goals)),
            ("recent_posts", Value::Array(recent)),
            ("count", json!(jobs.len())),
        ])
        .cite(evidence))
    }
}

/// Jobs waiting for an approval, each citable (with the provenance of its publications).
fn pending(jobs: &[Job], publications: &[Publication]) -> Result<(Vec<Value>, Vec<Evidence>), Fail> {
    let waiting = jobs
        .iter()
        .filter(|j| matches!(j.status, JobStatus::AwaitingStrategyApproval | JobStatus::AwaitingDraftApproval));
    let mut items = Vec::new();
    let mut evidence = Vec::new();
    for j in waiting {
        let id = format!("job-{}", j.id);
        let provenance = job_provenance(publications.iter().filter(|p| p.job == j.id));
        evidence.push(record(&id, provenance)?);
        items.push(json!({"evidence_id": id, "job": j.id, "status": j.status, "waiting_since": j.updated_at}));
    }
    Ok((items, evidence))
}

/// How many jobs are in each status.
fn health(jobs: &[Job]) -> BTreeMap<&'static str, usize> {
    let mut health = BTreeMap::new();
    for j in jobs {
        *health.entry(j.status.as_str()).or_default() += 1;
    }
    health
}

/// Verified posts, each citable.
fn recent_posts(publications: &[Publication]) -> Result<(Vec<Value>, Vec<Evidence>), Fail> {
    let mut items = Vec::new();
    let mut evidence = Vec::new();
    for (p, post) in publications.iter().filter_map(|p| p.verified_post().map(|post| (p, post))) {
        let id = format!("pub-{post}");
        evidence.push(record(&id, p.provenance())?);
        items.push(json!({"evidence_id": id, "post": post, "platform": p.platform, "job": p.job}));
    }
    Ok((items, evidence))
}
