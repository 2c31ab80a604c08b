//! Engagement snapshots after a scheduled post is verified, on the embedded default (the
//! sandbox's mock counts), with the test's clock: each offset is read once when it is due, a
//! dispatcher that slept through offsets takes only the latest, and remembered facts are
//! derived again (a new version) as snapshots arrive.

use chrono::TimeDelta;
use harmonia_connectors::engagement::sandbox_engagement;
use harmonia_contracts::domain::{JobStatus, Publication, Timestamp};
use harmonia_contracts::ids::{JobId, WorkspaceId};
use harmonia_contracts::tool::Provenance;
use harmonia_local::Local;
use harmonia_pipeline::clock::{Clock, ManualClock};
use harmonia_pipeline::engagement::{self, memory};
use harmonia_pipeline::gates::schedule;
use harmonia_pipeline::records;

use super::{WAIT, approved, started};

/// `job` approved, dispatched when due and verified; when it was verified and its
/// publication.
async fn published(local: &Local, clock: &ManualClock, ws: &WorkspaceId) -> (JobId, Timestamp, Publication) {
    let (job, planned) = approved(local, ws).await;
    clock.set(planned.due_at);
    assert_eq!(schedule::tick(&local.env).await.expect("tick").released.len(), 1);
    let done = local.drive(ws, &job, false, WAIT, |_| {}).await.expect("drive");
    assert_eq!(done.status, JobStatus::Verified, "{:?}", done.failure);
    let docs = harmonia_store::scan_all(&*local.env.store, ws, records::PUBLICATIONS).await.expect("scan");
    let publication: Publication = harmonia_store::decode_each(records::PUBLICATIONS, &docs)
        .into_iter()
        .find(|p: &Publication| p.job == job)
        .expect("its publication");
    (job, planned.due_at, publication)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_verified_post_is_read_back_at_each_offset_once_and_facts_follow_the_snapshots() {
    let (_dir, clock, local, ws) = started().await;
    let (job, verified_at, publication) = published(&local, &clock, &ws).await;
    let key = publication.claim.idempotency_key.clone();

    // Nothing is due before the first offset (the default: 1 hour).
    clock.set(verified_at + TimeDelta::minutes(59));
    assert!(engagement::tick(&local.env).await.expect("tick").taken.is_empty());
    assert!(memory::list(&local.env, &ws, clock.now()).await.expect("memory").is_empty());

    let mut seen = Vec::new();
    for (offset, hours) in [("1h", 1), ("24h", 24), ("7d", 168)] {
        clock.set(verified_at + TimeDelta::hours(hours) + TimeDelta::minutes(1));
        let tick = engagement::tick(&local.env).await.expect("tick");
        let taken: Vec<String> = tick.taken.iter().map(|(w, j, o)| format!("{w}/{j}/{o}")).collect();
        assert_eq!(taken, [format!("{ws}/{job}/{offset}")], "{tick:?}");
        assert_eq!(tick.failed, 0);
        // The same tick again takes nothing more.
        assert!(engagement::tick(&local.env).await.expect("again").taken.is_empty());
        let facts = memory::list(&local.env, &ws, clock.now()).await.expect("memory");
        let median = facts.iter().find(|f| f.id.as_str().ends_with("-median")).expect("the median fact");
        assert_eq!(median.sample_size, Some(1));
        seen.push((median.version, median.statement.clone(), median.evidence.clone()));
    }
    let snapshots = engagement::of_job(&local.env, &ws, &job).await.expect("snapshots").snapshots;
    let offsets: Vec<String> = snapshots.iter().map(|s| s.offset.to_string()).collect();
    assert_eq!(offsets, ["1h", "24h", "7d"]);
    for s in &snapshots {
        let expected = sandbox_engagement(&key, s.taken_at - verified_at);
        assert_eq!(
            (s.likes, s.reposts, s.replies, s.quotes),
            (expected.likes, expected.reposts, expected.replies, expected.quotes)
        );
        assert_eq!(s.provenance, Provenance::Mock, "the sandbox's numbers are mock");
    }
    assert!(snapshots[0].likes <= snapshots[2].likes);
    // Each snapshot that changed the numbers made a new version of the fact, resting on the
    // latest record.
    let versions: Vec<u32> = seen.iter().map(|(v, _, _)| *v).collect();
    assert_eq!(versions[0], 1);
    assert!(versions.windows(2).all(|w| w[1] >= w[0]), "{versions:?}");
    assert_eq!(seen[2].2, [snapshots[2].evidence_id.clone()], "the fact rests on the latest snapshot");
    // Mock facts are listed but never offered.
    let facts = memory::list(&local.env, &ws, clock.now()).await.expect("memory");
    assert!(facts.iter().all(|f| f.provenance == Provenance::Mock && !f.offered), "{facts:?}");

    // Every offset is taken: the post is no longer measured.
    clock.advance(TimeDelta::days(30));
    let after = engagement::tick(&local.env).await.expect("tick");
    assert!(after.taken.is_empty(), "{after:?}");
    assert_eq!(engagement::of_job(&local.env, &ws, &job).await.expect("snapshots").snapshots.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dispatcher_that_slept_through_offsets_takes_only_the_latest() {
    let (_dir, clock, local, ws) = started().await;
    let (job, verified_at, _) = published(&local, &clock, &ws).await;

    clock.set(verified_at + TimeDelta::days(2));
    let tick = engagement::tick(&local.env).await.expect("tick");
    assert_eq!(tick.taken.len(), 1, "{tick:?}");
    assert_eq!(tick.taken[0].2.to_string(), "24h", "a 1 h snapshot read two days late would be misnamed");
    clock.set(verified_at + TimeDelta::days(8));
    engagement::tick(&local.env).await.expect("tick");
    let offsets: Vec<String> = engagement::of_job(&local.env, &ws, &job)
        .await
        .expect("snapshots")
        .snapshots
        .iter()
        .map(|s| s.offset.to_string())
        .collect();
    assert_eq!(offsets, ["24h", "7d"]);
}
