//! One specialist invocation (Nimi's analysis) end to end through the runtime: session create →
//! model loop (skill and reference loads) → schema and semantic validation → the typed output →
//! session delete → activity record, over a SQLite store. Measured with two models:
//!
//! - `offline`: the deterministic offline model, which does its own work on every call (ranks
//!   the moments, writes its answer);
//! - `scripted`: the framework alone. The model replays the offline model's recorded turns for
//!   this input (the same skill loads, then the same accepted analysis) without computing
//!   anything, as a peer framework's constant fake model does; the runtime does everything it
//!   does for a real answer (durable session, activity record, full validation).
//!
//! Run: `cargo bench -p harmonia-agents --bench invocation` (both, `scripted` last) or with
//! `BENCH_MODEL=offline|scripted` (that one last, the other beside it). Each prints min, median
//! and p99 in µs, then a JSON line with its `model`.

use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use harmonia_agents::eligibility::{EligibleMemory, VerifiedPerformance};
use harmonia_agents::io::NimiInput;
use harmonia_agents::model::{self, Model, ModelRequest, ModelResponse};
use harmonia_agents::offline::OfflineModel;
use harmonia_agents::role::Nimi;
use harmonia_agents::skills::SkillLibrary;
use harmonia_agents::{InvocationSeed, Runtime};
use harmonia_contracts::domain::SourceInput;
use harmonia_contracts::event::Stage;
use harmonia_contracts::ids::{JobId, WorkspaceId};
use harmonia_contracts::trace::TraceParent;
use harmonia_store_sqlite::SqliteStore;

/// The allocator of the `harmonia` command, where the embedded default runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SAMPLE: &str = include_str!("../../../examples/launch-talk.json");

fn percentile(sorted: &[u128], p: f64) -> u128 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// The offline model, keeping every answer it gives.
#[derive(Default)]
struct Recording {
    turns: std::sync::Mutex<Vec<ModelResponse>>,
}

#[async_trait::async_trait]
impl Model for Recording {
    fn name(&self) -> &str {
        OfflineModel.name()
    }
    fn provenance(&self) -> harmonia_contracts::tool::Provenance {
        OfflineModel.provenance()
    }
    fn provider(&self) -> &'static str {
        OfflineModel.provider()
    }
    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, model::Error> {
        let answer = OfflineModel.generate(request).await?;
        self.turns.lock().expect("lock").push(answer.clone());
        Ok(answer)
    }
}

/// Replays one invocation's recorded turns, in order, for every invocation: it computes
/// nothing.
struct Replay {
    turns: Vec<ModelResponse>,
    next: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl Model for Replay {
    fn name(&self) -> &str {
        "scripted"
    }
    fn provenance(&self) -> harmonia_contracts::tool::Provenance {
        harmonia_contracts::tool::Provenance::Mock
    }
    fn provider(&self) -> &'static str {
        "harmonia.scripted"
    }
    async fn generate(&self, _request: &ModelRequest) -> Result<ModelResponse, model::Error> {
        let turn = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(self.turns[turn % self.turns.len()].clone())
    }
}

#[allow(clippy::print_stdout)] // A benchmark reports on stdout.
#[tokio::main(flavor = "current_thread")]
async fn main() {
    let iterations: usize = std::env::var("BENCH_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    let last = std::env::var("BENCH_MODEL").unwrap_or_else(|_| "scripted".into());
    let order = match last.as_str() {
        "offline" => ["scripted", "offline"],
        "scripted" => ["offline", "scripted"],
        other => panic!("BENCH_MODEL is offline or scripted, not {other}"),
    };
    // One invocation's turns, recorded from the offline model, for the scripted model to replay.
    let recording = Arc::new(Recording::default());
    measure(recording.clone(), 1).await;
    let turns = recording.turns.lock().expect("lock").clone();
    for mode in order {
        let model: Arc<dyn Model> = match mode {
            "offline" => Arc::new(OfflineModel),
            _ => Arc::new(Replay { turns: turns.clone(), next: std::sync::atomic::AtomicUsize::new(0) }),
        };
        let samples = measure(model, iterations).await;
        println!(
            "specialist invocation (nimi, {mode}, sqlite): n={} min={}us median={}us p99={}us",
            samples.len(),
            samples[0],
            percentile(&samples, 0.5),
            percentile(&samples, 0.99)
        );
        println!(
            "{}",
            serde_json::json!({"bench": "invocation", "model": mode, "p50_us": percentile(&samples, 0.5), "p99_us": percentile(&samples, 0.99), "n": samples.len()})
        );
    }
}

/// `iterations` invocations of Nimi with `model` (after 20 to warm up), sorted, in µs.
async fn measure(model: Arc<dyn Model>, iterations: usize) -> Vec<u128> {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(SqliteStore::open(dir.path().join("bench.sqlite")).expect("store"));
    let skills = Arc::new(SkillLibrary::configured().expect("skills"));
    let runtime = Runtime::new(model, store, skills);
    let workspace: WorkspaceId = "ws-bench".parse().expect("ws");
    let source = serde_json::from_str::<SourceInput>(SAMPLE)
        .expect("sample")
        .validate("src-bench".parse().expect("id"), workspace.clone(), Utc::now())
        .expect("valid");
    let input = NimiInput::new(&source, VerifiedPerformance::none(), EligibleMemory::none());
    let warm = if iterations == 1 { 0 } else { 20 };
    let mut samples = Vec::with_capacity(iterations);
    for n in 0..iterations + warm {
        let seed = InvocationSeed {
            workspace: workspace.clone(),
            user: "pipeline".parse().expect("user"),
            job: JobId::generate(),
            stage: Stage::Analyze,
            input: input.clone(),
            trace: TraceParent::new_root(),
            budget: None,
        };
        let start = Instant::now();
        runtime.invoke::<Nimi>(&seed).await.expect("invocation");
        if n >= warm {
            samples.push(start.elapsed().as_micros());
        }
    }
    samples.sort_unstable();
    samples
}
