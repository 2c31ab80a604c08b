//! One specialist invocation with the offline model, end to end through the runtime:
//! session create → model loop (skill and reference loads) → schema and semantic validation →
//! `state_delta` → session delete → activity record, over a SQLite store.
//!
//! Run: `cargo bench -p harmonia-agents --bench invocation` (prints min/median/p99 in µs).

use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use harmonia_agents::eligibility::{EligibleMemory, VerifiedPerformance};
use harmonia_agents::io::{NimiInput, RoleInput};
use harmonia_agents::offline::OfflineModel;
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

#[allow(clippy::print_stdout)] // A benchmark reports on stdout.
#[tokio::main(flavor = "current_thread")]
async fn main() {
    let iterations: usize = std::env::var("BENCH_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(SqliteStore::open(dir.path().join("bench.sqlite")).expect("store"));
    let skills = Arc::new(SkillLibrary::configured().expect("skills"));
    let runtime = Runtime::new(Arc::new(OfflineModel), store, skills);
    let workspace: WorkspaceId = "ws-bench".parse().expect("ws");
    let source = serde_json::from_str::<SourceInput>(SAMPLE)
        .expect("sample")
        .validate("src-bench".parse().expect("id"), workspace.clone(), Utc::now())
        .expect("valid");
    let input = RoleInput::Nimi(NimiInput::new(&source, VerifiedPerformance::none(), EligibleMemory::none()));
    let mut samples = Vec::with_capacity(iterations);
    for n in 0..iterations + 20 {
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
        runtime.invoke(&seed).await.expect("invocation");
        if n >= 20 {
            samples.push(start.elapsed().as_micros());
        }
    }
    samples.sort_unstable();
    println!(
        "specialist invocation (nimi, offline, sqlite): n={} min={}us median={}us p99={}us",
        samples.len(),
        samples[0],
        percentile(&samples, 0.5),
        percentile(&samples, 0.99)
    );
    // The last line, for scripts.
    println!(
        "{}",
        serde_json::json!({"bench": "invocation", "p50_us": percentile(&samples, 0.5), "p99_us": percentile(&samples, 0.99), "n": samples.len()})
    );
}
