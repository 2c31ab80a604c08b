//! Hosting a Harmonia function the way Cloud Run runs it: configuration from the environment,
//! the backends it names, the function's router, and a graceful stop on SIGTERM.
//!
//! | variable | default | meaning |
//! | --- | --- | --- |
//! | `PORT` | `8080` | listen port (Cloud Run sets it) |
//! | `HARMONIA_BIND` | `0.0.0.0` | listen address |
//! | `GOOGLE_CLOUD_PROJECT` | required for Firestore/Pub/Sub | project id |
//! | `HARMONIA_STORE` | `firestore` | `firestore` or `sqlite:<path>` |
//! | `FIRESTORE_DATABASE` | `(default)` | Firestore database id |
//! | `HARMONIA_TOPIC_PREFIX` | empty | prefix of every topic and subscription |
//! | `HARMONIA_MODEL` | `offline` | `offline` or `gemini` |
//! | `GEMINI_LOCATION`, `GEMINI_MODEL` | `us-central1`, `gemini-2.5-flash` | Vertex AI model |
//! | `HARMONIA_CONNECTOR` | `sandbox` | `sandbox` or `webhook` |
//! | `WEBHOOK_URL`, `WEBHOOK_SECRET` | — | the webhook connector's target and signing secret |
//! | `HARMONIA_OPERATOR_CREDENTIALS` | — | path of the operator credential digests (operator, ingest, nova) |
//! | `HARMONIA_GOOGLE_JWKS`, `HARMONIA_GOOGLE_AUDIENCE`, `HARMONIA_GOOGLE_PRINCIPALS` | — | Google-signed ID tokens: key set file, expected audience, email → identity file |
//! | `HARMONIA_SKILLS_DIR` | the image's `/app/skills` | skills folder |
//! | `HARMONIA_LOG` | `info` | log filter; `HARMONIA_LOG_FORMAT=json` for Cloud Logging |
//! | `HARMONIA_OTLP_ENDPOINT` | unset | OTLP/HTTP collector for traces and metrics (off when unset) |
//! | `HARMONIA_STEP_LEASE_SECS` | `300` | how long a step's in-flight claim holds off duplicates (the longest ack deadline) |
//! | `HARMONIA_FAULT_DELAY_MS` | `0` | resilience drills: push functions hold each delivery this long before the step runs |
//! | `HARMONIA_FAULT_RESPONSE_HOLD_MS` | `0` | resilience drills: hold each HTTP response this long after the work is done |
//!
//! Stage functions serve `POST /push/<topic>` for each subscription the registry gives them
//! (the push endpoint of that subscription) and `GET /healthz`; the operator, ingest and Nova
//! functions pass their own routers to [`run`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use harmonia_agents::Runtime;
use harmonia_agents::gemini::{Gemini, GeminiConfig};
use harmonia_agents::model::Model;
use harmonia_agents::offline::OfflineModel;
use harmonia_agents::skills::SkillLibrary;
use harmonia_agents::tools::Tool;
use harmonia_auth::Credentials;
use harmonia_bus_pubsub::{PubSubBus, PubSubConfig, push};
use harmonia_contracts::{Code, Error};
use harmonia_pipeline::Env;
use harmonia_pipeline::connector::{Connector, Sandbox, Webhook};
pub use harmonia_pipeline::registry::Function;
use harmonia_pipeline::registry::Timing;
use harmonia_pipeline::steps::handlers;
use harmonia_store::Store;

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn config_error(why: &'static str) -> Error {
    Error::new(Code::InvalidRequest, why)
}

/// The backends a function runs on, built from the environment, with `tools` registered on
/// the runtime (Nova's; none for the pipeline stages).
pub async fn env_from_environment(tools: Vec<Arc<dyn Tool>>) -> Result<Arc<Env>, Error> {
    let project = var("GOOGLE_CLOUD_PROJECT");
    let store: Arc<dyn Store> = match var("HARMONIA_STORE").as_deref() {
        Some(s) if s.starts_with("sqlite:") => {
            Arc::new(harmonia_store_sqlite::SqliteStore::open(&s["sqlite:".len()..]).map_err(Error::from)?)
        }
        None | Some("firestore") => {
            let project =
                project.as_deref().ok_or_else(|| config_error("GOOGLE_CLOUD_PROJECT is required for Firestore"))?;
            let database = var("FIRESTORE_DATABASE").unwrap_or_else(|| "(default)".into());
            Arc::new(harmonia_store_firestore::FirestoreStore::connect(project, &database).await.map_err(Error::from)?)
        }
        Some(_) => return Err(config_error("HARMONIA_STORE is firestore or sqlite:<path>")),
    };
    let project = project.ok_or_else(|| config_error("GOOGLE_CLOUD_PROJECT is required for Pub/Sub"))?;
    let bus = PubSubBus::connect(PubSubConfig::from_env(&project)).await.map_err(|e| Error::from_code(e.code()))?;
    let model: Arc<dyn Model> = match var("HARMONIA_MODEL").as_deref() {
        None | Some("offline") => Arc::new(OfflineModel),
        Some("gemini") => {
            let location = var("GEMINI_LOCATION").unwrap_or_else(|| "us-central1".into());
            let name = var("GEMINI_MODEL").unwrap_or_else(|| "gemini-2.5-flash".into());
            Arc::new(
                Gemini::new(GeminiConfig::vertex(&project, &location, &name))
                    .map_err(|_| Error::from_code(Code::ModelUnavailable))?,
            )
        }
        Some(_) => return Err(config_error("HARMONIA_MODEL is offline or gemini")),
    };
    let skills = SkillLibrary::load(&SkillLibrary::default_dir())
        .map_err(|_| config_error("the skills folder could not be loaded"))?;
    let runtime = tools.into_iter().fold(Runtime::new(model, store.clone(), Arc::new(skills)), Runtime::with_tool);
    let connector: Arc<dyn Connector> = match var("HARMONIA_CONNECTOR").as_deref() {
        None | Some("sandbox") => Arc::new(Sandbox::new(store.clone())),
        Some("webhook") => {
            let url =
                var("WEBHOOK_URL").ok_or_else(|| config_error("WEBHOOK_URL is required for the webhook connector"))?;
            let secret = var("WEBHOOK_SECRET")
                .ok_or_else(|| config_error("WEBHOOK_SECRET is required for the webhook connector"))?;
            Arc::new(
                Webhook::new(&url, secret.as_bytes(), Duration::from_secs(30))
                    .map_err(|_| config_error("the webhook client could not be built"))?,
            )
        }
        Some(_) => return Err(config_error("HARMONIA_CONNECTOR is sandbox or webhook")),
    };
    Ok(Arc::new(Env {
        store,
        bus: Arc::new(bus),
        runtime: Arc::new(runtime),
        connector,
        topic_prefix: var("HARMONIA_TOPIC_PREFIX").unwrap_or_default(),
        pipeline_user: "pipeline".parse()?,
        step_lease: var("HARMONIA_STEP_LEASE_SECS")
            .and_then(|s| s.parse().ok())
            .map(Duration::from_secs)
            .unwrap_or(Timing::CLOUD.model_ack_deadline),
    }))
}

/// Who may call the operator, ingest and Nova functions: the operator credential digests
/// named by `HARMONIA_OPERATOR_CREDENTIALS`, and/or Google-signed ID tokens verified against
/// the JWKS at `HARMONIA_GOOGLE_JWKS` for the audience `HARMONIA_GOOGLE_AUDIENCE`, with verified
/// emails mapped to identities by `HARMONIA_GOOGLE_PRINCIPALS` (`{"email": {"operator", "workspace"}}`).
pub fn credentials() -> Result<Arc<Credentials>, Error> {
    let read = |path: String| std::fs::read(path).map_err(|_| config_error("a credentials file cannot be read"));
    let mut credentials: Credentials = match var("HARMONIA_OPERATOR_CREDENTIALS") {
        Some(path) => serde_json::from_slice(&read(path)?)
            .map_err(|_| config_error("the operator credentials file is not valid"))?,
        None => Credentials::default(),
    };
    if let Some(jwks) = var("HARMONIA_GOOGLE_JWKS") {
        let audience = var("HARMONIA_GOOGLE_AUDIENCE")
            .ok_or_else(|| config_error("HARMONIA_GOOGLE_AUDIENCE is required with HARMONIA_GOOGLE_JWKS"))?;
        let principals_path = var("HARMONIA_GOOGLE_PRINCIPALS")
            .ok_or_else(|| config_error("HARMONIA_GOOGLE_PRINCIPALS is required with HARMONIA_GOOGLE_JWKS"))?;
        let principals = serde_json::from_slice(&read(principals_path)?)
            .map_err(|_| config_error("the principals file is not valid"))?;
        let jwks = String::from_utf8(read(jwks)?).map_err(|_| config_error("the JWKS file is not text"))?;
        credentials.google = Some(harmonia_auth::GoogleIdTokens::new(&jwks, &audience, principals)?);
    }
    if credentials.digests.is_empty() && credentials.google.is_none() {
        return Err(config_error("set HARMONIA_OPERATOR_CREDENTIALS or HARMONIA_GOOGLE_JWKS"));
    }
    Ok(Arc::new(credentials))
}

/// The router of a pipeline stage function (or the dead-letter recorder): `POST /push/<topic>`
/// for each of its subscriptions, and `GET /healthz`.
pub fn stage_router(function: Function, env: &Arc<Env>) -> Result<Router, Error> {
    if !function.is_pushed() {
        return Err(config_error("the function is not served by push subscriptions"));
    }
    let mut router = Router::new().route("/healthz", axum::routing::get(|| async { "ok" }));
    for subscriber in handlers(env, Timing::CLOUD).into_iter().filter(|s| s.function == function) {
        let topic = subscriber.spec.topic.to_string();
        let handler: Arc<dyn harmonia_bus::Handler> = match var("HARMONIA_FAULT_DELAY_MS").and_then(|v| v.parse().ok())
        {
            Some(ms) if ms > 0 => Arc::new(Delayed(subscriber.handler, Duration::from_millis(ms))),
            _ => subscriber.handler,
        };
        router = router.merge(push::router(&format!("/push/{topic}"), handler));
    }
    Ok(router)
}

/// Holds each delivery before handing it on (resilience drills: a window to kill a process
/// mid-step).
struct Delayed(Arc<dyn harmonia_bus::Handler>, Duration);

#[async_trait::async_trait]
impl harmonia_bus::Handler for Delayed {
    async fn handle(&self, delivery: harmonia_bus::Delivery) -> harmonia_bus::Outcome {
        tokio::time::sleep(self.1).await;
        self.0.handle(delivery).await
    }
}

/// Create every topic (with its dead-letter topic) and every push subscription of the
/// registry on `bus`, pushing to `endpoint(function)` + `/push/<topic>`. Existing ones are left
/// as they are. Returns the number of subscriptions.
pub async fn provision(
    bus: &PubSubBus,
    prefix: &str,
    timing: Timing,
    endpoint: impl Fn(&str) -> Option<String>,
) -> Result<usize, Error> {
    let bus_error = |e: harmonia_bus::Error| Error::from_code(e.code());
    for topic in harmonia_pipeline::registry::topics(prefix) {
        bus.create_topic(&topic).await.map_err(bus_error)?;
    }
    let mut specs = harmonia_pipeline::registry::subscriptions(prefix, timing);
    specs.extend(
        harmonia_pipeline::registry::dead_letter_subscriptions(prefix, timing)
            .into_iter()
            .map(|s| (Function::Deadletter, s)),
    );
    let mut n = 0;
    for (function, spec) in specs {
        let base = endpoint(function.as_str()).ok_or_else(|| config_error("a function has no push endpoint"))?;
        // Pub/Sub allows 5-100 attempts; the recorder's own subscription retries at the maximum.
        let spec = harmonia_bus::SubscriptionSpec { max_attempts: spec.max_attempts.clamp(5, 100), ..spec };
        bus.create_push_subscription(&spec, &format!("{}/push/{}", base.trim_end_matches('/'), spec.topic))
            .await
            .map_err(bus_error)?;
        n += 1;
    }
    Ok(n)
}

/// Log to stderr (human-readable, or Cloud Logging JSON with `HARMONIA_LOG_FORMAT=json`), and
/// export traces and metrics over OTLP when `HARMONIA_OTLP_ENDPOINT` is set (off by default).
pub fn init_telemetry(function: &str) -> harmonia_telemetry::Exporters {
    let format =
        harmonia_telemetry::Format::from_name(var("HARMONIA_LOG_FORMAT").as_deref(), var("GOOGLE_CLOUD_PROJECT"));
    let otlp = var("HARMONIA_OTLP_ENDPOINT")
        .map(|endpoint| harmonia_telemetry::Otlp { endpoint, service: format!("harmonia-{function}") });
    harmonia_telemetry::init_with(format, &var("HARMONIA_LOG").unwrap_or_else(|| "info".into()), otlp)
}

/// Run a pipeline stage function (or the dead-letter recorder) until SIGTERM; this is its
/// binary's whole `main`.
pub async fn run_stage(function: Function) -> std::process::ExitCode {
    run(function, Vec::new(), |env| stage_router(function, &env)).await
}

/// Run `function` with `tools` on its runtime and the router `app` builds, until SIGTERM or
/// Ctrl-C.
pub async fn run(
    function: Function,
    tools: Vec<Arc<dyn Tool>>,
    app: impl FnOnce(Arc<Env>) -> Result<Router, Error>,
) -> std::process::ExitCode {
    let _exporters = init_telemetry(function.as_str());
    let serve = async {
        let env = env_from_environment(tools).await?;
        let mut app = app(env)?;
        if let Some(ms) =
            var("HARMONIA_FAULT_RESPONSE_HOLD_MS").and_then(|v| v.parse::<u64>().ok()).filter(|ms| *ms > 0)
        {
            // Drills: an HTTP function holds each response after doing the work, so it can be
            // killed with the work done and the answer lost.
            let hold = Duration::from_millis(ms);
            app = app.layer(axum::middleware::from_fn(
                move |request: axum::extract::Request, next: axum::middleware::Next| async move {
                    let response = next.run(request).await;
                    if !function.is_pushed() {
                        tokio::time::sleep(hold).await;
                    }
                    response
                },
            ));
        }
        let port: u16 = var("PORT").and_then(|p| p.parse().ok()).unwrap_or(8080);
        let ip = var("HARMONIA_BIND").and_then(|b| b.parse().ok()).unwrap_or([0, 0, 0, 0].into());
        let listener = tokio::net::TcpListener::bind(SocketAddr::new(ip, port))
            .await
            .map_err(|_| Error::new(Code::DependencyUnavailable, "the port is not available"))?;
        tracing::info!(function = %function, port, "serving");
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown())
            .await
            .map_err(|_| Error::from_code(Code::Internal))
    };
    match serve.await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(function = %function, code = %e.code, message = %e.message, "stopped");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn shutdown() {
    let term = async {
        #[cfg(unix)]
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            s.recv().await;
            return;
        }
        std::future::pending::<()>().await;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {},
        () = term => {},
    }
}
