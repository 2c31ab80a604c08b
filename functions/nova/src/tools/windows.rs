//! `suggest_posting_windows`: UTC windows learnt from this workspace's measured posts.

use chrono::{Datelike, Timelike};
use harmonia_contracts::Code;
use harmonia_contracts::domain::PostMetrics;
use serde_json::{Value, json};
use std::collections::BTreeMap;

use super::engagement::{any_mock, metrics, round};
use super::outcome::{Fail, Found, dataset};
use super::read::Reads;
use super::{MIN_HISTORY, NoArgs, NovaTool};

/// How many windows the answer suggests.
const SUGGESTED: usize = 3;

/// UTC posting windows computed from measured history, with the basis.
#[derive(Clone, Copy, Debug, Default)]
pub struct SuggestPostingWindows;

/// One (platform, UTC weekday, UTC hour) slot with its measured posts.
struct Slot {
    platform: String,
    weekday: u32,
    hour: u32,
    posts: usize,
    mean_interactions: f64,
}

impl NovaTool for SuggestPostingWindows {
    type Args = NoArgs;

    async fn run(&self, reads: Reads<'_>, _: NoArgs) -> Result<Found, Fail> {
        let posts = metrics(reads).await?;
        if posts.len() < MIN_HISTORY {
            return Err(Fail::code(
                Code::InsufficientHistory,
                "There are fewer than 5 measured posts to learn posting windows from.",
            ));
        }
        let windows: Vec<Value> = ranked(&posts).iter().take(SUGGESTED).map(window).collect();
        let basis = json!({"measured_posts": posts.len(), "method": "mean interactions per post (each post as last measured) by platform, UTC weekday and hour"});
        Ok(Found::new([("count", json!(windows.len())), ("windows", Value::Array(windows)), ("basis", basis)])
            .cite([dataset("dataset-engagement", any_mock(&posts))?]))
    }
}

/// Slots by mean interactions per post, then by how many posts back them.
fn ranked(posts: &[PostMetrics]) -> Vec<Slot> {
    let mut slots: BTreeMap<(String, u32, u32), Vec<f64>> = BTreeMap::new();
    for m in posts {
        let t = m.published_at;
        let key = (m.platform.as_str().to_owned(), t.weekday().num_days_from_monday(), t.hour());
        slots.entry(key).or_default().push(m.interactions() as f64);
    }
    let mut ranked: Vec<Slot> = slots
        .into_iter()
        .map(|((platform, weekday, hour), counts)| Slot {
            platform,
            weekday,
            hour,
            posts: counts.len(),
            mean_interactions: counts.iter().sum::<f64>() / counts.len() as f64,
        })
        .collect();
    ranked.sort_by(|a, b| b.mean_interactions.total_cmp(&a.mean_interactions).then(b.posts.cmp(&a.posts)));
    ranked
}

fn window(s: &Slot) -> Value {
    json!({"platform": s.platform, "weekday": s.weekday, "window": format!("{:02}:00-{:02}:00 UTC", s.hour, (s.hour + 1) % 24),
           "basis": {"measured_posts": s.posts, "mean_interactions": round(s.mean_interactions)}})
}
