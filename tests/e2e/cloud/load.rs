//! The load and fault run of `./infra/bench-cloud.sh`: many jobs at once through the deployed
//! shape (every function its own process, Pub/Sub push, Firestore), optionally with function
//! processes killed under it, and what a job costs.
//!
//! `BENCH_CLOUD_JOBS` sources (default 100) are submitted at once over the operator API; a
//! driver decides both gates over the API and publishes each approved post now, as soon as it
//! sees the job waiting; every post goes to the sandbox and is verified. The functions export
//! their metrics over OTLP to a collector in this process: the Firestore documents and queries
//! they ask for (`harmonia.firestore.*`, counted at the store boundary as Firestore bills
//! them), the Pub/Sub messages they publish and receive (`harmonia.pubsub.*`), and the time
//! each instance had a request in flight (`harmonia.instance.busy`), which
//! `infra/prices.toml` turns into a cost per 1,000 jobs. With `BENCH_CLOUD_CHAOS=1` a random
//! function process is killed (SIGKILL) every `BENCH_CLOUD_CHAOS_SECS` seconds (default 3)
//! and started again on its port, as Cloud Run starts a new instance; each function is reached
//! through a [`Front`] that, like a Cloud Run service's address, holds requests while its
//! process starts and answers 503 for those a killed process took with it.
//!
//! A job's latency runs from its creation to its verification, both as stored, less the time
//! it waited for the operator: from the moment it entered a gate (as stored) to the decision's
//! stored time. The run asserts that every job is verified, with one publication and one
//! sandbox post each, and that no dead letter holds a message that was not poison. It ends
//! with one line, `{"bench":"cloud_load",...}`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use chrono::{DateTime, Utc};
use harmonia_contracts::domain::{
    ApprovalSubject, Job, JobStatus, Publication, Schedule, ScheduleAction, VerificationOutcome,
};
use harmonia_contracts::ids::JobId;
use harmonia_pipeline::records::{DEAD_LETTERS, JOBS, PUBLICATIONS, SCHEDULES, doc_id};
use harmonia_store::Store as _;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point};
use prost::Message as _;
use serde::Deserialize;

use super::{Cloud, cloud_fronted};
use harmonia_client::api::{NewSource, SourceFormat};
use harmonia_contracts::Code;

/// How long the run waits for any job to move before it stops and names the jobs that did not:
/// past the job watch's first two re-drives of a stuck job (at 60 and 120 s with the run's 20 s
/// lease).
const STILL: Duration = Duration::from_secs(300);

/// What the run is asked to do.
struct Plan {
    jobs: usize,
    chaos: Option<Duration>,
    seed: u64,
}

impl Plan {
    fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let number = |name: &str, default: u64| {
            var(name).map_or(default, |v| v.parse().unwrap_or_else(|_| panic!("{name} must be a whole number")))
        };
        let jobs = usize::try_from(number("BENCH_CLOUD_JOBS", 100)).expect("a job count");
        assert!(jobs > 0, "BENCH_CLOUD_JOBS must be at least 1");
        let chaos = match var("BENCH_CLOUD_CHAOS").as_deref() {
            None | Some("0") => None,
            Some("1") => Some(Duration::from_secs(number("BENCH_CLOUD_CHAOS_SECS", 3).max(1))),
            Some(_) => panic!("BENCH_CLOUD_CHAOS must be 0 or 1"),
        };
        let seed = number("BENCH_CLOUD_SEED", u64::from(std::process::id()));
        Self { jobs, chaos, seed }
    }
}

// ---- the front

/// What stands before a function's processes, as a Cloud Run service's address does: it stays
/// up while the process behind it is killed and started again, holds each request until a
/// process answers (as Cloud Run holds requests through an instance's start, here for up to
/// 60 s), and answers 503 for a request whose process died under it (Pub/Sub redelivers).
/// Without it, Pub/Sub's pushes to a port no process holds are refused at once, again and
/// again, and spend a message's delivery attempts in a second.
pub(super) struct Front;

impl Front {
    /// Serve a front for the function at `backend` on a free local port; its base URL.
    pub(super) async fn start(backend: &str) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port for the front");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let backend = backend.to_owned();
        let http = reqwest::Client::new();
        let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
            let (backend, http) = (backend.clone(), http.clone());
            async move { Self::pass(&http, &backend, request).await }
        });
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }

    async fn pass(http: &reqwest::Client, backend: &str, request: axum::extract::Request) -> axum::response::Response {
        use axum::response::IntoResponse as _;
        let unavailable = || axum::http::StatusCode::SERVICE_UNAVAILABLE.into_response();
        let (parts, body) = request.into_parts();
        let Ok(body) = axum::body::to_bytes(body, 64 * 1024 * 1024).await else { return unavailable() };
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        let give_up = Instant::now() + Duration::from_secs(60);
        loop {
            let mut forward = http.request(parts.method.clone(), format!("{backend}{path}")).body(body.clone());
            for (name, value) in &parts.headers {
                if name != axum::http::header::HOST && name != axum::http::header::CONTENT_LENGTH {
                    forward = forward.header(name, value);
                }
            }
            match forward.send().await {
                Ok(answer) => {
                    let mut response = axum::http::Response::builder().status(answer.status());
                    for (name, value) in answer.headers() {
                        if name != axum::http::header::TRANSFER_ENCODING && name != axum::http::header::CONNECTION {
                            response = response.header(name, value);
                        }
                    }
                    let Ok(bytes) = answer.bytes().await else { return unavailable() };
                    return response.body(axum::body::Body::from(bytes)).unwrap_or_else(|_| unavailable());
                }
                // No process yet: wait for the one starting, as Cloud Run does.
                Err(e) if e.is_connect() && Instant::now() < give_up => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                // The process died with the request (or never came back).
                Err(_) => return unavailable(),
            }
        }
    }
}

// ---- the collector

/// One exported series: the process (its service name and start), the metric, its labels.
type Series = (String, u64, String, BTreeMap<String, String>);

/// An OTLP/HTTP metrics receiver keeping each series' latest cumulative value, so a process
/// killed and started again counts as two (each from its own start).
#[derive(Clone, Default)]
struct Collector {
    series: Arc<Mutex<HashMap<Series, f64>>>,
}

fn text(value: Option<&AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        _ => String::new(),
    }
}

fn labels(attributes: &[KeyValue]) -> BTreeMap<String, String> {
    attributes.iter().map(|kv| (kv.key.clone(), text(kv.value.as_ref()))).collect()
}

impl Collector {
    /// Serve it on a free local port; its base URL (for `HARMONIA_OTLP_ENDPOINT`).
    async fn start(&self) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port for the collector");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let me = self.clone();
        let app = axum::Router::new()
            .route(
                "/v1/metrics",
                axum::routing::post(move |body: Bytes| {
                    let me = me.clone();
                    async move {
                        me.take(&body);
                        axum::http::StatusCode::OK
                    }
                }),
            )
            .fallback(|| async { axum::http::StatusCode::OK });
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }

    fn take(&self, body: &[u8]) {
        let Ok(request) = ExportMetricsServiceRequest::decode(body) else { return };
        let mut series = self.series.lock().expect("lock");
        for resource in &request.resource_metrics {
            let service = resource
                .resource
                .as_ref()
                .map(|r| labels(&r.attributes).remove("service.name").unwrap_or_default())
                .unwrap_or_default();
            for scope in &resource.scope_metrics {
                for m in &scope.metrics {
                    let mut put = |start: u64, attributes: &[KeyValue], value: f64| {
                        series.insert((service.clone(), start, m.name.clone(), labels(attributes)), value);
                    };
                    match &m.data {
                        Some(metric::Data::Sum(sum)) => {
                            for p in &sum.data_points {
                                let value = match p.value {
                                    Some(number_data_point::Value::AsInt(i)) => i as f64,
                                    Some(number_data_point::Value::AsDouble(d)) => d,
                                    None => 0.0,
                                };
                                put(p.start_time_unix_nano, &p.attributes, value);
                            }
                        }
                        // Histograms (the model's token usage): their sum.
                        Some(metric::Data::Histogram(h)) => {
                            for p in &h.data_points {
                                put(p.start_time_unix_nano, &p.attributes, p.sum.unwrap_or(0.0));
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    /// The sum of `metric` over every process, where its labels satisfy `pick`.
    fn total(&self, metric: &str, pick: impl Fn(&BTreeMap<String, String>) -> bool) -> f64 {
        let series = self.series.lock().expect("lock");
        series.iter().filter(|((_, _, name, l), _)| name == metric && pick(l)).map(|(_, v)| v).sum()
    }

    fn totals(&self) -> Totals {
        let firestore = |op: &str| self.total("harmonia.firestore.documents", |l| l["operation"] == op);
        let pubsub = |metric: &str, direction: &str| self.total(metric, |l| l["direction"] == direction);
        let tokens = |kind: &str| {
            self.total("gen_ai.client.token.usage", |l| l.get("gen_ai.token.type").is_some_and(|t| t == kind))
        };
        Totals(BTreeMap::from([
            ("reads", firestore("read")),
            ("writes", firestore("write")),
            ("deletes", firestore("delete")),
            ("queries", self.total("harmonia.firestore.queries", |_| true)),
            ("published", pubsub("harmonia.pubsub.messages", "published")),
            ("delivered", pubsub("harmonia.pubsub.messages", "delivered")),
            ("published_bytes", pubsub("harmonia.pubsub.bytes", "published")),
            ("delivered_bytes", pubsub("harmonia.pubsub.bytes", "delivered")),
            ("requests", self.total("harmonia.http.requests", |_| true)),
            ("busy", self.total("harmonia.instance.busy", |_| true)),
            ("input_tokens", tokens("input")),
            ("output_tokens", tokens("output")),
        ]))
    }

    /// Per job, `metric`'s totals by the label `by` (and `operation` first, where there is one),
    /// largest first: where the operations go.
    fn breakdown(&self, metric: &str, by: &str, jobs: f64) -> String {
        let mut sums: BTreeMap<String, f64> = BTreeMap::new();
        for ((_, _, name, l), v) in self.series.lock().expect("lock").iter() {
            if name == metric {
                let key = match (l.get("operation").or_else(|| l.get("direction")), l.get(by)) {
                    (Some(op), Some(b)) => format!("{op} {b}"),
                    (None, Some(b)) => b.clone(),
                    (Some(op), None) => op.clone(),
                    (None, None) => continue,
                };
                *sums.entry(key).or_default() += v;
            }
        }
        let mut sums: Vec<(String, f64)> = sums.into_iter().collect();
        sums.sort_by(|a, b| b.1.total_cmp(&a.1));
        sums.iter().map(|(k, v)| format!("{k} {:.1}", v / jobs)).collect::<Vec<_>>().join(", ")
    }

    /// The totals once they have stayed the same for three export intervals (the functions
    /// export every second, and a process with nothing new to count may not export at all).
    async fn settled(&self) -> Totals {
        let mut last = self.totals();
        let mut quiet = 0;
        while quiet < 3 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let now = self.totals();
            quiet = if now == last { quiet + 1 } else { 0 };
            last = now;
        }
        last
    }
}

/// What the functions counted, summed over every process, by name: Firestore `reads`,
/// `writes`, `deletes` and `queries`, Pub/Sub messages and bytes `published` and `delivered`,
/// Cloud Run `requests` and `busy` seconds, the model's `input_tokens` and `output_tokens`.
#[derive(Clone, Debug, Default, PartialEq)]
struct Totals(BTreeMap<&'static str, f64>);

impl Totals {
    fn get(&self, name: &str) -> f64 {
        self.0.get(name).copied().unwrap_or_default()
    }
}

impl std::ops::Sub for Totals {
    type Output = Totals;
    fn sub(self, earlier: Totals) -> Totals {
        Totals(self.0.iter().map(|(k, v)| (*k, v - earlier.get(k))).collect())
    }
}

// ---- prices

/// `infra/prices.toml`.
#[derive(Deserialize)]
struct Prices {
    as_of: String,
    firestore: FirestorePrices,
    pubsub: PubSubPrices,
    cloud_run: CloudRunPrices,
    model: ModelPrices,
}

#[derive(Deserialize)]
struct FirestorePrices {
    read_per_100k: f64,
    write_per_100k: f64,
    delete_per_100k: f64,
}

#[derive(Deserialize)]
struct PubSubPrices {
    per_tib: f64,
    minimum_request_bytes: f64,
}

#[derive(Deserialize)]
struct CloudRunPrices {
    vcpu_second: f64,
    gib_second: f64,
    per_million_requests: f64,
    vcpu: f64,
    memory_gib: f64,
}

#[derive(Deserialize)]
struct ModelPrices {
    name: String,
    input_per_million: f64,
    output_per_million: f64,
}

/// Dollars for what `t` counted, per service: (Firestore, Pub/Sub, Cloud Run, model).
fn cost(prices: &Prices, t: &Totals) -> (f64, f64, f64, f64) {
    let f = &prices.firestore;
    let firestore =
        (t.get("reads") * f.read_per_100k + t.get("writes") * f.write_per_100k + t.get("deletes") * f.delete_per_100k)
            / 100_000.0;
    let p = &prices.pubsub;
    // Each message is its own request; each is billed at least the minimum.
    let billable = |bytes: f64, messages: f64| bytes.max(messages * p.minimum_request_bytes);
    let volume =
        billable(t.get("published_bytes"), t.get("published")) + billable(t.get("delivered_bytes"), t.get("delivered"));
    let pubsub = volume / 1024f64.powi(4) * p.per_tib;
    let c = &prices.cloud_run;
    let cloud_run = t.get("busy") * (c.vcpu * c.vcpu_second + c.memory_gib * c.gib_second)
        + t.get("requests") * c.per_million_requests / 1e6;
    let m = &prices.model;
    let model = (t.get("input_tokens") * m.input_per_million + t.get("output_tokens") * m.output_per_million) / 1e6;
    (firestore, pubsub, cloud_run, model)
}

// ---- the driver

/// When a job entered a gate, and when the operator's decision there was stored.
type Wait = (DateTime<Utc>, Option<DateTime<Utc>>);

/// A job's times as stored: created, each gate's wait (by status and round), verified.
#[derive(Default)]
struct Times {
    created: Option<DateTime<Utc>>,
    waited: HashMap<(JobStatus, u8), Wait>,
    verified: Option<DateTime<Utc>>,
}

impl Times {
    /// Creation to verification less the operator's think time.
    fn latency(&self) -> Option<Duration> {
        let total = (self.verified? - self.created?).to_std().ok()?;
        let think: Duration = self
            .waited
            .values()
            .filter_map(|(entered, decided)| decided.and_then(|d| (d - *entered).to_std().ok()))
            .sum();
        Some(total.saturating_sub(think))
    }
}

/// A small, seeded generator for the chaos schedule (reproducible with `BENCH_CLOUD_SEED`).
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        usize::try_from(self.0 % u64::try_from(n).expect("n")).expect("index")
    }
}

/// Try `call` until it answers, through the kills of the run; `None` when the job had moved on.
async fn through<T, F, Fut>(what: String, mut call: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, harmonia_contracts::Error>>,
{
    harmonia_testkit::eventually(what, || {
        let attempt = call();
        async move {
            match attempt.await {
                Ok(v) => Ok(Some(v)),
                // Decided or published by an earlier attempt whose answer was lost, or the
                // job has moved on: nothing left to do here.
                Err(e) if e.code == Code::InvalidTransition => Ok(None),
                Err(e) => Err(e.to_string()),
            }
        }
    })
    .await
}

/// Act on the job at `status` as the operator does: approve the gate's version, or publish
/// the scheduled post now. The decision's stored time.
async fn act(client: &harmonia_client::Client, job: &JobId, status: JobStatus) -> Option<DateTime<Utc>> {
    if status == JobStatus::Scheduled {
        let reply = through(format!("publish {job} now"), || client.publish_now(job)).await?;
        return reply.schedule.decisions.last().map(|d| d.decided_at);
    }
    let subject = match status {
        JobStatus::AwaitingStrategyApproval => ApprovalSubject::Strategy,
        _ => ApprovalSubject::Draft,
    };
    let view = through(format!("read {job}"), || client.job(job)).await?;
    if view.job.status != status {
        return None;
    }
    let version = view.awaiting_version?;
    let reply = through(format!("approve {job}"), || client.approve(job, subject, &version)).await?;
    Some(reply.approval.decided_at)
}

/// Benchmark, not a test (nothing is asserted about time or cost): the load run of
/// `./infra/bench-cloud.sh`, as `BENCH_CLOUD_JOBS`, `BENCH_CLOUD_CHAOS` and
/// `BENCH_CLOUD_CHAOS_SECS` ask.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a benchmark; run ./infra/bench-cloud.sh"]
async fn bench_cloud_load() {
    let report = load(Plan::from_env()).await;
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("{report}\n").as_bytes());
}

/// The load run on a few jobs: every job verified once, and what each cost counted where the
/// functions ask for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_few_jobs_at_once_are_each_verified_once_and_their_operations_counted() {
    let report = load(Plan { jobs: 3, chaos: None, seed: 1 }).await;
    let per_job = |key: &str| report[key].as_f64().unwrap_or_else(|| panic!("{key} in {report}"));
    assert_eq!((report["verified_once"].as_u64(), report["duplicate_posts"].as_u64()), (Some(3), Some(0)), "{report}");
    // Each job's events are published once and each subscribed one delivered once (no kills,
    // no redelivery): the gates' and the end's events have no subscription.
    let (published, delivered) = (per_job("pubsub_messages_per_job"), per_job("pubsub_deliveries_per_job"));
    assert!(published >= 10.0 && delivered >= 7.0 && published > delivered, "{report}");
    // A commit reads what it writes, so there are more reads than writes; every job writes and
    // deletes (its claims) and queries.
    let (reads, writes) = (per_job("firestore_reads_per_job"), per_job("firestore_writes_per_job"));
    assert!(reads > writes && writes >= 20.0, "{report}");
    assert!(per_job("firestore_deletes_per_job") >= 1.0 && per_job("firestore_queries_per_job") >= 1.0, "{report}");
    // Every push and API call is a request of some instance, which was busy for a while.
    assert!(per_job("cloud_run_requests_per_job") >= delivered + 3.0, "{report}");
    assert!(per_job("cloud_run_busy_s_per_job") > 0.0 && per_job("usd_per_1000_jobs") > 0.0, "{report}");
    // The deployed dispatcher ran its job watch (its first tick's check: no earlier one).
    assert!(report["watch_checks"].as_u64() >= Some(1), "{report}");
}

/// Run `plan`; asserts that every job was verified once with one post and no dead letter but
/// poison, and returns the report (the `{"bench":"cloud_load",...}` line), having printed the
/// sentence and the breakdown of the operations before it.
async fn load(plan: Plan) -> serde_json::Value {
    let prices: Prices =
        toml::from_str(include_str!("../../../infra/prices.toml")).expect("infra/prices.toml is a price table");
    let collector = Collector::default();
    let otlp = collector.start().await;
    let project = harmonia_testkit::unique("load");
    // A killed step's claim lapses after 20 s, inside the retries of the emulator run's
    // subscriptions (`EMULATOR`: 10 attempts, 1 s to 5 s apart, 37 s in all), as the
    // deployment's 300 s lease lapses inside its retries' 40 minutes.
    let extra = [
        ("HARMONIA_OTLP_ENDPOINT", otlp.as_str()),
        ("HARMONIA_TRACE_EXPORTER", "none"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "1000"),
        ("HARMONIA_STEP_LEASE_SECS", "20"),
    ];
    let mut cloud: Cloud = cloud_fronted(&project, &extra, 0, true).await;
    let before = collector.settled().await;
    let started = Instant::now();
    let said = |line: String| {
        let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("{line}\n").as_bytes());
    };

    // The chaos: a random function killed and started again, every few seconds.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let dispatch_url = cloud.functions["dispatch"].url.clone();
    let mut functions = std::mem::take(&mut cloud.functions);
    let chaos = {
        let (stop, plan_chaos, seed) = (stop.clone(), plan.chaos, plan.seed);
        tokio::spawn(async move {
            let mut kills: Vec<String> = Vec::new();
            if let Some(every) = plan_chaos {
                let mut names: Vec<String> = functions.keys().cloned().collect();
                names.sort();
                let mut random = XorShift(seed.max(1));
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    tokio::time::sleep(every).await;
                    let victim = &names[random.below(names.len())];
                    let process = functions.get_mut(victim).expect("a function");
                    process.kill().await;
                    process.restart().await;
                    kills.push(victim.clone());
                }
            }
            (functions, kills)
        })
    };

    // Cloud Scheduler: the dispatcher ticks every few seconds (every minute deployed; its job
    // watch checks once a lease, 20 s here), and the run counts what the watch re-drove.
    let watched: Arc<Mutex<(u64, u64)>> = Arc::default();
    let scheduler = {
        let (stop, watched, http, token) = (stop.clone(), watched.clone(), cloud.http.clone(), cloud.token.clone());
        let url = format!("{}/dispatch", dispatch_url);
        tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                if let Ok(answer) = http.post(&url).bearer_auth(&token).send().await
                    && let Ok(tick) = answer.json::<serde_json::Value>().await
                {
                    let mut counts = watched.lock().expect("lock");
                    counts.0 += u64::from(tick["watched"].as_bool().unwrap_or(false));
                    counts.1 += tick["redriven"].as_u64().unwrap_or(0);
                }
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        })
    };

    // Every source at once, each with its own idempotency key (a submit retried across a kill
    // of the ingest function makes no second job).
    let ingest = cloud.ingest.clone();
    let submits = (0..plan.jobs).map(|i| {
        let ingest = ingest.clone();
        async move {
            let source = NewSource {
                format: SourceFormat::Json,
                content: super::SAMPLE.to_owned(),
                title: Some(format!("Load {i}")),
                language: None,
            };
            let key = format!("load-{i}");
            through(format!("submit source {i}"), || ingest.submit(&source, Some(&key)))
                .await
                .expect("submitted")
                .job
                .id
        }
    });
    let ids: Vec<JobId> = futures::future::join_all(submits).await;
    let ours: HashSet<JobId> = ids.iter().cloned().collect();
    assert_eq!(ours.len(), plan.jobs, "one job per source");
    said(format!("cloud load: {} jobs submitted in {:.1} s", plan.jobs, started.elapsed().as_secs_f64()));

    // The operator: watch the jobs (read straight from the emulator, outside what is counted)
    // and act at each gate over the API.
    let times: Arc<Mutex<HashMap<JobId, Times>>> = Arc::default();
    let mut acting: HashSet<(JobId, JobStatus, u8)> = HashSet::new();
    let mut tasks = tokio::task::JoinSet::new();
    let mut last_report = Instant::now();
    let (mut last_seen, mut last_move): (Vec<(JobId, JobStatus)>, Instant) = (Vec::new(), Instant::now());
    let ended: Vec<Job> = loop {
        let jobs: Vec<Job> = harmonia_store::scan_all(&cloud.store, &cloud.ws, JOBS)
            .await
            .expect("read the jobs")
            .iter()
            .filter_map(|d| d.decode::<Job>().ok())
            .filter(|j| ours.contains(&j.id))
            .collect();
        let mut done = Vec::new();
        for job in &jobs {
            let mut all = times.lock().expect("lock");
            let t = all.entry(job.id.clone()).or_default();
            t.created = Some(job.created_at);
            let waiting = matches!(
                job.status,
                JobStatus::AwaitingStrategyApproval | JobStatus::AwaitingDraftApproval | JobStatus::Scheduled
            );
            let key = (job.id.clone(), job.status, job.round.get());
            if waiting && acting.insert(key) {
                t.waited.insert((job.status, job.round.get()), (job.updated_at, None));
                let (client, times, id, status, round) =
                    (cloud.operator.clone(), times.clone(), job.id.clone(), job.status, job.round.get());
                tasks.spawn(async move {
                    let decided = act(&client, &id, status).await;
                    if let Some(t) = times.lock().expect("lock").get_mut(&id)
                        && let Some(w) = t.waited.get_mut(&(status, round))
                    {
                        w.1 = decided;
                    }
                });
            }
            if job.status.is_terminal() {
                if job.status == JobStatus::Verified {
                    t.verified = Some(job.updated_at);
                }
                done.push(job.clone());
            }
        }
        while tasks.try_join_next().is_some() {}
        if done.len() == plan.jobs {
            break done;
        }
        if last_report.elapsed() >= Duration::from_secs(10) {
            said(format!(
                "cloud load: {} of {} jobs done after {:.0} s",
                done.len(),
                plan.jobs,
                started.elapsed().as_secs_f64()
            ));
            last_report = Instant::now();
        }
        // Jobs that have stopped moving: a message the run lost. Say which, and where they stand.
        let moved: Vec<(JobId, JobStatus)> = jobs.iter().map(|j| (j.id.clone(), j.status)).collect();
        if moved != last_seen {
            (last_seen, last_move) = (moved, Instant::now());
        }
        if last_move.elapsed() > STILL {
            let stuck: Vec<String> = jobs
                .iter()
                .filter(|j| !j.status.is_terminal())
                .map(|j| format!("{} {} since {}", j.id, j.status, j.updated_at.format("%H:%M:%S")))
                .collect();
            panic!(
                "{} of {} jobs have not moved for {} s: {stuck:?} (the Pub/Sub emulator's log says what became of their events)",
                stuck.len(),
                plan.jobs,
                STILL.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    while tasks.join_next().await.is_some() {}
    let wall = started.elapsed();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let (functions, kills) = chaos.await.expect("the chaos task");
    scheduler.await.expect("the scheduler task");
    let (checks, redriven) = *watched.lock().expect("lock");
    cloud.functions = functions;
    let counted = collector.settled().await - before;

    // Every job verified exactly once: one publication each, verified, one sandbox post each.
    let failed: Vec<String> =
        ended.iter().filter(|j| j.status != JobStatus::Verified).map(|j| format!("{} {}", j.id, j.status)).collect();
    assert!(failed.is_empty(), "jobs that did not end verified: {failed:?}");
    let publications: Vec<Publication> = harmonia_store::scan_all(&cloud.store, &cloud.ws, PUBLICATIONS)
        .await
        .expect("publications")
        .iter()
        .map(|d| d.decode().expect("a publication"))
        .collect();
    let mut per_job: HashMap<&JobId, usize> = HashMap::new();
    for p in &publications {
        *per_job.entry(&p.job).or_default() += 1;
        let verified =
            matches!(p.verification.as_ref().map(|v| &v.outcome), Some(VerificationOutcome::Verified { .. }));
        assert!(verified, "publication of {} not verified: {:?}", p.job, p.verification);
    }
    assert!(ids.iter().all(|j| per_job.get(j) == Some(&1)), "one publication per job: {per_job:?}");
    assert_eq!(publications.len(), plan.jobs, "no publication beyond one per job");
    let posts = harmonia_connectors::Sandbox::new(Arc::new(cloud.store.clone())).posts(&cloud.ws).await.expect("posts");
    assert_eq!(posts, plan.jobs, "one sandbox post per job, none twice");
    let system = harmonia_pipeline::steps::system_workspace();
    let mut letters = harmonia_store::scan_all(&cloud.store, &cloud.ws, DEAD_LETTERS).await.expect("dead letters");
    letters.extend(harmonia_store::scan_all(&cloud.store, &system, DEAD_LETTERS).await.expect("dead letters"));
    let not_poison: Vec<String> = letters
        .iter()
        .map(|d| d.decode::<harmonia_pipeline::records::DeadLetter>().expect("a dead letter"))
        .filter(|l| !is_poison(l))
        .map(|l| l.source_subscription)
        .collect();
    assert!(not_poison.is_empty(), "dead letters that were not poison, from: {not_poison:?}");

    // A publish-now whose answer a kill lost answers `invalid_transition` when sent again: its
    // decision's time is the one stored with the schedule.
    for id in &ids {
        let unknown = times.lock().expect("lock").get(id).is_some_and(|t| {
            t.waited.iter().any(|((status, _), (_, decided))| *status == JobStatus::Scheduled && decided.is_none())
        });
        if unknown {
            let stored = cloud.store.get(&cloud.ws, SCHEDULES, &doc_id(id)).await.expect("read the schedule");
            let schedule: Schedule = stored.expect("a schedule").decode().expect("a schedule");
            let decided = schedule.decisions.iter().rev().find(|d| d.action == ScheduleAction::PublishNow);
            let mut all = times.lock().expect("lock");
            for ((status, _), wait) in all.get_mut(id).expect("times").waited.iter_mut() {
                if *status == JobStatus::Scheduled && wait.1.is_none() {
                    wait.1 = decided.map(|d| d.decided_at);
                }
            }
        }
    }

    // The report.
    let mut latencies: Vec<Duration> = {
        let all = times.lock().expect("lock");
        ids.iter().map(|j| all.get(j).and_then(Times::latency).expect("a verified job's times")).collect()
    };
    latencies.sort_unstable();
    let pct = |p: f64| {
        let at = ((p / 100.0) * latencies.len() as f64).ceil() as usize;
        latencies[at.clamp(1, latencies.len()) - 1].as_secs_f64() * 1000.0
    };
    let n = plan.jobs as f64;
    let per_job = |v: f64| (v / n * 100.0).round() / 100.0;
    let (firestore, pubsub, cloud_run, model) = cost(&prices, &counted);
    let per_1000 = |usd: f64| (usd / n * 1000.0 * 10_000.0).round() / 10_000.0;
    let report = serde_json::json!({
        "bench": "cloud_load",
        "jobs": plan.jobs,
        "chaos": plan.chaos.is_some(),
        "kills": kills.len(),
        "seed": plan.seed,
        "wall_s": (wall.as_secs_f64() * 10.0).round() / 10.0,
        "jobs_per_s": (n / wall.as_secs_f64() * 1000.0).round() / 1000.0,
        "p50_ms": pct(50.0).round(),
        "p95_ms": pct(95.0).round(),
        "p99_ms": pct(99.0).round(),
        "verified_once": plan.jobs,
        "duplicate_posts": posts - plan.jobs,
        "dead_letters": letters.len(),
        "watch_checks": checks,
        "redriven": redriven,
        "pubsub_messages_per_job": per_job(counted.get("published")),
        "pubsub_deliveries_per_job": per_job(counted.get("delivered")),
        "firestore_reads_per_job": per_job(counted.get("reads")),
        "firestore_writes_per_job": per_job(counted.get("writes")),
        "firestore_deletes_per_job": per_job(counted.get("deletes")),
        "firestore_queries_per_job": per_job(counted.get("queries")),
        "cloud_run_requests_per_job": per_job(counted.get("requests")),
        "cloud_run_busy_s_per_job": (counted.get("busy") / n * 1000.0).round() / 1000.0,
        "usd_per_1000_jobs": per_1000(firestore + pubsub + cloud_run),
        "usd_per_1000_jobs_firestore": per_1000(firestore),
        "usd_per_1000_jobs_pubsub": per_1000(pubsub),
        "usd_per_1000_jobs_cloud_run": per_1000(cloud_run),
        "model_usd_per_1000_jobs": per_1000(model),
        "model": prices.model.name,
        "prices_as_of": prices.as_of,
    });
    let mut killed: BTreeMap<&str, usize> = BTreeMap::new();
    kills.iter().for_each(|k| *killed.entry(k.as_str()).or_default() += 1);
    said(format!(
        "cloud load: {} jobs verified in {:.1} s ({} function kills: {killed:?}; the job watch checked {checks} times and re-drove {redriven} jobs); per job: p50 {} ms, p95 {} ms, p99 {} ms from submit to verified (operator's think time excluded); {} Pub/Sub messages, {} Firestore reads, {} writes, {} deletes, {} queries; ${} per 1,000 jobs at the prices of {} (model apart: ${} for {})",
        plan.jobs,
        wall.as_secs_f64(),
        kills.len(),
        report["p50_ms"],
        report["p95_ms"],
        report["p99_ms"],
        report["pubsub_messages_per_job"],
        report["firestore_reads_per_job"],
        report["firestore_writes_per_job"],
        report["firestore_deletes_per_job"],
        report["firestore_queries_per_job"],
        report["usd_per_1000_jobs"],
        report["prices_as_of"].as_str().unwrap_or_default(),
        report["model_usd_per_1000_jobs"],
        report["model"].as_str().unwrap_or_default(),
    ));
    for (metric, by) in [
        ("harmonia.firestore.documents", "collection"),
        ("harmonia.firestore.queries", "collection"),
        ("harmonia.pubsub.messages", "topic"),
        ("harmonia.pubsub.messages", "subscription"),
    ] {
        said(format!("cloud load: {metric} per job by {by}: {}", collector.breakdown(metric, by, n)));
    }
    report
}

/// A dead letter whose message no stage could ever take: not a pipeline event at all.
fn is_poison(letter: &harmonia_pipeline::records::DeadLetter) -> bool {
    use base64::Engine as _;
    let Ok(data) = base64::engine::general_purpose::STANDARD.decode(&letter.data) else { return true };
    let event = serde_json::from_slice::<serde_json::Value>(&data).unwrap_or_default();
    !["schema_version", "topic", "job"].iter().all(|k| event.get(k).is_some())
}
