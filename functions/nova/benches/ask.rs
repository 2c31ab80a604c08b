//! Load on `POST /v1/ask` over loopback with the offline model, open loop: requests start at a
//! fixed rate whatever the answers do (so a slow answer delays no later request, and its
//! latency counts from when it was due, not from when a client got round to sending it);
//! prints the rate achieved, p50 and p99 latency and the error count. A rate of 0 runs closed
//! loop instead: `BENCH_CLIENTS` clients, each sending its next request when its last is
//! answered, which measures the most the function serves.
//!
//! Run: `cargo bench -p harmonia-nova --bench ask` (`BENCH_RATE` requests per second, default
//! 1000; `BENCH_REQUESTS`, default 3000; `BENCH_CLIENTS` for a closed loop, default 8).

use std::sync::Arc;
use std::time::{Duration, Instant};

use harmonia_agents::Runtime;
use harmonia_agents::offline::OfflineModel;
use harmonia_agents::skills::SkillLibrary;
use harmonia_auth::{Credentials, Role, operators};
use harmonia_contracts::domain::{PostMetrics, WorkspaceConfig};
use harmonia_contracts::ids::WorkspaceId;
use harmonia_nova::{NovaState, app, with_tools};
use harmonia_pipeline::imports;
use harmonia_pipeline::records::{POST_METRICS, doc_id};
use harmonia_store::{Store, create_if_absent, encode};
use harmonia_store_sqlite::SqliteStore;

const QUESTIONS: [&str; 4] = [
    "What is trending about offline apps?",
    "How did our posts perform?",
    "When should we post next?",
    "What is pending in the feed?",
];

#[allow(clippy::print_stdout, clippy::cast_precision_loss)] // A benchmark reports on stdout.
#[tokio::main]
async fn main() {
    let setting = |name: &str, default: usize| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let (rate, requests, clients) =
        (setting("BENCH_RATE", 1000), setting("BENCH_REQUESTS", 3000), setting("BENCH_CLIENTS", 8));
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("nova.sqlite")).expect("store"));
    let ws: WorkspaceId = "ws-bench".parse().expect("ws");
    let config = WorkspaceConfig::from_toml(
        r#"
        name = "Bench"
        audience = "Readers"
        voice = "Plain"
        goals = ["Grow"]
        call_to_action = "Read more."
        mode = "development"
        [[channels]]
        platform = "x"
        handle = "@bench"
        "#,
    )
    .expect("config");
    harmonia_pipeline::workspace::init(&*store, &ws, config, &"bench".parse().expect("id")).await.expect("ws");
    let metrics: Vec<PostMetrics> =
        serde_json::from_str(include_str!("../../../examples/post-metrics.json")).expect("metrics");
    for m in &metrics {
        create_if_absent(&*store, &ws, POST_METRICS, &doc_id(&m.post), encode(m).expect("encode"))
            .await
            .expect("metric");
    }
    let signals = include_bytes!("../../../examples/trend-signals.json");
    imports::signals::import(&*store, &ws, signals, imports::Format::Json).await.expect("import");
    let skills = SkillLibrary::configured().expect("skills");
    let token =
        operators::add(&*store, &ws, &"bench".parse().expect("op"), Role::Operator, &"cli".parse().expect("op"))
            .await
            .expect("operator")
            .credential;
    let credentials = Credentials::new(store.clone());
    let runtime = with_tools(Runtime::new(Arc::new(OfflineModel), store, Arc::new(skills)));
    let state = NovaState { runtime: Arc::new(runtime), credentials: Arc::new(credentials) };
    let server = harmonia_testkit::spawn_app(app(state)).await;
    let url = format!("{server}/v1/ask");

    let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().expect("client");
    let ask = move |n: usize| {
        let (http, url, token) = (http.clone(), url.clone(), token.clone());
        async move {
            let body = serde_json::json!({ "question": QUESTIONS[n % QUESTIONS.len()] });
            match http.post(&url).bearer_auth(&token).json(&body).send().await {
                Ok(r) if r.status().is_success() => r.bytes().await.is_ok(),
                _ => false,
            }
        }
    };
    // Warm up: connections, caches, the first of each question.
    for n in 0..QUESTIONS.len() * 4 {
        ask(n).await;
    }
    let start = Instant::now();
    let mut tasks = Vec::new();
    if rate > 0 {
        let every = Duration::from_secs_f64(1.0 / rate as f64);
        for n in 0..requests {
            let due = tokio::time::Instant::from_std(start) + every * u32::try_from(n).unwrap_or(u32::MAX);
            tokio::time::sleep_until(due).await;
            let ask = ask.clone();
            tasks.push(tokio::spawn(async move {
                let ok = ask(n).await;
                (vec![due.elapsed()], usize::from(!ok))
            }));
        }
    } else {
        for c in 0..clients {
            let share = requests / clients + usize::from(c < requests % clients);
            let ask = ask.clone();
            tasks.push(tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(share);
                let mut errors = 0usize;
                for n in 0..share {
                    let t = Instant::now();
                    errors += usize::from(!ask(c + n).await);
                    latencies.push(t.elapsed());
                }
                (latencies, errors)
            }));
        }
    }
    let mut latencies = Vec::with_capacity(requests);
    let mut errors = 0;
    for t in tasks {
        let (l, e) = t.await.expect("client");
        latencies.extend(l);
        errors += e;
    }
    let elapsed = start.elapsed();
    latencies.sort_unstable();
    let at = |p: f64| latencies[((latencies.len() as f64 - 1.0) * p).round() as usize];
    let load = if rate > 0 { format!("open loop at {rate} req/s") } else { format!("{clients} clients, closed loop") };
    println!(
        "POST /v1/ask (offline model, sqlite, loopback): {} requests, {load}: {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, {errors} errors",
        latencies.len(),
        latencies.len() as f64 / elapsed.as_secs_f64(),
        at(0.5).as_secs_f64() * 1000.0,
        at(0.99).as_secs_f64() * 1000.0
    );
    // The last line, for scripts.
    let ms = |d: std::time::Duration| (d.as_secs_f64() * 100_000.0).round() / 100.0;
    println!(
        "{}",
        serde_json::json!({"bench": "nova", "req_per_s": (latencies.len() as f64 / elapsed.as_secs_f64()).round(),
            "p50_ms": ms(at(0.5)), "p99_ms": ms(at(0.99)), "errors": errors})
    );
}
