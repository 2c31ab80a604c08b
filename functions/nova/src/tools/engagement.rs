//! `get_engagement_insights`: this workspace's verified performance and per-platform takeaways.
//! Only metrics that pass the one rule (`harmonia_agents::eligibility`) are read: a metric for
//! an unknown or unverified post, or a mock one in a production workspace, is never an insight.

use harmonia_agents::eligibility::VerifiedPosts;
use harmonia_contracts::domain::{PostMetrics, Publication};
use harmonia_contracts::tool::Provenance;
use harmonia_pipeline::records::{POST_METRICS, PUBLICATIONS};
use serde_json::{Value, json};
use std::collections::BTreeMap;

use super::outcome::{Fail, Found, dataset, record};
use super::read::Reads;
use super::{NoArgs, NovaTool};

/// How many posts the answer lists (and cites individually).
const LISTED: usize = 10;

/// Verified posts of this workspace, most engaging first, and takeaways per platform.
#[derive(Clone, Copy, Debug, Default)]
pub struct GetEngagementInsights;

impl NovaTool for GetEngagementInsights {
    type Args = NoArgs;

    async fn run(&self, reads: Reads<'_>, _: NoArgs) -> Result<Found, Fail> {
        let mut posts = metrics(reads).await?;
        posts.sort_by(|a, b| rate(b).total_cmp(&rate(a)));
        let listed = &posts[..posts.len().min(LISTED)];
        let mut evidence =
            listed.iter().map(|m| record(&evidence_id(m), m.provenance)).collect::<Result<Vec<_>, _>>()?;
        if !posts.is_empty() {
            evidence.push(dataset("dataset-engagement", any_mock(&posts))?);
        }
        let items: Vec<Value> = listed.iter().map(item).collect();
        Ok(Found::new([
            ("posts", Value::Array(items)),
            ("count", json!(posts.len())),
            ("takeaways", Value::Array(takeaways(&posts))),
        ])
        .cite(evidence))
    }
}

/// The caller's workspace's verified performance, once the caller may read it.
pub(super) async fn metrics(reads: Reads<'_>) -> Result<Vec<PostMetrics>, Fail> {
    let mode = reads.config().await?.mode;
    let publications: Vec<Publication> = reads.every(PUBLICATIONS).await?;
    let verified = VerifiedPosts::from_publications(&publications);
    let measured: Vec<PostMetrics> = reads.every(POST_METRICS).await?;
    Ok(verified.verified_performance(measured, mode).into_vec())
}

/// Interactions per impression (0 for a post nobody saw).
pub(super) fn rate(m: &PostMetrics) -> f64 {
    if m.impressions == 0 {
        0.0
    } else {
        (m.reactions + m.comments + m.shares + m.clicks) as f64 / m.impressions as f64
    }
}

/// Four decimals: enough to compare, short enough to quote.
pub(super) fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

pub(super) fn any_mock(posts: &[PostMetrics]) -> bool {
    posts.iter().any(|m| m.provenance == Provenance::Mock)
}

fn evidence_id(m: &PostMetrics) -> String {
    format!("metric-{}", m.post)
}

fn item(m: &PostMetrics) -> Value {
    json!({"evidence_id": evidence_id(m), "platform": m.platform, "published_at": m.published_at,
           "impressions": m.impressions, "engagement_rate": round(rate(m)), "provenance": m.provenance})
}

/// Mean engagement rate and post count per platform.
fn takeaways(posts: &[PostMetrics]) -> Vec<Value> {
    let mut by_platform: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for m in posts {
        by_platform.entry(m.platform.as_str()).or_default().push(rate(m));
    }
    by_platform
        .iter()
        .map(|(platform, rates)| {
            let mean = rates.iter().sum::<f64>() / rates.len() as f64;
            json!({"platform": platform, "posts": rates.len(), "mean_engagement_rate": round(mean)})
        })
        .collect()
}
