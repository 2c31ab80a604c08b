//! `get_engagement_insights`: this workspace's verified performance and per-platform takeaways.
//! Only metrics that pass the one rule (`harmonia_agents::eligibility`) are read: a metric for
//! an unknown or unverified post, or a mock one in a production workspace, is never an insight.
//! Each post counts once, as last measured: its latest engagement snapshot read from the
//! platform, or its imported row. Every listed post is cited by its metric record
//! (`metric-…`).

use harmonia_agents::eligibility::VerifiedPosts;
use harmonia_contracts::domain::{PostMetrics, Publication};
use harmonia_contracts::tool::Provenance;
use harmonia_pipeline::planning::median;
use harmonia_pipeline::records::{POST_METRICS, PUBLICATIONS};
use serde_json::{Value, json};
use std::collections::BTreeMap;

use super::outcome::{Fail, Found, dataset, record};
use super::read::Reads;
use super::{NoArgs, NovaTool};

/// How many posts the answer lists (and cites individually).
const LISTED: usize = 10;

/// Verified posts of this workspace, newest first, and takeaways per platform.
#[derive(Clone, Copy, Debug, Default)]
pub struct GetEngagementInsights;

impl NovaTool for GetEngagementInsights {
    type Args = NoArgs;

    async fn run(&self, reads: Reads<'_>, _: NoArgs) -> Result<Found, Fail> {
        let mut posts = metrics(reads).await?;
        posts.sort_by(|a, b| b.published_at.cmp(&a.published_at).then_with(|| a.post.cmp(&b.post)));
        let listed = &posts[..posts.len().min(LISTED)];
        let mut evidence =
            listed.iter().map(|m| record(m.evidence_id().as_str(), m.provenance)).collect::<Result<Vec<_>, _>>()?;
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

/// The caller's workspace's verified performance, each post once as last measured, once the
/// caller may read it.
pub(super) async fn metrics(reads: Reads<'_>) -> Result<Vec<PostMetrics>, Fail> {
    let mode = reads.config().await?.mode;
    let publications: Vec<Publication> = reads.every(PUBLICATIONS).await?;
    let verified = VerifiedPosts::from_publications(&publications);
    let measured: Vec<PostMetrics> = reads.every(POST_METRICS).await?;
    let performance = verified.verified_performance(measured, mode);
    Ok(performance.latest_per_post().into_iter().cloned().collect())
}

/// Four decimals: enough to compare, short enough to quote.
pub(super) fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

pub(super) fn any_mock(posts: &[PostMetrics]) -> bool {
    posts.iter().any(|m| m.provenance == Provenance::Mock)
}

/// `n` and the noun, in the singular for one.
fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// What a post drew, in a sentence: its counts, and when and where they were read.
fn summary(m: &PostMetrics) -> String {
    let mut counts = vec![
        counted(m.reactions, "like", "likes"),
        counted(m.shares, "repost", "reposts"),
        counted(m.comments, "reply", "replies"),
    ];
    counts.extend(m.quotes.map(|q| counted(q, "quote", "quotes")));
    counts.extend(m.clicks.map(|c| counted(c, "link click", "link clicks")));
    let last = counts.pop().unwrap_or_default();
    let drew = if counts.is_empty() { last } else { format!("{} and {last}", counts.join(", ")) };
    let when = match m.offset {
        Some(offset) => format!("{offset} after it was verified, as the platform reported"),
        None => format!("as imported from {}", m.source),
    };
    format!(
        "The {} post published {} drew {drew} ({when}).",
        m.platform.display_name(),
        m.published_at.format("%-d %B %Y")
    )
}

fn item(m: &PostMetrics) -> Value {
    json!({"evidence_id": m.evidence_id(), "summary": summary(m), "platform": m.platform,
           "published_at": m.published_at, "measured_at": m.measured_at, "offset": m.offset,
           "likes": m.reactions, "reposts": m.shares, "replies": m.comments, "quotes": m.quotes,
           "impressions": m.impressions, "interactions": m.interactions(),
           "engagement_rate": m.engagement_rate().map(round), "provenance": m.provenance})
}

/// Per platform: how many posts, their median interactions and, where impressions are known,
/// their mean engagement rate.
fn takeaways(posts: &[PostMetrics]) -> Vec<Value> {
    let mut by_platform: BTreeMap<&str, Vec<&PostMetrics>> = BTreeMap::new();
    for m in posts {
        by_platform.entry(m.platform.as_str()).or_default().push(m);
    }
    by_platform
        .iter()
        .map(|(platform, measured)| {
            let mut interactions: Vec<f64> = measured.iter().map(|m| m.interactions() as f64).collect();
            let rates: Vec<f64> = measured.iter().filter_map(|m| m.engagement_rate()).collect();
            let mean_rate = (!rates.is_empty()).then(|| round(rates.iter().sum::<f64>() / rates.len() as f64));
            json!({"platform": platform, "posts": measured.len(),
                   "median_interactions": median(&mut interactions).map(round),
                   "mean_engagement_rate": mean_rate})
        })
        .collect()
}
