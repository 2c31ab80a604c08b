//! The verified-performance and memory-eligibility rule, over records in a real store.

use chrono::{Duration, Utc};
use harmonia_contracts::domain::{MemoryFact, PostMetrics, ReceiptOutcome, VerificationOutcome, WorkspaceMode};
use harmonia_contracts::ids::{DocId, PostId, WorkspaceId};
use harmonia_contracts::tool::Provenance;
use harmonia_store::{Store, create_if_absent, encode};
use serde_json::json;

use super::Fixture;
use super::research::publication;
use crate::eligibility::{MAX_MEMORY_AGE_DAYS, POST_METRICS, VerifiedPosts, context};
use crate::io::NimiInput;
use crate::research::{MEMORY, PUBLICATIONS};

fn post(p: &str) -> PostId {
    p.parse().expect("post")
}

fn metric(p: &str, provenance: Provenance) -> PostMetrics {
    serde_json::from_value(json!({
        "post": p, "platform": "linkedin", "published_at": "2026-11-02T14:00:00Z",
        "measured_at": "2026-11-04T14:00:00Z", "impressions": 100, "reactions": 5, "comments": 1,
        "shares": 1, "clicks": 2, "source": "analytics export", "provenance": provenance}))
    .expect("metric")
}

fn fact(n: u32, p: Option<&str>, provenance: Provenance, age_days: i64) -> MemoryFact {
    MemoryFact {
        id: format!("fact-{n}").parse().expect("id"),
        text: format!("Fact {n}"),
        origin: "verified post".into(),
        post: p.map(post),
        posts: Vec::new(),
        evidence: Vec::new(),
        sample_size: None,
        provenance,
        recorded_at: Utc::now() - Duration::days(age_days),
        expires_at: None,
        version: 1,
    }
}

/// A fact derived from the metric records of `posts`.
fn derived(posts: &[&str], age_days: i64) -> MemoryFact {
    MemoryFact {
        posts: posts.iter().map(|p| post(p)).collect(),
        evidence: posts.iter().map(|p| format!("metric-{p}.24h").parse().expect("id")).collect(),
        sample_size: Some(u32::try_from(posts.len()).expect("few")),
        ..fact(10, None, Provenance::Live, age_days)
    }
}

async fn put<T: serde::Serialize>(store: &dyn Store, ws: &WorkspaceId, c: harmonia_store::Collection, id: &str, v: &T) {
    let id: DocId = id.parse().expect("id");
    create_if_absent(store, ws, c, &id, encode(v).expect("encode")).await.expect("store");
}

/// post-1 verified; post-2 applied but read back missing; post-3 applied, never verified.
async fn publications(store: &dyn Store, ws: &WorkspaceId) {
    let applied = |p: &str| Some(ReceiptOutcome::Applied { post: post(p), url: None, record: None });
    let rows = [
        publication(1, applied("post-1"), Some(VerificationOutcome::Verified { post: post("post-1") })),
        publication(2, applied("post-2"), Some(VerificationOutcome::Missing)),
        publication(3, applied("post-3"), None),
    ];
    for (n, p) in rows.iter().enumerate() {
        put(store, ws, PUBLICATIONS, &format!("pub-{n}"), p).await;
    }
}

#[tokio::test]
async fn only_metrics_of_verified_publications_count_and_mock_ones_never_in_production() {
    let f = Fixture::new().await;
    publications(&*f.store, &f.workspace).await;
    let verified = VerifiedPosts::read(&*f.store, &f.workspace).await.expect("read");
    let dev = WorkspaceMode::Development;
    let prod = WorkspaceMode::Production;
    assert!(verified.is_verified_performance(&metric("post-1", Provenance::Live), prod));
    assert!(verified.is_verified_performance(&metric("post-1", Provenance::Mock), dev), "mock counts in development");
    assert!(!verified.is_verified_performance(&metric("post-1", Provenance::Mock), prod), "never in production");
    for unverified in ["post-2", "post-3", "post-unknown"] {
        for mode in [dev, prod] {
            assert!(!verified.is_verified_performance(&metric(unverified, Provenance::Live), mode), "{unverified}");
        }
    }
    let mut other_job = metric("post-1", Provenance::Live);
    other_job.job = Some("job-elsewhere".parse().expect("job"));
    assert!(!verified.is_verified_performance(&other_job, dev), "a metric naming another job is not this post's");
    let mut same_job = other_job.clone();
    same_job.job = Some("job-r".parse().expect("job"));
    assert!(verified.is_verified_performance(&same_job, dev));

    // Another workspace's verified publication does not verify a metric here.
    let other = WorkspaceId::generate();
    assert!(!VerifiedPosts::read(&*f.store, &other).await.expect("read").contains(&post("post-1")));
}

#[tokio::test]
async fn memory_is_eligible_only_when_verified_live_and_recent() {
    let f = Fixture::new().await;
    publications(&*f.store, &f.workspace).await;
    let verified = VerifiedPosts::read(&*f.store, &f.workspace).await.expect("read");
    let now = Utc::now();
    let eligible = |f: &MemoryFact| verified.is_eligible_memory(f, now);
    assert!(eligible(&fact(1, Some("post-1"), Provenance::Live, 3)));
    assert!(eligible(&fact(2, Some("post-1"), Provenance::Live, MAX_MEMORY_AGE_DAYS - 1)));
    assert!(!eligible(&fact(3, Some("post-1"), Provenance::Mock, 3)), "mock");
    assert!(!eligible(&fact(4, Some("post-1"), Provenance::Live, MAX_MEMORY_AGE_DAYS + 1)), "too old");
    assert!(!eligible(&fact(5, Some("post-1"), Provenance::Live, -2)), "recorded in the future");
    assert!(!eligible(&fact(6, Some("post-2"), Provenance::Live, 3)), "unverified post");
    assert!(!eligible(&fact(7, None, Provenance::Live, 3)), "not learnt from a post");

    // Derived from metric records: every post behind them must be verified.
    assert!(eligible(&derived(&["post-1"], 3)));
    assert!(!eligible(&derived(&["post-1", "post-2"], 3)), "one of its posts is not verified");
    assert!(!eligible(&derived(&["post-1"], MAX_MEMORY_AGE_DAYS + 1)), "too old");
    let mut retired = derived(&["post-1"], 3);
    retired.expires_at = Some(now - Duration::minutes(1));
    assert!(!eligible(&retired), "past its own expiry");
    retired.expires_at = Some(now + Duration::days(1));
    assert!(eligible(&retired), "not yet expired");
}

#[tokio::test]
async fn nimi_gets_only_what_the_rule_admits_from_the_store() {
    let f = Fixture::new().await;
    let ws = &f.workspace;
    publications(&*f.store, ws).await;
    for (id, m) in [
        ("post-1", metric("post-1", Provenance::Live)),
        ("post-2", metric("post-2", Provenance::Live)),
        ("post-9", metric("post-9", Provenance::Live)),
    ] {
        put(&*f.store, ws, POST_METRICS, id, &m).await;
    }
    for (n, p, provenance, age) in [
        (1, Some("post-1"), Provenance::Live, 1),
        (2, Some("post-1"), Provenance::Mock, 1),
        (3, None, Provenance::Live, 1),
    ] {
        put(&*f.store, ws, MEMORY, &format!("fact-{n}"), &fact(n, p, provenance, age)).await;
    }
    let (performance, memory) = context(&*f.store, ws, WorkspaceMode::Production, Utc::now(), 20).await.expect("ctx");
    let input = NimiInput::new(&f.source, performance, memory);
    let posts: Vec<&str> = input.verified_performance.iter().map(|m| m.post.as_str()).collect();
    assert_eq!(posts, ["post-1"], "unverified and unknown posts never reach Nimi");
    let facts: Vec<&str> = input.memory.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(facts, ["fact-1"]);

    // The same metrics as mock: nothing in production, the verified one in development.
    put(&*f.store, ws, POST_METRICS, "post-1-mock", &metric("post-1", Provenance::Mock)).await;
    let (prod, _) = context(&*f.store, ws, WorkspaceMode::Production, Utc::now(), 20).await.expect("ctx");
    assert!(prod.as_slice().iter().all(|m| m.provenance == Provenance::Live));
    let (dev, _) = context(&*f.store, ws, WorkspaceMode::Development, Utc::now(), 20).await.expect("ctx");
    assert_eq!(dev.as_slice().len(), 2);
}
