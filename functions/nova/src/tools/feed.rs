//! `get_operator_feed`: what waits for the operator (each job named by its title, with what it
//! waits for and since when, the longest waiting first), job health, goals and the latest
//! verified posts (newest first, with when and where).

use harmonia_contracts::domain::{Job, JobStatus, Publication, ReceiptOutcome};
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
        let (recent, posted) = recent_posts(&jobs, &publications)?;
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

/// How many of the latest verified posts the feed lists.
const RECENT_POSTS: usize = 10;

/// What a job waiting for a person waits for, in words.
fn awaits(status: JobStatus) -> Option<&'static str> {
    match status {
        JobStatus::AwaitingStrategyApproval => Some("your decision on the strategy"),
        JobStatus::AwaitingDraftApproval => Some("your decision on the draft"),
        JobStatus::NeedsHuman => Some("a person: it stopped after its rounds of changes"),
        _ => None,
    }
}

/// A time as the feed's sentences write it: `2026-12-07 15:04 UTC`.
fn minute(at: harmonia_contracts::domain::Timestamp) -> String {
    at.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// Jobs waiting for a person (at a gate, or parked for one), the longest waiting first, each
/// citable (with the provenance of its publications) and named by its title.
fn pending(jobs: &[Job], publications: &[Publication]) -> Result<(Vec<Value>, Vec<Evidence>), Fail> {
    let mut waiting: Vec<(&Job, &str)> = jobs.iter().filter_map(|j| Some((j, awaits(j.status)?))).collect();
    waiting.sort_by_key(|(j, _)| j.updated_at);
    let mut items = Vec::new();
    let mut evidence = Vec::new();
    for (j, what) in waiting {
        let id = format!("job-{}", j.id);
        let provenance = job_provenance(publications.iter().filter(|p| p.job == j.id));
        evidence.push(record(&id, provenance)?);
        let summary = format!("“{}” waits for {what}, since {}", j.title, minute(j.updated_at));
        items.push(json!({"evidence_id": id, "job": j.id, "title": j.title, "status": j.status,
                          "waiting_since": j.updated_at, "summary": summary}));
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

/// The latest verified posts, newest first, each citable and named by its job's title, with
/// the time it was verified and its address on the platform when the platform gave one.
fn recent_posts(jobs: &[Job], publications: &[Publication]) -> Result<(Vec<Value>, Vec<Evidence>), Fail> {
    let mut verified: Vec<_> = publications
        .iter()
        .filter_map(|p| Some((p, p.verified_post()?, p.verification.as_ref()?.checked_at)))
        .collect();
    verified.sort_by_key(|(_, _, at)| std::cmp::Reverse(*at));
    let mut items = Vec::new();
    let mut evidence = Vec::new();
    for (p, post, at) in verified.into_iter().take(RECENT_POSTS) {
        let id = format!("pub-{post}");
        evidence.push(record(&id, p.provenance())?);
        let title = jobs.iter().find(|j| j.id == p.job).map_or("an untitled job", |j| j.title.as_str());
        let url = match p.receipt.as_ref().map(|r| &r.outcome) {
            Some(ReceiptOutcome::Applied { url: Some(url), .. }) => Some(url.clone()),
            _ => None,
        };
        let summary =
            format!("“{title}” went out on {} and was verified live at {}", p.platform.display_name(), minute(at));
        items.push(json!({"evidence_id": id, "post": post, "platform": p.platform, "job": p.job, "title": title,
                          "verified_at": at, "url": url, "summary": summary}));
    }
    Ok((items, evidence))
}
