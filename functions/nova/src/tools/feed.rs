//! `get_operator_feed`: what waits for the operator, job health, goals and recent posts.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use harmonia_contracts::domain::{Job, JobStatus, Publication};
use harmonia_contracts::ids::WorkspaceId;
use harmonia_contracts::tool::{Evidence, Provenance};
use harmonia_pipeline::records::{JOBS, PUBLICATIONS};
use harmonia_store::Store;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::outcome::{Fail, Found, dataset, record};
use super::read::{every, read, workspace};
use super::{NovaTool, WORKSPACE_TIMEOUT};

/// Pending items, job health, goals and recent posts of this workspace.
#[derive(Clone, Copy, Debug, Default)]
pub struct GetOperatorFeed;

/// `get_operator_feed` takes no arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FeedArgs {}

#[async_trait]
impl NovaTool for GetOperatorFeed {
    const NAME: &'static str = "get_operator_feed";
    const DESCRIPTION: &'static str = "Pending items, job health, goals and recent posts of this workspace.";
    const DEADLINE: Duration = WORKSPACE_TIMEOUT;
    type Args = FeedArgs;

    async fn run(&self, store: &dyn Store, ws: &WorkspaceId, _: FeedArgs) -> Result<Found, Fail> {
        let w = read(Self::DEADLINE, || workspace(store, ws)).await?;
        let jobs: Vec<Job> = read(Self::DEADLINE, || every(store, ws, JOBS)).await?;
        let publications: Vec<Publication> = read(Self::DEADLINE, || every(store, ws, PUBLICATIONS)).await?;
        let (pending, mut evidence) = pending(&jobs)?;
        if !jobs.is_empty() {
            evidence.push(dataset("dataset-jobs", false)?);
        }
        let (recent, posted) = recent_posts(&publications)?;
        evidence.extend(posted);
        Ok(Found::new([
            ("pending", Value::Array(pending)),
            ("job_health", json!(health(&jobs))),
            ("goals", json!(w.goals)),
            ("recent_posts", Value::Array(recent)),
            ("count", json!(jobs.len())),
        ])
        .cite(evidence))
    }
}

/// Jobs waiting for an approval, each citable.
fn pending(jobs: &[Job]) -> Result<(Vec<Value>, Vec<Evidence>), Fail> {
    let waiting = jobs
        .iter()
        .filter(|j| matches!(j.status, JobStatus::AwaitingStrategyApproval | JobStatus::AwaitingDraftApproval));
    let mut items = Vec::new();
    let mut evidence = Vec::new();
    for j in waiting {
        let id = format!("job-{}", j.id);
        evidence.push(record(&id, Provenance::Live)?);
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
        evidence.push(record(&id, Provenance::Live)?);
        items.push(json!({"evidence_id": id, "post": post, "platform": p.platform, "job": p.job}));
    }
    Ok((items, evidence))
}
