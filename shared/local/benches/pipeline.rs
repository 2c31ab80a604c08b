//! Whole jobs through the embedded default: ingest → verified with the offline model, both
//! approvals given as the operator. Reports jobs per second — jobs run one after another and,
//! separately, all of a round's jobs at once — and the store operations, events and model calls
//! one job costs; the last line is one JSON object (`{"bench":"pipeline",…}`) for scripts.
//!
//! Each way is measured over several rounds on the same data file, and the median round is
//! reported (with the slowest and fastest beside it): a single round of 20 jobs lasts about a
//! tenth of a second, so one checkpoint or one scheduling hiccup would move it by a third.
//!
//! Run: `cargo bench -p harmonia-local --bench pipeline` (`BENCH_JOBS` sets the jobs per round,
//! 20 by default; `BENCH_ROUNDS` the rounds, 10 by default).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use harmonia_agents::model::{Model, ModelRequest, ModelResponse, Wrapped, Wrapper};
use harmonia_bus::{Bus, OutboundMessage};
use harmonia_contracts::domain::{JobStatus, SourceInput};
use harmonia_contracts::ids::{DocId, WorkspaceId};
use harmonia_local::{Local, Wrap};
use harmonia_pipeline::registry::Timing;
use harmonia_pipeline::steps::ingest;
use harmonia_store::{Collection, Document, Query, Store, Write};

/// The allocator of the `harmonia` command, where the embedded default runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SAMPLE: &str = include_str!("../../../examples/launch-talk.json");

#[derive(Default)]
struct Counts {
    reads: AtomicU64,
    queries: AtomicU64,
    commits: AtomicU64,
    events: AtomicU64,
    model_calls: AtomicU64,
    /// (operation, collection) → count, for the breakdown of where a job's store operations go.
    by_collection: std::sync::Mutex<std::collections::BTreeMap<(&'static str, &'static str), u64>>,
}

impl Counts {
    fn note(&self, operation: &'static str, collection: Collection) {
        if let Ok(mut by) = self.by_collection.lock() {
            *by.entry((operation, collection.as_str())).or_default() += 1;
        }
    }
}

struct CountingModel(Arc<Counts>);

#[async_trait]
impl Wrapper for CountingModel {
    async fn generate(
        &self,
        inner: &dyn Model,
        request: &ModelRequest,
    ) -> Result<ModelResponse, harmonia_agents::model::Error> {
        self.0.model_calls.fetch_add(1, Ordering::Relaxed);
        inner.generate(request).await
    }
}

struct CountingStore(Arc<dyn Store>, Arc<Counts>);

#[async_trait]
impl Store for CountingStore {
    async fn get(&self, w: &WorkspaceId, c: Collection, id: &DocId) -> Result<Option<Document>, harmonia_store::Error> {
        self.1.reads.fetch_add(1, Ordering::Relaxed);
        self.1.note("read", c);
        self.0.get(w, c, id).await
    }
    async fn query(&self, w: &WorkspaceId, c: Collection, q: &Query) -> Result<Vec<Document>, harmonia_store::Error> {
        self.1.queries.fetch_add(1, Ordering::Relaxed);
        self.1.note("query", c);
        self.0.query(w, c, q).await
    }
    async fn commit(&self, w: &WorkspaceId, writes: Vec<Write>) -> Result<(), harmonia_store::Error> {
        self.1.commits.fetch_add(1, Ordering::Relaxed);
        for collection in writes.iter().map(|w| w.collection).collect::<std::collections::BTreeSet<_>>() {
            self.1.note("commit", collection);
        }
        self.0.commit(w, writes).await
    }
}

struct CountingBus(Arc<dyn Bus>, Arc<Counts>);

#[async_trait]
impl Bus for CountingBus {
    async fn publish(&self, m: OutboundMessage) -> Result<String, harmonia_bus::Error> {
        self.1.events.fetch_add(1, Ordering::Relaxed);
        self.0.publish(m).await
    }
}

async fn run(local: &Local, ws: &WorkspaceId, input: &SourceInput) {
    let job = ingest(&local.env, ws, input.clone(), None, None).await.expect("ingest");
    let done = local.drive(ws, &job.id, true, Duration::from_secs(300), |_| {}).await.expect("drive");
    assert_eq!(done.status, JobStatus::Verified, "{:?}", done.failure);
}

/// Jobs per second in each round: the median, the slowest and the fastest.
struct Rounds(Vec<f64>);

impl Rounds {
    fn median(&self) -> f64 {
        let mut sorted = self.0.clone();
        sorted.sort_by(f64::total_cmp);
        match sorted.len() {
            0 => 0.0,
            n if n % 2 == 1 => sorted[n / 2],
            n => f64::midpoint(sorted[n / 2 - 1], sorted[n / 2]),
        }
    }

    fn describe(&self) -> String {
        let slowest = self.0.iter().copied().fold(f64::INFINITY, f64::min);
        let fastest = self.0.iter().copied().fold(0.0, f64::max);
        format!(
            "{:.1} jobs/s, the median of {} rounds (slowest {slowest:.1}, fastest {fastest:.1})",
            self.median(),
            self.0.len()
        )
    }
}

#[allow(clippy::print_stdout, clippy::cast_precision_loss)] // A benchmark reports on stdout.
#[tokio::main]
async fn main() {
    let setting = |name: &str, default: u64| {
        std::env::var(name).ok().and_then(|v| v.parse().ok()).filter(|&n| n > 0).unwrap_or(default)
    };
    let (jobs, rounds) = (setting("BENCH_JOBS", 20), setting("BENCH_ROUNDS", 10));
    let dir = tempfile::tempdir().expect("temp dir");
    let counts = Arc::new(Counts::default());
    let (c1, c2, c3) = (counts.clone(), counts.clone(), counts.clone());
    let wrap = Wrap {
        store: Some(Box::new(move |s| Arc::new(CountingStore(s, c1)) as Arc<dyn Store>)),
        bus: Some(Box::new(move |b| Arc::new(CountingBus(b, c2)) as Arc<dyn Bus>)),
        model: Some(Box::new(move |m| Arc::new(Wrapped::new(m, CountingModel(c3))) as Arc<dyn Model>)),
        ..Wrap::default()
    };
    let local = Arc::new(Local::open_with(dir.path(), Timing::LOCAL, wrap).await.expect("open"));
    let ws = local.workspace().await.expect("workspace");
    let input: SourceInput = serde_json::from_str(SAMPLE).expect("sample");
    run(&local, &ws, &input).await; // warm-up
    local.settle(Duration::from_secs(60)).await.expect("settle");

    let counted =
        |c: &Counts| [&c.reads, &c.queries, &c.commits, &c.events, &c.model_calls].map(|n| n.load(Ordering::Relaxed));
    let before = counted(&counts);
    let by_before = counts.by_collection.lock().map(|b| b.clone()).unwrap_or_default();
    let mut sequential = Rounds(Vec::new());
    for _ in 0..rounds {
        let start = Instant::now();
        for _ in 0..jobs {
            run(&local, &ws, &input).await;
        }
        local.settle(Duration::from_secs(60)).await.expect("settle");
        sequential.0.push(jobs as f64 / start.elapsed().as_secs_f64());
    }
    let after = counted(&counts);
    let per_job = |i: usize| (after[i] - before[i]) as f64 / (jobs * rounds) as f64;
    let by_after = counts.by_collection.lock().map(|b| b.clone()).unwrap_or_default();
    let breakdown: Vec<String> = by_after
        .iter()
        .map(|(key, n)| (key, n - by_before.get(key).copied().unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .map(|((op, collection), n)| format!("{op} {collection} {:.1}", n as f64 / (jobs * rounds) as f64))
        .collect();

    let mut concurrent = Rounds(Vec::new());
    for _ in 0..rounds {
        let start = Instant::now();
        let running: Vec<_> = (0..jobs)
            .map(|_| {
                let (local, ws, input) = (local.clone(), ws.clone(), input.clone());
                tokio::spawn(async move { run(&local, &ws, &input).await })
            })
            .collect();
        for r in running {
            r.await.expect("job");
        }
        concurrent.0.push(jobs as f64 / start.elapsed().as_secs_f64());
    }

    println!("pipeline (offline model, sqlite, local queue), ingest->verified, rounds of {jobs} jobs:");
    println!("  sequential: {}", sequential.describe());
    println!("  concurrent ({jobs} at once): {}", concurrent.describe());
    println!(
        "  per job: {:.0} store reads, {:.0} queries, {:.0} commits, {:.0} events published, {:.0} model calls",
        per_job(0),
        per_job(1),
        per_job(2),
        per_job(3),
        per_job(4)
    );
    println!("  per job, by operation and collection (a commit counted once per collection it writes):");
    for line in &breakdown {
        println!("    {line}");
    }
    let round = |x: f64| (x * 10.0).round() / 10.0;
    println!(
        "{}",
        serde_json::json!({
            "bench": "pipeline",
            "sequential_jobs_per_s": round(sequential.median()),
            "concurrent_jobs_per_s": round(concurrent.median()),
            "reads_per_job": round(per_job(0)),
            "queries_per_job": round(per_job(1)),
            "commits_per_job": round(per_job(2)),
            "model_calls_per_job": round(per_job(4)),
        })
    );
}
