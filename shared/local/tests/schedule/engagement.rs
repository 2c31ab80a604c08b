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

/// A Bluesky account whose platform fails its first read of the public trends, then shows one.
#[derive(Default)]
struct TrendsFailOnce {
    reads: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl harmonia_connectors::Connector for TrendsFailOnce {
    fn kind(&self) -> harmonia_contracts::domain::ConnectorKind {
        harmonia_contracts::domain::ConnectorKind::Bluesky
    }
    async fn create(&self, _: &WorkspaceId, _: &harmonia_connectors::Outgoing) -> harmonia_connectors::Sent {
        harmonia_connectors::Sent::Refused(harmonia_connectors::Refusal::Failed)
    }
    async fn read_back(
        &self,
        _: harmonia_connectors::Lookup<'_>,
    ) -> Result<harmonia_connectors::Found, harmonia_connectors::ReadBackFailed> {
        Ok(harmonia_connectors::Found::Missing)
    }
    async fn check(&self) -> Result<harmonia_connectors::Checked, harmonia_contracts::Code> {
        Ok(harmonia_connectors::Checked::NothingToCheck("nothing"))
    }
    async fn trends(
        &self,
    ) -> Result<Vec<harmonia_connectors::trends::PublicTrend>, harmonia_connectors::engagement::MeasureFailed> {
        match self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
            0 => Err(harmonia_connectors::engagement::MeasureFailed),
            _ => Ok(vec![harmonia_connectors::trends::PublicTrend {
                topic: "Climate week".into(),
                summary: "Posts about the summit.".into(),
                url: None,
            }]),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_read_of_public_trends_is_tried_again_at_the_next_tick_then_kept_for_the_cache() {
    let dir = tempfile::tempdir().expect("temp dir");
    let clock = std::sync::Arc::new(ManualClock::new(super::monday_dawn()));
    let platform = std::sync::Arc::new(TrendsFailOnce::default());
    let handle = "@fieldnotes.bsky.social";
    let accounts = harmonia_connectors::accounts::Accounts::none().with(
        harmonia_contracts::domain::Platform::Bluesky,
        handle,
        platform.clone(),
    );
    let wrap = harmonia_local::Wrap {
        clock: Some(clock.clone() as std::sync::Arc<dyn Clock>),
        accounts: Some(accounts),
        ..harmonia_local::Wrap::default()
    };
    let local = Local::open_with(dir.path(), harmonia_pipeline::registry::Timing::LOCAL, wrap).await.expect("open");
    let example = include_str!("../../../../examples/workspace.toml").replace(
        &format!("platform = \"bluesky\"\nhandle = \"{handle}\"\n"),
        &format!("platform = \"bluesky\"\nhandle = \"{handle}\"\nconnector = \"bluesky\"\n"),
    );
    let config = harmonia_contracts::domain::WorkspaceConfig::from_toml(&example).expect("config");
    let ws: WorkspaceId = "trends".parse().expect("ws");
    harmonia_pipeline::workspace::init(&*local.env.store, &ws, config, &"ana".parse().expect("op"))
        .await
        .expect("init");
    let signals = || async {
        let docs = harmonia_store::scan_all(&*local.env.store, &ws, records::TREND_SIGNALS).await.expect("scan");
        harmonia_store::decode_each::<harmonia_contracts::domain::TrendSignal>(records::TREND_SIGNALS, &docs)
    };

    let first = engagement::tick(&local.env).await.expect("tick").trends;
    assert_eq!((first.failed, first.signals), (1, 0), "{first:?}");
    assert!(signals().await.is_empty());
    // The very next tick reads again: a failure is not cached.
    let second = engagement::tick(&local.env).await.expect("tick").trends;
    assert_eq!((second.failed, second.signals), (0, 1), "{second:?}");
    let kept = signals().await;
    assert_eq!(
        kept.iter().map(|s| (s.topic.as_str(), s.observed_at)).collect::<Vec<_>>(),
        [("Climate week", clock.now())]
    );
    assert_eq!(kept[0].source, format!("Bluesky public trends, read for {handle}"));
    // A successful read is kept for the cache (60 minutes by default), then read again.
    clock.advance(TimeDelta::minutes(59));
    engagement::tick(&local.env).await.expect("tick");
    assert_eq!(platform.reads.load(std::sync::atomic::Ordering::SeqCst), 2, "not read again within the cache");
    clock.advance(TimeDelta::minutes(2));
    engagement::tick(&local.env).await.expect("tick");
    assert_eq!(platform.reads.load(std::sync::atomic::Ordering::SeqCst), 3);
}
