//! The one rule for what earlier work a specialist may lean on: which measured metrics count
//! as *verified performance* and which memory facts are *eligible*. Every reader — the analyze
//! and strategize steps, Nimi's and Ryan's input constructors, Nova's engagement and
//! posting-window tools — goes through this module; nothing trusts a stored flag or the file a
//! record was imported from.
//!
//! - A metric is verified performance when its post is a verified publication of the same
//!   workspace (an applied receipt and a successful read-back verification), the job it names
//!   (if any) is that publication's job, and — in a `production` workspace — it is live.
//! - A memory fact is eligible when it was learnt from verified publications of the same
//!   workspace (its post, or every post whose metric records it was derived from), it is live
//!   (in every mode: memory outlives the demo that produced it), it was recorded at most
//!   [`MAX_MEMORY_AGE_DAYS`] days before now (and not after now), and it has not expired (a
//!   derived fact its latest recomputation no longer supports expires then).
//!
//! "The same workspace" holds by construction: [`VerifiedPosts::read`] reads one workspace's
//! publications, and callers read that workspace's metrics and facts.
//!
//! The results are wrapper types ([`VerifiedPerformance`], [`EligibleMemory`]) that only this
//! module can fill, so an input constructor cannot be handed records that skipped the rule.

use std::collections::BTreeMap;

use chrono::Duration;
use harmonia_contracts::domain::{MemoryFact, PostMetrics, Publication, Timestamp, WorkspaceMode};
use harmonia_contracts::ids::{JobId, PostId, WorkspaceId};
use harmonia_contracts::tool::Provenance;
use harmonia_store::{Collection, Store, decode_each, scan_all};

use crate::research::{MEMORY, PUBLICATIONS};

/// Measured post metrics (imported, or measured after publication).
pub const POST_METRICS: Collection = Collection::new("post_metrics");

/// The oldest a memory fact may be and still reach a specialist, in days.
pub const MAX_MEMORY_AGE_DAYS: i64 = 180;

/// The latest time `fact` may be offered: its own expiry, or [`MAX_MEMORY_AGE_DAYS`] after it
/// was recorded, whichever comes first (the bound [`VerifiedPosts::is_eligible_memory`]
/// applies).
pub fn offered_until(fact: &MemoryFact) -> Timestamp {
    let aged = fact.recorded_at + Duration::days(MAX_MEMORY_AGE_DAYS);
    fact.expires_at.map_or(aged, |at| at.min(aged))
}

/// The verified publications of one workspace: post id → the job that published it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifiedPosts(BTreeMap<PostId, JobId>);

impl VerifiedPosts {
    /// The verified posts among `publications` (one workspace's records).
    pub fn from_publications<'a>(publications: impl IntoIterator<Item = &'a Publication>) -> Self {
        Self(publications.into_iter().filter_map(|p| Some((p.verified_post()?.clone(), p.job.clone()))).collect())
    }

    /// Every verified publication of `workspace`, read page by page.
    pub async fn read(store: &dyn Store, workspace: &WorkspaceId) -> Result<Self, harmonia_store::Error> {
        let docs = scan_all(store, workspace, PUBLICATIONS).await?;
        Ok(Self::from_publications(&decode_each::<Publication>(PUBLICATIONS, &docs)))
    }

    /// Whether `post` is one of them.
    pub fn contains(&self, post: &PostId) -> bool {
        self.0.contains_key(post)
    }

    /// Whether `metric` counts as verified performance in a workspace of `mode`.
    pub fn is_verified_performance(&self, metric: &PostMetrics, mode: WorkspaceMode) -> bool {
        let Some(job) = self.0.get(&metric.post) else { return false };
        let same_job = metric.job.as_ref().is_none_or(|j| j == job);
        let provenance_ok = mode == WorkspaceMode::Development || metric.provenance == Provenance::Live;
        same_job && provenance_ok
    }

    /// Whether `fact` may reach a specialist at `now`: learnt from a verified post (`post`), or
    /// derived from metric records whose posts are all verified (`posts`); live; recorded at
    /// most [`MAX_MEMORY_AGE_DAYS`] days ago; and not past its own expiry.
    pub fn is_eligible_memory(&self, fact: &MemoryFact, now: Timestamp) -> bool {
        let verified = match &fact.post {
            Some(p) => self.contains(p) && fact.posts.iter().all(|p| self.contains(p)),
            None => !fact.posts.is_empty() && fact.posts.iter().all(|p| self.contains(p)),
        };
        let age = now - fact.recorded_at;
        let recent = age >= Duration::zero() && age <= Duration::days(MAX_MEMORY_AGE_DAYS);
        let current = fact.expires_at.is_none_or(|at| now < at);
        verified && fact.provenance == Provenance::Live && recent && current
    }

    /// The metrics among `metrics` that count as verified performance, in their order.
    pub fn verified_performance(
        &self,
        metrics: impl IntoIterator<Item = PostMetrics>,
        mode: WorkspaceMode,
    ) -> VerifiedPerformance {
        VerifiedPerformance(metrics.into_iter().filter(|m| self.is_verified_performance(m, mode)).collect())
    }

    /// The newest `limit` eligible facts among `facts`, newest first (ties in id order).
    pub fn eligible_memory(
        &self,
        facts: impl IntoIterator<Item = MemoryFact>,
        now: Timestamp,
        limit: usize,
    ) -> EligibleMemory {
        let mut eligible: Vec<MemoryFact> = facts.into_iter().filter(|f| self.is_eligible_memory(f, now)).collect();
        eligible.sort_by(|a, b| b.recorded_at.cmp(&a.recorded_at).then_with(|| a.id.as_str().cmp(b.id.as_str())));
        eligible.truncate(limit);
        EligibleMemory(eligible)
    }
}

/// Metrics that passed the verified-performance rule.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifiedPerformance(Vec<PostMetrics>);

impl VerifiedPerformance {
    /// None at all (a job with no history, a test).
    pub fn none() -> Self {
        Self::default()
    }

    /// The metrics.
    pub fn as_slice(&self) -> &[PostMetrics] {
        &self.0
    }

    /// The metrics, by value.
    pub fn into_vec(self) -> Vec<PostMetrics> {
        self.0
    }

    /// Each post once, as last measured (its latest snapshot or imported row), in post order.
    pub fn latest_per_post(&self) -> Vec<&PostMetrics> {
        let mut latest: BTreeMap<&PostId, &PostMetrics> = BTreeMap::new();
        for m in &self.0 {
            let newer = latest.get(&m.post).is_none_or(|held| m.measured_at > held.measured_at);
            if newer {
                latest.insert(&m.post, m);
            }
        }
        latest.into_values().collect()
    }
}

/// Memory facts that passed the eligibility rule, newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EligibleMemory(Vec<MemoryFact>);

impl EligibleMemory {
    /// None at all.
    pub fn none() -> Self {
        Self::default()
    }

    /// The facts.
    pub fn as_slice(&self) -> &[MemoryFact] {
        &self.0
    }

    /// The facts, by value.
    pub fn into_vec(self) -> Vec<MemoryFact> {
        self.0
    }
}

/// What Nimi and Ryan may use beyond the job, for `workspace` in `mode` at `now`: all of its
/// verified performance (a page limit must not silently drop some) and its newest
/// `memory_limit` eligible memory facts. The publications that decide both are read only when
/// there is a metric or a fact to decide on.
pub async fn context(
    store: &dyn Store,
    workspace: &WorkspaceId,
    mode: WorkspaceMode,
    now: Timestamp,
    memory_limit: usize,
) -> Result<(VerifiedPerformance, EligibleMemory), harmonia_store::Error> {
    let metrics: Vec<PostMetrics> = decode_each(POST_METRICS, &scan_all(store, workspace, POST_METRICS).await?);
    let facts: Vec<MemoryFact> = decode_each(MEMORY, &scan_all(store, workspace, MEMORY).await?);
    if metrics.is_empty() && facts.is_empty() {
        return Ok((VerifiedPerformance::none(), EligibleMemory::none()));
    }
    let verified = VerifiedPosts::read(store, workspace).await?;
    Ok((verified.verified_performance(metrics, mode), verified.eligible_memory(facts, now, memory_limit)))
}
