//! The facts derived from verified performance, as pure functions of the records.

use std::collections::HashMap;

use chrono::Duration;
use harmonia_agents::eligibility::{MAX_MEMORY_AGE_DAYS, VerifiedPosts};
use harmonia_contracts::domain::{PostMetrics, Publication, Timestamp, WorkspaceMode};
use harmonia_contracts::ids::PostId;
use serde_json::json;

use super::memory::{WINDOW_DAYS, derive};

fn at(t: &str) -> Timestamp {
    t.parse().expect("time")
}

fn verified(post: &str, connector: &str) -> Publication {
    serde_json::from_value(json!({
        "job": "job-1", "draft": "draft-1", "platform": "bluesky", "body": "b", "content_hash": "h",
        "claim": {"job": "job-1", "draft": "draft-1", "content_hash": "h", "platform": "bluesky",
                  "connector": connector, "idempotency_key": post, "claimed_at": "2026-11-02T14:00:00Z"},
        "receipt": {"job": "job-1", "draft": "draft-1", "connector": connector,
                    "outcome": {"outcome": "applied", "post": post}, "recorded_at": "2026-11-02T14:00:00Z"},
        "verification": {"job": "job-1", "draft": "draft-1", "outcome": {"outcome": "verified", "post": post},
                         "checked_at": "2026-11-02T15:00:00Z"}}))
    .expect("publication")
}

/// A live 24 h snapshot of `post` with `likes` likes (and nothing else).
fn snapshot(post: &str, likes: u64, published: &str) -> PostMetrics {
    serde_json::from_value(json!({
        "post": post, "platform": "bluesky", "published_at": published, "measured_at": published,
        "offset": "24h", "impressions": null, "reactions": likes, "comments": 0, "shares": 0, "quotes": 0,
        "clicks": null, "source": "bluesky engagement snapshot", "provenance": "live"}))
    .expect("metrics")
}

/// Four verified Bluesky posts: two quoting a figure (21 and 23 likes), two not (10 each), and
/// one more, unverified, that quotes one (90 likes).
fn history() -> (VerifiedPosts, Vec<PostMetrics>, HashMap<PostId, String>) {
    let texts = [
        ("p1", "Revenue grew 40% this quarter.", 21),
        ("p2", "We shipped 3 releases in a week.", 23),
        ("p3", "Our team on what matters most.", 10),
        ("p4", "Read the whole talk: https://example.com/talk", 10),
        ("p9", "Up 900% overnight.", 90),
    ];
    let publications: Vec<Publication> = ["p1", "p2", "p3", "p4"].iter().map(|p| verified(p, "bluesky")).collect();
    let metrics = texts.iter().map(|(p, _, likes)| snapshot(p, *likes, "2026-11-20T15:00:00Z")).collect();
    let bodies = texts.iter().map(|(p, body, _)| (p.parse().expect("post"), (*body).to_owned())).collect();
    (VerifiedPosts::from_publications(&publications), metrics, bodies)
}

#[test]
fn facts_state_their_numbers_sample_and_records_from_verified_posts_only() {
    let (verified, metrics, bodies) = history();
    let now = at("2026-12-01T00:00:00Z");
    let facts = derive(&verified.verified_performance(metrics, WorkspaceMode::Production), &bodies, now);
    let by_id: HashMap<&str, _> = facts.iter().map(|f| (f.id.as_str(), f)).collect();
    let median = by_id["fact-bluesky-median"];
    assert_eq!(
        median.text,
        "On Bluesky, posts drew a median of 15.5 interactions each (likes, reposts, replies and quotes, as last measured; n = 4, 90 days)."
    );
    let figure = by_id["fact-bluesky-figure"];
    assert_eq!(
        figure.text,
        "On Bluesky, posts that quote a figure had 2.2× the median engagement of those that did not (n = 4, 90 days)."
    );
    assert_eq!(figure.sample_size, Some(4));
    let evidence: Vec<&str> = figure.evidence.iter().map(|e| e.as_str()).collect();
    assert_eq!(evidence, ["metric-p1.24h", "metric-p2.24h", "metric-p3.24h", "metric-p4.24h"], "not the unverified p9");
    // A link or a question: one post has a link (too few on that side), none asks.
    assert!(!by_id.contains_key("fact-bluesky-link") && !by_id.contains_key("fact-bluesky-question"));
    assert!(facts.iter().all(|f| f.provenance == harmonia_contracts::tool::Provenance::Live));

    // They are eligible now and, never recomputed, no longer past 180 days.
    for fact in &facts {
        assert!(verified.is_eligible_memory(fact, now));
        assert!(!verified.is_eligible_memory(fact, now + Duration::days(MAX_MEMORY_AGE_DAYS + 1)));
    }
    // Posts published before the window are not summarised.
    let later = now + Duration::days(WINDOW_DAYS + 1);
    let (_, metrics, _) = history();
    assert!(derive(&verified.verified_performance(metrics, WorkspaceMode::Production), &bodies, later).is_empty());
}

#[test]
fn a_sandbox_snapshot_makes_a_mock_fact_that_is_never_offered() {
    let publications = [verified("p1", "sandbox")];
    let verified = VerifiedPosts::from_publications(&publications);
    let mut mock = snapshot("p1", 3, "2026-11-20T15:00:00Z");
    mock.provenance = harmonia_contracts::tool::Provenance::Mock;
    let bodies = HashMap::from([("p1".parse().expect("post"), "Text".to_owned())]);
    let now = at("2026-12-01T00:00:00Z");
    let facts = derive(&verified.verified_performance([mock], WorkspaceMode::Development), &bodies, now);
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0].provenance, harmonia_contracts::tool::Provenance::Mock);
    assert!(!verified.is_eligible_memory(&facts[0], now));
}

#[tokio::test]
async fn policy_resolves_a_cited_fact_only_while_the_rule_offers_it() {
    use std::sync::Arc;

    use harmonia_store::{Store, create_if_absent, encode};
    use harmonia_store_sqlite::SqliteStore;

    let dir = harmonia_testkit::temp_dir();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("facts.sqlite")).expect("open"));
    let ws: harmonia_contracts::ids::WorkspaceId = "ws-facts".parse().expect("ws");
    let put = |collection, id: &str, data| {
        let store = store.clone();
        let (ws, id) = (ws.clone(), id.parse().expect("id"));
        async move { create_if_absent(&*store, &ws, collection, &id, data).await.expect("store") }
    };
    put(crate::records::PUBLICATIONS, "draft-1", encode(&verified("p1", "bluesky")).expect("encode")).await;
    let now = at("2026-12-01T00:00:00Z");
    let (verified_posts, metrics, bodies) = history();
    let facts = derive(&verified_posts.verified_performance(metrics, WorkspaceMode::Production), &bodies, now);
    // Only p1 is published in this store: the facts resting on p1 alone are the ones offered.
    let mut fact = facts.into_iter().find(|f| f.id.as_str() == "fact-bluesky-median").expect("fact");
    fact.posts = vec!["p1".parse().expect("post")];
    put(crate::records::MEMORY, "fact-bluesky-median", encode(&fact).expect("encode")).await;

    let analysis = crate::records::AnalysisRecord {
        job: "job-1".parse().expect("job"),
        analysis: serde_json::from_value(json!({"moments": [], "angles": [], "provenance": "live"})).expect("analysis"),
        said: Vec::new(),
        flagged: Vec::new(),
    };
    let cited: Vec<harmonia_contracts::ids::EvidenceId> =
        ["fact-bluesky-median", "fact-unknown"].iter().map(|id| id.parse().expect("id")).collect();
    let resolved = crate::policy::evidence::load_with(&*store, &ws, &analysis, &[], &cited, now).await.expect("load");
    let found = resolved.get(&cited[0]).expect("the offered fact resolves");
    assert_eq!(found.text, fact.text);
    assert_eq!(found.provenance, harmonia_contracts::tool::Provenance::Live);
    assert!(!resolved.contains_key(&cited[1]), "an unknown fact does not");
    let aged = now + Duration::days(MAX_MEMORY_AGE_DAYS + 1);
    let later = crate::policy::evidence::load_with(&*store, &ws, &analysis, &[], &cited, aged).await.expect("load");
    assert!(later.is_empty(), "past 180 days a cited fact no longer resolves");
}
