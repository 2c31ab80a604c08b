//! Remembered facts, derived by deterministic code from the workspace's verified performance
//! (each post once, as last measured, published in the last [`WINDOW_DAYS`] days), and kept in
//! `memory_facts` beside any other memory. Each fact is a statement with its numbers, how many
//! posts it summarises and the metric records (`metric-…`) it rests on:
//!
//! - per platform, the median interactions a post drew (`fact-{platform}-median`);
//! - per platform, for each trait a post can have — it quotes a figure, it carries a link, it
//!   asks a question — how the median of the posts with it compares with the median of those
//!   without, when each side has at least [`MIN_SIDE`] posts and the second median is not zero
//!   (`fact-{platform}-{trait}`): "On Bluesky, posts that quote a figure had 2.1× the median
//!   engagement of those that did not (n = 14, 90 days)."
//!
//! [`recompute`] derives them again after new snapshots: a changed fact is a new version (its
//! `recorded_at` the time of the computation), an unchanged one is left as it is, and one the
//! records no longer support expires at once, kept for the record. Whether a fact reaches a
//! specialist is the eligibility rule's decision (verified, live, same workspace, at most 180
//! days), never this module's.

use std::collections::{BTreeMap, HashMap};

use chrono::Duration;
use harmonia_agents::eligibility::{VerifiedPerformance, VerifiedPosts, offered_until};
use harmonia_contracts::Error;
use harmonia_contracts::domain::{MemoryFact, Platform, PostMetrics, Publication, Timestamp};
use harmonia_contracts::ids::{EvidenceId, FactId, PostId, WorkspaceId};
use harmonia_contracts::tool::Provenance;
use harmonia_store::{Write, WriteOp, decode_each, encode, scan_all};
use serde::{Deserialize, Serialize};

use crate::Env;
use crate::planning::median;
use crate::records::{MEMORY, POST_METRICS, PUBLICATIONS, doc_id};

/// How far back the posts a fact summarises were published, in days.
pub const WINDOW_DAYS: i64 = 90;

/// The fewest posts on each side of a comparison.
pub const MIN_SIDE: usize = 2;

/// The origin every derived fact carries.
pub const DERIVED: &str = "derived from verified performance";

/// A trait a post can have, and how a fact names it.
struct Trait {
    id: &'static str,
    with: &'static str,
    has: fn(&str) -> bool,
}

const TRAITS: [Trait; 3] = [
    Trait { id: "figure", with: "quote a figure", has: quotes_a_figure },
    Trait { id: "link", with: "carry a link", has: |body| !harmonia_policy::links(body).is_empty() },
    Trait { id: "question", with: "ask a question", has: |body| body.contains('?') },
];

/// Whether the text, its links left out, states a figure.
fn quotes_a_figure(body: &str) -> bool {
    let links = harmonia_policy::links(body);
    let prose: Vec<&str> = body.split_whitespace().filter(|w| !links.contains(w)).collect();
    !harmonia_grounding::figures(&prose.join(" ")).is_empty()
}

/// One measured post: its latest record and its published text.
struct Measured<'a> {
    metric: &'a PostMetrics,
    body: &'a str,
}

/// The facts `performance` supports at `now`, given the published text of each post.
pub fn derive(performance: &VerifiedPerformance, bodies: &HashMap<PostId, String>, now: Timestamp) -> Vec<MemoryFact> {
    let since = now - Duration::days(WINDOW_DAYS);
    let mut by_platform: BTreeMap<Platform, Vec<Measured<'_>>> = BTreeMap::new();
    for metric in performance.latest_per_post() {
        if metric.published_at < since || metric.published_at > now {
            continue;
        }
        let Some(body) = bodies.get(&metric.post) else { continue };
        by_platform.entry(metric.platform).or_default().push(Measured { metric, body });
    }
    let mut facts = Vec::new();
    for (platform, posts) in &by_platform {
        let name = platform.display_name();
        let all: Vec<&Measured<'_>> = posts.iter().collect();
        let mut counts = interactions(&all);
        let Some(middle) = median(&mut counts) else { continue };
        facts.push(fact(
            &format!("fact-{}-median", platform.as_str()),
            format!(
                "On {name}, posts drew a median of {} interactions each (likes, reposts, replies and quotes, as last measured; n = {}, {WINDOW_DAYS} days).",
                figure(middle),
                all.len()
            ),
            &all,
            now,
        ));
        for t in &TRAITS {
            let (with, without): (Vec<&Measured<'_>>, Vec<&Measured<'_>>) = all.iter().partition(|m| (t.has)(m.body));
            if with.len() < MIN_SIDE || without.len() < MIN_SIDE {
                continue;
            }
            let (Some(a), Some(b)) = (median(&mut interactions(&with)), median(&mut interactions(&without))) else {
                continue;
            };
            if b == 0.0 {
                continue;
            }
            facts.push(fact(
                &format!("fact-{}-{}", platform.as_str(), t.id),
                format!(
                    "On {name}, posts that {} had {}× the median engagement of those that did not (n = {}, {WINDOW_DAYS} days).",
                    t.with,
                    ratio(a / b),
                    all.len()
                ),
                &all,
                now,
            ));
        }
    }
    facts
}

fn interactions(posts: &[&Measured<'_>]) -> Vec<f64> {
    posts.iter().map(|m| m.metric.interactions() as f64).collect()
}

/// A median as a person writes it: whole, or with one decimal.
fn figure(x: f64) -> String {
    if x.fract() == 0.0 { format!("{x:.0}") } else { format!("{x:.1}") }
}

/// A ratio with one decimal (`2.1`).
fn ratio(x: f64) -> String {
    format!("{:.1}", (x * 10.0).round() / 10.0)
}

fn fact(id: &str, text: String, posts: &[&Measured<'_>], now: Timestamp) -> MemoryFact {
    let mut evidence: Vec<_> = posts.iter().map(|m| m.metric.evidence_id()).collect();
    evidence.sort();
    let mut cited: Vec<PostId> = posts.iter().map(|m| m.metric.post.clone()).collect();
    cited.sort();
    let live = posts.iter().all(|m| m.metric.provenance == Provenance::Live);
    MemoryFact {
        id: FactId::stable(id),
        text,
        origin: DERIVED.to_owned(),
        post: None,
        posts: cited,
        evidence,
        sample_size: Some(u32::try_from(posts.len()).unwrap_or(u32::MAX)),
        provenance: if live { Provenance::Live } else { Provenance::Mock },
        recorded_at: now,
        expires_at: None,
        version: 1,
    }
}

/// Whether two versions of a fact say the same thing on the same records.
fn same(a: &MemoryFact, b: &MemoryFact) -> bool {
    (&a.text, &a.evidence, a.sample_size, a.provenance) == (&b.text, &b.evidence, b.sample_size, b.provenance)
        && b.expires_at.is_none()
}

/// Derive `workspace`'s facts again at `now` and store what changed in one commit; how many
/// facts changed (new, new versions, and expired).
pub async fn recompute(env: &Env, workspace: &WorkspaceId, now: Timestamp) -> Result<usize, Error> {
    let store = &*env.store;
    let mode = crate::workspace::current(store, workspace).await?.config.mode;
    let publications: Vec<Publication> =
        decode_each(PUBLICATIONS, &scan_all(store, workspace, PUBLICATIONS).await.map_err(Error::from)?);
    let metrics: Vec<PostMetrics> =
        decode_each(POST_METRICS, &scan_all(store, workspace, POST_METRICS).await.map_err(Error::from)?);
    let verified = VerifiedPosts::from_publications(&publications);
    let bodies: HashMap<PostId, String> =
        publications.iter().filter_map(|p| Some((p.verified_post()?.clone(), p.body.clone()))).collect();
    let derived = derive(&verified.verified_performance(metrics, mode), &bodies, now);
    let docs = scan_all(store, workspace, MEMORY).await.map_err(Error::from)?;
    let stored: HashMap<FactId, (u64, MemoryFact)> = docs
        .iter()
        .filter_map(|d| Some((d.version, d.decode::<MemoryFact>().ok()?)))
        .filter(|(_, f)| f.origin == DERIVED)
        .map(|(v, f)| (f.id.clone(), (v, f)))
        .collect();
    let mut writes = Vec::new();
    let mut write = |fact: &MemoryFact, held: Option<u64>| -> Result<(), Error> {
        let data = encode(fact)?;
        let op = match held {
            Some(expected_version) => WriteOp::Update { data, expected_version },
            None => WriteOp::Create(data),
        };
        writes.push(Write { collection: MEMORY, id: doc_id(&fact.id), op });
        Ok(())
    };
    for fact in &derived {
        match stored.get(&fact.id) {
            Some((_, held)) if same(fact, held) => {}
            Some((version, held)) => write(&MemoryFact { version: held.version + 1, ..fact.clone() }, Some(*version))?,
            None => write(fact, None)?,
        }
    }
    for (id, (version, held)) in &stored {
        let current = held.expires_at.is_none_or(|at| at > now);
        if current && !derived.iter().any(|f| &f.id == id) {
            let expired = MemoryFact { expires_at: Some(now), version: held.version + 1, ..held.clone() };
            write(&expired, Some(*version))?;
        }
    }
    let changed = writes.len();
    if changed > 0 {
        store.commit(workspace, writes).await.map_err(Error::from)?;
    }
    Ok(changed)
}

/// One remembered fact as an operator reads it (`harmonia memory`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactView {
    /// Id.
    pub id: FactId,
    /// The statement, with its numbers.
    pub statement: String,
    /// How many posts it summarises, when it was derived from them.
    pub sample_size: Option<u32>,
    /// The metric records it rests on.
    pub evidence: Vec<EvidenceId>,
    /// When this version was computed (or recorded).
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub computed_at: Timestamp,
    /// When it stops being offered to specialists.
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub expires_at: Timestamp,
    /// Its version.
    pub version: u32,
    /// Live or mock.
    pub provenance: Provenance,
    /// Where it came from.
    pub origin: String,
    /// Whether the eligibility rule lets it reach Nimi and Ryan now.
    pub offered: bool,
}

/// Every remembered fact of `workspace`, newest first, with whether each may reach a
/// specialist at `now` under the eligibility rule.
pub async fn list(env: &Env, workspace: &WorkspaceId, now: Timestamp) -> Result<Vec<FactView>, Error> {
    let store = &*env.store;
    let mut facts: Vec<MemoryFact> =
        decode_each(MEMORY, &scan_all(store, workspace, MEMORY).await.map_err(Error::from)?);
    facts.sort_by(|a, b| b.recorded_at.cmp(&a.recorded_at).then_with(|| a.id.cmp(&b.id)));
    let verified = VerifiedPosts::read(store, workspace).await.map_err(Error::from)?;
    Ok(facts
        .into_iter()
        .map(|f| FactView {
            offered: verified.is_eligible_memory(&f, now),
            expires_at: offered_until(&f),
            id: f.id,
            statement: f.text,
            sample_size: f.sample_size,
            evidence: f.evidence,
            computed_at: f.recorded_at,
            version: f.version,
            provenance: f.provenance,
            origin: f.origin,
        })
        .collect())
}
