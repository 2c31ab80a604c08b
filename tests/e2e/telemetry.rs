//! Telemetry end to end, through the process-wide subscriber with in-memory exporters.
//!
//! - The canary: distinctive markers are placed in a source transcript, a model response, a
//!   draft, the webhook signing secret and an operator credential. After a full pipeline run
//!   and one failing invocation, none of them appears in any log line (text and Cloud Logging
//!   JSON), exported span (names, attributes, events), metric label, activity record, failure
//!   record, dead letter or error body.
//! - One tree: a job's exported spans — its stages, agent invocations, model calls, tools, the
//!   events between stages and both human decisions — form a single trace tree, named and
//!   attributed by the OpenTelemetry GenAI and messaging conventions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use harmonia_agents::model::{self, Model, ModelRequest, ModelResponse, Part};
use harmonia_auth::{Credentials, operators};
use harmonia_connectors::{SigningKey, Webhook};
use harmonia_contracts::Code;
use harmonia_contracts::Role;
use harmonia_contracts::domain::{Job, JobStatus, SourceInput};
use harmonia_contracts::ids::{JobId, WorkspaceId};
use harmonia_contracts::tool::Provenance;
use harmonia_local::{Local, Wrap};
use harmonia_pipeline::records::{ACTIVITY, DEAD_LETTERS, JOBS};
use harmonia_pipeline::registry::Timing;
use harmonia_pipeline::steps::ingest;
use harmonia_store::{Collection, Query, Store};
use harmonia_testkit::{Spawned, spawn_app};
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt;

const TRANSCRIPT: &str = "CANARY-TRANSCRIPT-7f3a";
const MODEL: &str = "CANARY-MODEL-91c2";
const DRAFT: &str = "CANARY-DRAFT-3b9e";
const SECRET: &str = "CANARY-SECRET-55aa";
const BAD_CREDENTIAL: &str = "hop_CANARY-BADCRED-6c2f";
const FAIL_TRIGGER: &str = "CANARY-FAILJOB";

const FAST: Timing = Timing::quick(Duration::from_secs(5));

/// The offline model presented as a live backend, except that Noni's drafts carry the draft
/// marker and Ryan answers a malformed, marker-laden response when the source is the failing
/// one.
struct Canary(Arc<dyn Model>);

#[async_trait]
impl Model for Canary {
    fn name(&self) -> &str {
        self.0.name()
    }
    // It stands in for a live backend: this run publishes through the webhook, which (like
    // policy) refuses anything mock.
    fn provenance(&self) -> Provenance {
        Provenance::Live
    }
    fn provider(&self) -> &'static str {
        self.0.provider()
    }
    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, model::Error> {
        let task = request.turns.first().map(|t| format!("{:?}", t.parts)).unwrap_or_default();
        if request.role == Role::Ryan && task.contains(FAIL_TRIGGER) {
            let parts = vec![Part::Text(format!("{{\"objective\": \"{MODEL} unterminated"))];
            return Ok(ModelResponse { parts, usage: Default::default(), grounding: None });
        }
        let mut response = self.0.generate(request).await?;
        if request.role == Role::Noni {
            for part in &mut response.parts {
                if let Part::Text(text) = part
                    && let Ok(mut v) = serde_json::from_str::<Value>(text)
                {
                    let body = format!("{} {DRAFT}", v["body"].as_str().unwrap_or_default());
                    v["body"] = body.into();
                    *text = v.to_string();
                }
            }
        }
        Ok(response)
    }
}

#[derive(Clone, Default)]
struct Platform(Arc<Mutex<HashMap<String, (String, String)>>>);

async fn receive(State(p): State<Platform>, headers: HeaderMap, body: Bytes) -> (StatusCode, String) {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let (id, ts, sig) = (header("webhook-id"), header("webhook-timestamp"), header("webhook-signature"));
    let key = SigningKey::from_secret(SECRET).expect("key");
    if key.verify(&id, &ts, &sig, &body, chrono::Utc::now().timestamp()).is_err() {
        return (StatusCode::UNAUTHORIZED, String::new());
    }
    let key = headers.get("idempotency-key").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let post: Value = serde_json::from_slice(&body).unwrap_or_default();
    let mut posts = p.0.lock().expect("lock");
    let n = posts.len();
    let (id, _) = posts
        .entry(key)
        .or_insert_with(|| (format!("post-{n}"), post["body"].as_str().unwrap_or_default().to_owned()))
        .clone();
    (StatusCode::OK, json!({"post": id}).to_string())
}

async fn lookup(State(p): State<Platform>, Path(key): Path<String>) -> (StatusCode, String) {
    match p.0.lock().expect("lock").get(&key) {
        Some((id, body)) => (StatusCode::OK, json!({"post": id, "body": body}).to_string()),
        None => (StatusCode::NOT_FOUND, String::new()),
    }
}

/// `POST /v1/jobs/{job}/decisions` with `body` to the operator API at `api`, as `credential`.
async fn decide(
    http: &reqwest::Client,
    api: &Spawned,
    job: &JobId,
    credential: &str,
    body: &Value,
) -> reqwest::Response {
    http.post(format!("{api}/v1/jobs/{job}/decisions")).bearer_auth(credential).json(body).send().await.expect("decide")
}

/// Every stored document of `collection` in `ws`, as JSON text.
async fn texts(store: &dyn Store, ws: &WorkspaceId, collection: Collection) -> Vec<String> {
    let docs = store.query(ws, collection, &Query::all(1000)).await.expect("query");
    docs.iter().map(|d| Value::Object(d.data.clone()).to_string()).collect()
}

fn source(marker: &str) -> SourceInput {
    let mut input: SourceInput = serde_json::from_str(include_str!("../../examples/launch-talk.json")).expect("sample");
    // The most quotable segment (numbers) carries the marker, so analysis quotes it.
    input.segments[7].text = format!("In the first month 4,200 notes were logged offline {marker} and none were lost.");
    input
}

/// Everything the process would have emitted: log lines in both formats, OpenTelemetry spans
/// and metrics (through in-memory exporters in place of OTLP).
#[derive(Clone)]
struct Captured {
    text: harmonia_telemetry::Memory,
    json: harmonia_telemetry::Memory,
    spans: opentelemetry_sdk::trace::InMemorySpanExporter,
    tracer: opentelemetry_sdk::trace::SdkTracerProvider,
    metrics: opentelemetry_sdk::metrics::InMemoryMetricExporter,
    meter: opentelemetry_sdk::metrics::SdkMeterProvider,
}

/// The process-wide capture. Global rather than scoped: a scoped subscriber can miss events
/// whose callsites another test thread registered first.
fn capture() -> &'static Captured {
    use opentelemetry::trace::TracerProvider as _;
    static CAPTURE: std::sync::OnceLock<Captured> = std::sync::OnceLock::new();
    CAPTURE.get_or_init(|| {
        let (text, json) = (harmonia_telemetry::Memory::default(), harmonia_telemetry::Memory::default());
        let spans = opentelemetry_sdk::trace::InMemorySpanExporter::default();
        let tracer = opentelemetry_sdk::trace::SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
        let metrics = opentelemetry_sdk::metrics::InMemoryMetricExporter::default();
        let meter =
            opentelemetry_sdk::metrics::SdkMeterProvider::builder().with_periodic_exporter(metrics.clone()).build();
        opentelemetry::global::set_meter_provider(meter.clone());
        let subscriber = tracing_subscriber::Registry::default()
            .with(vec![
                harmonia_telemetry::layer(harmonia_telemetry::Format::Text, text.clone()),
                harmonia_telemetry::layer(
                    harmonia_telemetry::Format::CloudJson { project: Some("canary-project".into()) },
                    json.clone(),
                ),
            ])
            .with(tracing_opentelemetry::layer().with_tracer(tracer.tracer("canary")))
            .with(tracing_subscriber::EnvFilter::new("debug"));
        tracing::subscriber::set_global_default(subscriber).expect("the only global subscriber of this test binary");
        Captured { text, json, spans, tracer, metrics, meter }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_canary_leaks_into_logs_spans_metrics_activity_failures_or_error_bodies() {
    let captured = capture().clone();
    let (text_logs, json_logs) = (captured.text.clone(), captured.json.clone());

    let platform = Platform::default();
    let hook_url = spawn_app(
        axum::Router::new()
            .route("/hook", post(receive))
            .route("/hook/{key}", get(lookup))
            .with_state(platform.clone()),
    )
    .await;
    let webhook = Webhook::new(
        &format!("{hook_url}/hook"),
        SigningKey::from_secret(SECRET).expect("key"),
        Duration::from_secs(5),
    )
    .expect("webhook");
    let dir = harmonia_testkit::temp_dir();
    let wrap = Wrap {
        model: Some(Box::new(|m| Arc::new(Canary(m)) as Arc<dyn Model>)),
        connector: Some(Arc::new(webhook)),
        ..Wrap::default()
    };
    let local = Local::open_with(dir.path(), FAST, wrap).await.expect("open");
    let ws = local.workspace().await.expect("workspace");
    // This deployment publishes through the webhook, and the workspace's channels say so.
    let mut config =
        harmonia_contracts::domain::WorkspaceConfig::from_toml(harmonia_local::DEMO_CONFIG).expect("config");
    config.channels.iter_mut().for_each(|c| c.connector = harmonia_contracts::domain::ConnectorKind::Webhook);
    harmonia_pipeline::workspace::update(&*local.env.store, &ws, config, &"cli".parse().expect("op"))
        .await
        .expect("the channels publish through the webhook");
    // A real credential: its full text and its secret are the canaries.
    let credential = operators::add(
        &*local.env.store,
        &ws,
        &"ana".parse().expect("op"),
        harmonia_auth::Role::Operator,
        &"cli".parse().expect("op"),
    )
    .await
    .expect("operator")
    .credential;
    let secret = credential.rsplit('/').next().expect("secret").to_owned();
    let api = spawn_app(harmonia_operator::app(harmonia_operator::OperatorState {
        env: local.env.clone(),
        credentials: Arc::new(Credentials::new(local.env.store.clone())),
    }))
    .await;
    let http = reqwest::Client::new();
    let mut error_bodies = Vec::new();

    // A full run, both decisions through the API with the canary credential.
    let job = ingest(&local.env, &ws, source(TRANSCRIPT), None, None).await.expect("ingest");
    for _ in 0..2 {
        let waiting = local.drive(&ws, &job.id, false, Duration::from_secs(60), |_| {}).await.expect("drive");
        let subject = if waiting.status == JobStatus::AwaitingStrategyApproval { "strategy" } else { "draft" };
        let view: Value = http
            .get(format!("{api}/v1/jobs/{}", job.id))
            .bearer_auth(&credential)
            .send()
            .await
            .expect("get")
            .json()
            .await
            .expect("json");
        let body = json!({"subject": subject, "decision": "approve", "version": view["awaiting_version"]});
        let bad = decide(&http, &api, &job.id, BAD_CREDENTIAL, &body).await;
        assert_eq!(bad.status().as_u16(), 401);
        error_bodies.push(bad.text().await.expect("body"));
        let ok = decide(&http, &api, &job.id, &credential, &body).await;
        assert_eq!(ok.status().as_u16(), 200);
    }
    let now = http
        .post(format!("{api}/v1/jobs/{}/publish-now", job.id))
        .bearer_auth(&credential)
        .send()
        .await
        .expect("publish now");
    assert_eq!(now.status().as_u16(), 200);
    let done = local.drive(&ws, &job.id, false, Duration::from_secs(60), |_| {}).await.expect("drive");
    assert_eq!(done.status, JobStatus::Verified, "{:?}", done.failure);
    assert!(
        platform.0.lock().expect("lock").values().any(|(_, body)| body.contains(DRAFT) && body.contains(TRANSCRIPT)),
        "the markers really flowed through"
    );

    // One failing invocation: Ryan's malformed answer carries the model marker.
    let failing =
        ingest(&local.env, &ws, source(&format!("{TRANSCRIPT} {FAIL_TRIGGER}")), None, None).await.expect("ingest");
    let failed = local.drive(&ws, &failing.id, false, Duration::from_secs(60), |_| {}).await.expect("drive");
    assert_eq!(failed.status, JobStatus::Failed);
    assert_eq!(failed.failure.as_ref().map(|f| (f.code, f.role)), Some((Code::SchemaViolation, Some(Role::Ryan))));
    let stale_body = json!({"subject": "strategy", "decision": "approve", "version": TRANSCRIPT});
    let stale = decide(&http, &api, &failing.id, &credential, &stale_body).await;
    assert_eq!(stale.status().as_u16(), 409);
    error_bodies.push(stale.text().await.expect("body"));
    local.settle(Duration::from_secs(30)).await.expect("settle");

    let store = &*local.env.store;
    let all = Query::all(1000);
    let activity = texts(store, &ws, ACTIVITY).await;
    let failures: Vec<String> = store
        .query(&ws, JOBS, &all)
        .await
        .expect("query")
        .iter()
        .filter_map(|d| d.decode::<Job>().ok())
        .filter_map(|j| j.failure.map(|f| serde_json::to_string(&f).unwrap_or_default()))
        .collect();
    let letters = texts(store, &ws, DEAD_LETTERS).await;
    let (text, json_lines) = (text_logs.text(), json_logs.text());
    captured.tracer.force_flush().expect("flush spans");
    captured.meter.force_flush().expect("flush metrics");
    let exported = captured.spans.get_finished_spans().expect("spans");
    // Exported spans join the job's W3C trace: the trace id of its activity records.
    let job_trace = store
        .query(&ws, ACTIVITY, &all)
        .await
        .expect("query")
        .iter()
        .find(|d| d.data["job"] == json!(job.id.to_string()))
        .map(|d| d.data["trace_id"].as_str().unwrap_or_default().to_owned())
        .expect("an activity record of the job");
    let in_trace: Vec<&str> = exported
        .iter()
        .filter(|s| s.span_context.trace_id().to_string() == job_trace)
        .map(|s| s.name.as_ref())
        .collect();
    for name in ["process source.ingested", "invoke_agent nimi", "generate_content offline", "store.commit"] {
        assert!(in_trace.contains(&name), "a {name} span in the job's trace: {in_trace:?}");
    }
    // The failing invocation's span says how it failed, by code only.
    let failed_invocation = exported
        .iter()
        .find(|s| {
            s.name == "invoke_agent ryan"
                && s.attributes
                    .iter()
                    .any(|kv| kv.key.as_str() == "error.type" && kv.value.as_str() == "schema_violation")
        })
        .expect("the failing invocation's span carries its error code");
    assert!(matches!(failed_invocation.status, opentelemetry::trace::Status::Error { .. }));
    let spans: Vec<String> = exported.iter().map(|s| format!("{s:?}")).collect();
    let metrics = format!("{:?}", captured.metrics.get_finished_metrics().expect("metrics"));
    assert!(
        metrics.contains("harmonia.agent.invocations") && metrics.contains("schema_violation"),
        "the failing invocation was counted by outcome"
    );
    assert!(
        text.contains("specialist invocation") && text.contains("stage completed"),
        "the logs are not empty: {text}"
    );
    assert!(json_lines.contains("\"severity\""), "Cloud Logging JSON was written");
    assert!(
        json_lines.contains("\"logging.googleapis.com/trace\":\"projects/canary-project/traces/"),
        "stage lines correlate with the job's trace"
    );
    assert!(!activity.is_empty() && !failures.is_empty());

    let places: Vec<(&str, String)> = [("text logs", text), ("JSON logs", json_lines)]
        .into_iter()
        .chain(activity.into_iter().map(|a| ("activity record", a)))
        .chain(failures.into_iter().map(|f| ("failure record", f)))
        .chain(letters.into_iter().map(|l| ("dead letter", l)))
        .chain(error_bodies.into_iter().map(|e| ("error body", e)))
        .chain(spans.into_iter().map(|s| ("span", s)))
        .chain(std::iter::once(("metric export", metrics)))
        .collect();
    for marker in [TRANSCRIPT, MODEL, DRAFT, SECRET, &credential, &secret, BAD_CREDENTIAL, "CANARY"] {
        for (place, content) in &places {
            assert!(!content.contains(marker), "{marker} leaked into a {place}");
        }
    }
}

/// The value of `key` on `span`, as a string.
fn attribute(span: &opentelemetry_sdk::trace::SpanData, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string())
}

/// The capture, and a new embedded default (its data directory held by the caller) with its
/// workspace.
async fn traced() -> (Captured, harmonia_testkit::TempDir, Local, WorkspaceId) {
    let captured = capture().clone();
    let dir = harmonia_testkit::temp_dir();
    let local = Local::open_with(dir.path(), FAST, Wrap::default()).await.expect("open");
    let ws = local.workspace().await.expect("workspace");
    (captured, dir, local, ws)
}

/// The activity records of `ws` whose `key` is `value`, as stored.
async fn activity_where(local: &Local, ws: &WorkspaceId, key: &str, value: &str) -> Vec<Value> {
    let docs = local.env.store.query(ws, ACTIVITY, &Query::all(1000)).await.expect("activity");
    docs.into_iter().map(|d| Value::Object(d.data)).filter(|a| a[key] == json!(value)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_exported_spans_form_one_tree() {
    use std::collections::{BTreeSet, HashMap};

    use opentelemetry::trace::{SpanId, SpanKind};

    let (captured, _dir, local, ws) = traced().await;
    let job = ingest(&local.env, &ws, source("(tree)"), None, None).await.expect("ingest");
    // Both human gates are approved through `operator::decide`, as the CLI does.
    let done = local.drive(&ws, &job.id, true, Duration::from_secs(60), |_| {}).await.expect("drive");
    assert_eq!(done.status, JobStatus::Verified, "{:?}", done.failure);
    local.settle(Duration::from_secs(30)).await.expect("settle");
    captured.tracer.force_flush().expect("flush spans");

    let activity = activity_where(&local, &ws, "job", job.id.as_ref()).await;
    let job_trace = activity.first().map(|a| a["trace_id"].as_str().unwrap_or_default().to_owned()).expect("activity");
    assert!(activity.iter().all(|a| a["trace_id"] == json!(job_trace)), "one trace id for the whole job");

    let all = captured.spans.get_finished_spans().expect("spans");
    let spans: Vec<_> = all.iter().filter(|s| s.span_context.trace_id().to_string() == job_trace).collect();
    let by_id: HashMap<SpanId, &opentelemetry_sdk::trace::SpanData> =
        spans.iter().map(|s| (s.span_context.span_id(), *s)).collect();
    assert_eq!(by_id.len(), spans.len(), "every span id is exported once");

    // One tree: one root, and every other span's parent is an exported span of the trace.
    let roots: Vec<&str> =
        spans.iter().filter(|s| s.parent_span_id == SpanId::INVALID).map(|s| s.name.as_ref()).collect();
    assert_eq!(roots, ["ingest"], "the job's only root is its ingest");
    for span in &spans {
        assert!(
            span.parent_span_id == SpanId::INVALID || by_id.contains_key(&span.parent_span_id),
            "{} has a parent that was never exported",
            span.name
        );
    }

    // Every stage is a consumer span whose parent is the producer span that created its event.
    let mut stages = BTreeSet::new();
    for span in spans.iter().filter(|s| s.span_kind == SpanKind::Consumer) {
        let stage = attribute(span, "harmonia.stage").expect("a stage span names its stage");
        let parent = by_id[&span.parent_span_id];
        assert_eq!(parent.span_kind, SpanKind::Producer, "{} continues a created event", span.name);
        let topic = span.name.strip_prefix("process ").expect("process {topic}");
        assert_eq!(parent.name, format!("create {topic}"));
        stages.insert(stage);
    }
    let expected: BTreeSet<String> =
        harmonia_pipeline::registry::ROUTES.iter().map(|r| r.function().to_string()).collect();
    assert_eq!(stages, expected, "every stage of the job is in its trace");

    // Both decisions continue the event that asked for them; the strategy's releases its
    // event, and the approved draft's is released by its dispatch (here, publish now), which
    // continues the same event.
    for (name, releases) in [("decision strategy", true), ("decision draft", false), ("dispatch draft", true)] {
        let span = spans.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("a {name} span"));
        assert_eq!(by_id[&span.parent_span_id].span_kind, SpanKind::Producer, "{name}");
        let created = spans.iter().any(|s| s.parent_span_id == span.span_context.span_id());
        assert_eq!(created, releases, "{name} created an event");
    }

    // GenAI conventions: agents, model calls with their tokens, tools.
    let named = |prefix: &'static str| spans.iter().filter(move |s| s.name.starts_with(prefix)).copied();
    for invoke in named("invoke_agent ") {
        let agent = attribute(invoke, "gen_ai.agent.name").expect("agent");
        assert_eq!(invoke.name, format!("invoke_agent {agent}"));
        assert_eq!(attribute(invoke, "gen_ai.operation.name").as_deref(), Some("invoke_agent"));
        assert_eq!(attribute(invoke, "gen_ai.provider.name").as_deref(), Some("harmonia.offline"));
        assert_eq!(attribute(invoke, "gen_ai.request.model").as_deref(), Some("offline"));
    }
    let calls: Vec<_> = named("generate_content ").collect();
    assert!(!calls.is_empty());
    for call in &calls {
        assert_eq!(call.name, "generate_content offline");
        assert_eq!(call.span_kind, SpanKind::Client);
        assert_eq!(attribute(call, "gen_ai.operation.name").as_deref(), Some("generate_content"));
        for usage in ["gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"] {
            assert!(attribute(call, usage).is_some_and(|n| n.parse::<u64>().is_ok()), "{usage} on the model span");
        }
        assert!(by_id[&call.parent_span_id].name.starts_with("invoke_agent "), "a model call belongs to an agent");
    }
    let tools: Vec<_> = named("execute_tool ").collect();
    assert!(!tools.is_empty(), "Temi reads its snapshot through tools");
    for tool in tools {
        let name = attribute(tool, "gen_ai.tool.name").expect("tool name");
        assert_eq!(tool.name, format!("execute_tool {name}"));
        assert_eq!(attribute(tool, "gen_ai.operation.name").as_deref(), Some("execute_tool"));
    }

    // Each activity record names its exported invocation span and that span's parent.
    for record in &activity {
        let id = |key: &str| record[key].as_str().and_then(|s| SpanId::from_hex(s).ok()).expect("span id");
        let span = by_id.get(&id("span_id")).unwrap_or_else(|| panic!("activity {record} names an exported span"));
        assert!(span.name.starts_with("invoke_agent "), "{}", span.name);
        assert_eq!(span.parent_span_id, id("parent_span_id"), "{record}");
    }
}

/// Nova's tool calls and their activity records: each record names the exported
/// `execute_tool` span of its call, whose parent is the invocation the record names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn novas_tool_call_records_name_the_spans_that_were_exported() {
    use opentelemetry::trace::SpanId;

    let (captured, _dir, local, ws) = traced().await;
    let skills = harmonia_agents::skills::SkillLibrary::configured().expect("skills");
    let runtime = harmonia_agents::Runtime::new(local.model.clone(), local.env.store.clone(), Arc::new(skills));
    let runtime = harmonia_nova::with_tools(runtime);
    let who = harmonia_auth::Identity {
        operator: "ana".parse().expect("op"),
        workspace: ws.clone(),
        role: harmonia_auth::Role::Operator,
    };
    let root = harmonia_contracts::trace::TraceParent::new_root();
    let asked = harmonia_nova::ask(&runtime, &who, "What is waiting for me?", root.clone()).await.expect("answer");
    assert_eq!(asked.tool_calls.len(), 1, "{:?}", asked.tool_calls);
    captured.tracer.force_flush().expect("flush spans");

    let records = activity_where(&local, &ws, "trace_id", &root.trace_id()).await;
    let spans = captured.spans.get_finished_spans().expect("spans");
    let id = |record: &Value, key: &str| record[key].as_str().and_then(|s| SpanId::from_hex(s).ok()).expect("span id");
    let calls: Vec<&Value> = records.iter().filter(|r| r["operation"] == "tool_call").collect();
    assert_eq!(calls.len(), 1, "{records:?}");
    for call in calls {
        let span = spans.iter().find(|s| s.span_context.span_id() == id(call, "span_id"));
        let span = span.unwrap_or_else(|| panic!("the tool call's record names an exported span: {call}"));
        assert_eq!(span.name, "execute_tool get_operator_feed");
        assert_eq!(span.parent_span_id, id(call, "parent_span_id"), "{call}");
        let invocation = records.iter().find(|r| r["operation"] == "invoke").expect("the invocation's record");
        assert_eq!(id(call, "parent_span_id"), id(invocation, "span_id"), "under its invocation");
    }
}

/// A function started with a trace-export selection it cannot honour exits non-zero before
/// serving, and its log names the variable to fix. (Each case fails before any network call.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_trace_export_selection_stops_start_up_naming_the_variable() {
    let cases: [(&[(&str, &str)], &str); 4] = [
        (&[("HARMONIA_TRACE_EXPORTER", "zipkin")], "HARMONIA_TRACE_EXPORTER must be otlp, cloud_trace or none"),
        (&[("HARMONIA_TRACE_EXPORTER", "cloud_trace")], "GOOGLE_CLOUD_PROJECT is required when"),
        (&[("HARMONIA_TRACE_EXPORTER", "otlp")], "HARMONIA_TRACE_EXPORTER is otlp, which needs HARMONIA_OTLP_ENDPOINT"),
        (&[("HARMONIA_OTLP_ENDPOINT", "collector:4318")], "HARMONIA_OTLP_ENDPOINT must be"),
    ];
    for (env, expected) in cases {
        let mut command = tokio::process::Command::new(harmonia_e2e::FunctionProcess::binary("analyze"));
        command
            .env_remove("GOOGLE_CLOUD_PROJECT")
            .env_remove("HARMONIA_OTLP_ENDPOINT")
            .env_remove("HARMONIA_TRACE_EXPORTER")
            .env("PORT", "0")
            .env("HARMONIA_BIND", "127.0.0.1")
            .env("HARMONIA_BLOBS", "gcs:harmonia-unused")
            .kill_on_drop(true);
        for (k, v) in env {
            command.env(k, v);
        }
        let output = tokio::time::timeout(Duration::from_secs(30), command.output())
            .await
            .expect("it stops at once")
            .expect("it runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{env:?} must not start");
        assert!(stderr.contains("invalid_config") && stderr.contains(expected), "{env:?}: {stderr}");
    }
}
