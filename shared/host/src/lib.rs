//! Hosting a Harmonia function the way Cloud Run runs it: configuration from the environment,
//! the backends it names, the function's router, and a graceful stop on SIGTERM.
//!
//! The environment is parsed once, at start-up, into a [`Config`] ([`config`]); an invalid
//! value stops the function with an `invalid_config` error naming the variable. An empty
//! value counts as unset.
//!
//! | variable | default | meaning |
//! | --- | --- | --- |
//! | `PORT` | `8080` | listen port, 0-65535 (Cloud Run sets it) |
//! | `HARMONIA_BIND` | `0.0.0.0` | listen address |
//! | `GOOGLE_CLOUD_PROJECT` | required for Firestore/Pub/Sub | project id |
//! | `HARMONIA_STORE` | `firestore` | `firestore` or `sqlite:<path>` |
//! | `FIRESTORE_DATABASE` | `(default)` | Firestore database id |
//! | `HARMONIA_BLOBS` | with SQLite, `folder:` `blobs` beside its file; required with Firestore | where long sources' transcripts live: `gcs:<bucket>` or `folder:<path>` |
//! | `HARMONIA_SOURCES_BUCKET` | unset | the Cloud Storage bucket operators upload sources to; the ingest function ingests each object its notifications announce (unset: uploads are refused and recorded) |
//! | `HARMONIA_NOVA_URL` | unset: no `/v1/ask` on the operator function | the Nova function's base URL: the operator function forwards the console's questions there (with an ID token for that URL when it is `https`, as Cloud Run requires) |
//! | `STORAGE_EMULATOR_HOST` | unset | a Cloud Storage emulator (`host:port`) to use instead of Cloud Storage, with anonymous credentials |
//! | `HARMONIA_TOPIC_PREFIX` | empty | prefix of every topic and subscription (a valid start of a Pub/Sub name, at most 100 characters) |
//! | `HARMONIA_MODEL` | `offline` | `offline`, `vertex` (Gemini on Vertex AI, Application Default Credentials), `gemini` (the Gemini API) or `openai` (OpenAI-compatible chat completions) |
//! | `HARMONIA_MODEL_REPAIRS` | `2` | 0-5: corrective turns an invocation may take when a model's answer misses its role's contract (unreadable or off-schema JSON, an inexact quote, an unknown evidence id, a function it was not given, skills out of order, a missing output); each names the miss's code, place and rule in fixed words, and is counted as `repairs`. 0 turns them off. Authority claims and instruction-like text are never repaired |
//! | `HARMONIA_MODEL_RPM` | unset: no pace but the provider's | 1-100000: the most model requests a minute this process sends, shared by every role and job in it; a call whose turn is more than 30 s away is `model_throttled` at once (the step is retried later). A provider's `Retry-After` (up to 30 s) holds every call of the process, not only the one it answered |
//! | `GEMINI_MODEL` | `gemini-2.5-flash` | the Gemini model, for `vertex` and `gemini` |
//! | `GEMINI_LOCATION` | `us-central1` | Vertex AI location, a region or `global` (`vertex`) |
//! | `GEMINI_API_KEY` | — | the Gemini API key (`gemini`; required) |
//! | `GEMINI_BASE_URL` | `https://generativelanguage.googleapis.com` | the Gemini API's base URL (`gemini`): a gateway or proxy speaking the same API |
//! | `OPENAI_BASE_URL`, `OPENAI_MODEL`, `OPENAI_API_KEY` | `https://api.openai.com/v1`, —, unset | an OpenAI-compatible server (`openai`): base URL, model (required), key (a local server may need none) |
//! | `HARMONIA_CONNECTOR` | `sandbox` | `sandbox` or `webhook` |
//! | `HARMONIA_CHANNEL_SECRETS` | unset: no channel accounts | the channel secrets file, or a directory of them (on Cloud Run, one Secret Manager secret per channel, each mounted as `<dir>/<name>/channel.toml`): channels with credentials of their own, e.g. Bluesky app passwords (see `harmonia_pipeline::connector::accounts`) |
//! | `HARMONIA_PUBLISHING` | unset: what this function's own connectors reach | JSON: where the deployment's posts go, `{"connector": …, "accounts": [{"platform", "handle", "connector"}]}`, for the functions that judge drafts without holding credentials (policy, operator); a function holding connectors refuses to start when it differs (see `harmonia_pipeline::connector::reach`) |
//! | `WEBHOOK_URL`, `WEBHOOK_SECRET` | — | the webhook connector's target (http/https) and non-empty signing secret |
//! | `HARMONIA_GOOGLE_AUDIENCE`, `HARMONIA_GOOGLE_PRINCIPALS` | — | Google-signed ID tokens (on when the audience is set): expected audience, email → `{operator, workspace}` file; such callers have the role `operator` |
//! | `HARMONIA_GOOGLE_JWKS` | Google's `https://www.googleapis.com/oauth2/v3/certs` | URL of the token signing keys (fetched, cached per `Cache-Control`) |
//! | `HARMONIA_SKILLS_DIR` | unset: the skills embedded at build time | a skills folder to load instead |
//! | `HARMONIA_LOG` | `info` | log filter; `HARMONIA_LOG_FORMAT` `text` (default) or `json` for Cloud Logging |
//! | `HARMONIA_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_ENDPOINT` | unset | OTLP/HTTP collector base URL for traces and metrics (off when unset; both set must agree) |
//! | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` | unset | per-signal endpoints: `<base>/v1/traces` and `<base>/v1/metrics` of the same collector |
//! | `HARMONIA_TRACE_EXPORTER` | `otlp` with an endpoint, else `none` | span exporter: `otlp`, `cloud_trace` (Cloud Trace's API in `GOOGLE_CLOUD_PROJECT`) or `none`; metrics always go to the OTLP collector |
//! | `OTEL_SERVICE_NAME` | `harmonia-<function>` | `service.name` of exported data |
//! | `HARMONIA_STEP_LEASE_SECS` | `300` | 1-600 s: how long a step's in-flight claim holds off duplicates (the longest ack deadline) |
//! | `HARMONIA_FAULT_DELAY_MS` | `0` | resilience drills: push functions hold each delivery this long before the step runs |
//! | `HARMONIA_FAULT_RESPONSE_HOLD_MS` | `0` | resilience drills: hold each HTTP response this long after the work is done |
//! | `HARMONIA_FAULT_EFFECT_HOLD_MS` | `0` | resilience drills: hold each connector call this long after the platform answered, before its receipt is written |
//! | `HARMONIA_FAULT_READY_FILE` | unset | resilience drills: append a JSON line to this file when each hold starts and ends (see `drill`) |
//!
//! Operator credentials are not configuration: they are records in the store, created with
//! `harmonia [--cloud] operator add` or `POST /v1/operators` (see `harmonia_auth`). The retired
//! `HARMONIA_OPERATOR_CREDENTIALS` is refused at start-up, naming the variable.
//!
//! Stage functions serve `POST /push/<topic>` for each subscription the registry gives them
//! (the push endpoint of that subscription) and `GET /healthz`; the operator, ingest and Nova
//! functions pass their own routers to [`run`].

pub mod config;
mod drill;
pub mod lazy;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use harmonia_agents::Runtime;
use harmonia_agents::gemini::{Gemini, GeminiConfig};
use harmonia_agents::model::Model;
use harmonia_agents::offline::OfflineModel;
use harmonia_agents::openai::{OpenAi, OpenAiConfig};
use harmonia_agents::skills::SkillLibrary;
use harmonia_agents::tools::Tool;
use harmonia_auth::{Credentials, GoogleIdTokens, KeySet, Principal};
use harmonia_bus_pubsub::{PubSubBus, PubSubConfig, push};
use harmonia_contracts::{Code, Error};
use harmonia_pipeline::Env;
use harmonia_pipeline::connector::{Connector, Sandbox, SigningKey, Webhook};
pub use harmonia_pipeline::registry::Function;
use harmonia_pipeline::registry::Timing;
use harmonia_pipeline::steps::handlers;
use harmonia_store::Store;
use secrecy::ExposeSecret;

use config::{BlobBackend, ConnectorBackend, LogFormat, StoreBackend};
pub use config::{Config, ModelBackend};
use lazy::{LazyBlobs, LazyBus, LazyStore, LazyUploads};

fn config_error(why: &'static str) -> Error {
    Error::new(Code::InvalidConfig, why)
}

/// The model `backend` names; Vertex AI needs the `project` it bills.
pub fn model(
    backend: &ModelBackend,
    project: Option<&str>,
    rpm: Option<std::num::NonZeroU32>,
) -> Result<Arc<dyn Model>, Error> {
    let failed = |e: harmonia_agents::model::Error| Error::from_code(e.code());
    let limits = harmonia_agents::wire::Limits { rpm, ..Default::default() };
    Ok(match backend {
        ModelBackend::Offline => Arc::new(OfflineModel),
        ModelBackend::Vertex { location, model } => {
            let project =
                project.ok_or_else(|| config_error("GOOGLE_CLOUD_PROJECT must name the project Vertex AI bills"))?;
            let config = GeminiConfig { limits, ..GeminiConfig::vertex(project, location, model) };
            Arc::new(Gemini::new(config).map_err(failed)?)
        }
        ModelBackend::Gemini { model, api_key, base_url } => {
            let config = GeminiConfig { endpoint: base_url.clone(), limits, ..GeminiConfig::developer(api_key, model) };
            Arc::new(Gemini::new(config).map_err(failed)?)
        }
        ModelBackend::OpenAi { base_url, model, api_key } => {
            let config = OpenAiConfig { limits, ..OpenAiConfig::new(base_url, api_key.as_deref(), model) };
            Arc::new(OpenAi::new(config).map_err(failed)?)
        }
    })
}

/// The backends a function runs on, from the process environment (see [`env_from_config`]).
pub async fn env_from_environment(tools: Vec<Arc<dyn Tool>>) -> Result<Arc<Env>, Error> {
    env_from_config(&Config::from_env()?, tools).await
}

/// The backends `config` names, with `tools` registered on the runtime (Nova's; none for the
/// pipeline stages).
pub async fn env_from_config(config: &Config, tools: Vec<Arc<dyn Tool>>) -> Result<Arc<Env>, Error> {
    let project = config.require_project()?;
    // The cloud clients connect on first use (see `lazy`); the local ones have nothing to wait for.
    let store: Arc<dyn Store> = match &config.store {
        StoreBackend::Sqlite(path) => Arc::new(harmonia_store_sqlite::SqliteStore::open(path).map_err(Error::from)?),
        StoreBackend::Firestore { database } => {
            let (project, database) = (project.to_owned(), database.clone());
            Arc::new(LazyStore::new("firestore", move || {
                let (project, database) = (project.clone(), database.clone());
                async move {
                    let store = harmonia_store_firestore::FirestoreStore::connect(&project, &database).await?;
                    Ok(Arc::new(store) as Arc<dyn Store>)
                }
            }))
        }
    };
    let blobs: Arc<dyn harmonia_blob::Blobs> = match &config.blobs {
        BlobBackend::Folder(path) => Arc::new(harmonia_blob::Folder::new(path)),
        BlobBackend::Gcs { bucket } => {
            let bucket = bucket.clone();
            Arc::new(LazyBlobs::new(format!("gs://{bucket}"), move || {
                let bucket = bucket.clone();
                async move {
                    let blobs = harmonia_blob_gcs::GcsBlobs::connect(&bucket).await?;
                    Ok(Arc::new(blobs) as Arc<dyn harmonia_blob::Blobs>)
                }
            }))
        }
    };
    let uploads: Option<Arc<dyn harmonia_blob::Uploads>> = config.sources_bucket.clone().map(|bucket| {
        Arc::new(LazyUploads::new(bucket.clone(), move || {
            let bucket = bucket.clone();
            async move {
                let uploads = harmonia_blob_gcs::GcsUploads::connect(&bucket).await?;
                Ok(Arc::new(uploads) as Arc<dyn harmonia_blob::Uploads>)
            }
        })) as Arc<dyn harmonia_blob::Uploads>
    });
    let bus_config = PubSubConfig::from_env(project);
    let bus = LazyBus::new("pubsub", move || {
        let config = bus_config.clone();
        async move { Ok(Arc::new(PubSubBus::connect(config).await?) as Arc<dyn harmonia_bus::Bus>) }
    });
    let model = model(&config.model, Some(project), config.model_rpm)?;
    let skills = match &config.skills_dir {
        Some(dir) => SkillLibrary::load(dir)
            .map_err(|_| config_error("HARMONIA_SKILLS_DIR does not hold a loadable skills folder"))?,
        None => SkillLibrary::embedded().map_err(|_| config_error("the skills this build embeds do not load"))?,
    };
    let runtime = tools
        .into_iter()
        .fold(Runtime::new(model, store.clone(), Arc::new(skills)), Runtime::with_tool)
        .with_repairs(config.model_repairs);
    let connector: Arc<dyn Connector> = match &config.connector {
        None | Some(ConnectorBackend::Sandbox) => Arc::new(Sandbox::new(store.clone())),
        Some(ConnectorBackend::Webhook { url, secret }) => {
            Arc::new(Webhook::new(url, SigningKey::from_secret(secret.expose_secret())?, Duration::from_secs(30))?)
        }
    };
    let accounts = match &config.channel_secrets {
        Some(path) => harmonia_pipeline::connector::accounts::Accounts::load(path)?,
        None => harmonia_pipeline::connector::accounts::Accounts::none(),
    };
    let reach = reach(config, connector.as_ref(), &accounts)?;
    let (connector, accounts) = match config.fault_effect_hold {
        // Drills: every connector call is held after the platform answered, so the function
        // can be killed with the post made and its receipt unwritten.
        Some(hold) => {
            let drill = drill::Drill::new(hold, config.fault_ready_file.clone());
            let held =
                |c: Arc<dyn Connector>| Arc::new(drill::HeldEffects::new(c, drill.clone())) as Arc<dyn Connector>;
            let accounts =
                accounts.iter().fold(harmonia_pipeline::connector::accounts::Accounts::none(), |all, (p, h, c)| {
                    all.with(p, h, held(c.clone()))
                });
            (held(connector), accounts)
        }
        None => (connector, accounts),
    };
    Ok(Arc::new(Env {
        store,
        blobs,
        uploads,
        bus: Arc::new(bus),
        runtime: Arc::new(runtime),
        connector,
        accounts,
        reach,
        clock: Arc::new(harmonia_pipeline::clock::SystemClock),
        topic_prefix: config.topic_prefix.clone(),
        pipeline_user: "pipeline".parse()?,
        step_lease: config.step_lease,
        claims: Default::default(),
        liveness: None,
    }))
}

/// Where this function's posts go, for policy: what its connectors reach when it holds them
/// (`HARMONIA_CONNECTOR` or `HARMONIA_CHANNEL_SECRETS` set), which must then be what
/// `HARMONIA_PUBLISHING` declares, if it declares anything; otherwise the declaration, or the
/// sandbox alone.
fn reach(
    config: &Config,
    connector: &dyn Connector,
    accounts: &harmonia_pipeline::connector::accounts::Accounts,
) -> Result<harmonia_pipeline::connector::reach::Reach, Error> {
    let held = harmonia_pipeline::connector::reach::Reach::of(connector, accounts);
    let holds = config.connector.is_some() || config.channel_secrets.is_some();
    match &config.publishing {
        None => Ok(held),
        Some(declared) if !holds => Ok(declared.clone()),
        Some(declared) => match held.differences(declared).as_slice() {
            [] => Ok(held),
            differences => Err(Error::new(
                Code::InvalidConfig,
                format!(
                    "HARMONIA_PUBLISHING does not match this function's connectors: it {}",
                    differences.join("; it ")
                ),
            )),
        },
    }
}

/// Who may call the operator, ingest and Nova functions: operator credentials checked against
/// their records in `store` (every function reads the same records, so a revocation holds
/// everywhere on the next request), and, when `HARMONIA_GOOGLE_AUDIENCE` is set, Google-signed
/// ID tokens for that audience, verified against the key set fetched from
/// `HARMONIA_GOOGLE_JWKS`, with verified emails mapped to operators and workspaces by the file
/// `HARMONIA_GOOGLE_PRINCIPALS` names (`{"email": {"operator", "workspace"}}`).
pub fn credentials(config: &Config, store: Arc<dyn Store>) -> Result<Arc<Credentials>, Error> {
    let mut credentials = Credentials::new(store);
    if let Some(google) = &config.google {
        let bytes = std::fs::read(&google.principals)
            .map_err(|_| config_error("HARMONIA_GOOGLE_PRINCIPALS names a file that cannot be read"))?;
        let principals: HashMap<String, Principal> = serde_json::from_slice(&bytes).map_err(|_| {
            config_error("HARMONIA_GOOGLE_PRINCIPALS names a file that is not an email-to-principal map")
        })?;
        let keys = KeySet::new(&google.jwks_url)
            .map_err(|_| config_error("HARMONIA_GOOGLE_JWKS must be an http or https URL"))?;
        credentials = credentials.with_google(GoogleIdTokens::new(keys, &google.audience, principals));
    }
    Ok(Arc::new(credentials))
}

/// The router of a pipeline stage function (or the dead-letter recorder): `POST /push/<topic>`
/// for each of its subscriptions, and `GET /healthz`; any other path or method is a JSON 404 or
/// 405.
pub fn stage_router(function: Function, env: &Arc<Env>) -> Result<Router, Error> {
    stage_router_with(function, env, None)
}

/// [`stage_router`], with every delivery held by `drill` before its step runs.
fn stage_router_with(function: Function, env: &Arc<Env>, drill: Option<drill::Drill>) -> Result<Router, Error> {
    if !function.is_pushed() {
        return Err(config_error("the function is not served by push subscriptions"));
    }
    let router = Router::new().route("/healthz", axum::routing::get(|| async { "ok" }));
    Ok(harmonia_http::json_fallbacks(router.merge(push_routes(function, env, drill))))
}

/// `POST /push/<topic>` for each subscription of `function` in the registry (the ingest
/// function's: the sources bucket's notifications), without fallbacks, to merge into the
/// function's own router.
pub fn push_router(function: Function, env: &Arc<Env>) -> Router {
    push_routes(function, env, None)
}

fn push_routes(function: Function, env: &Arc<Env>, drill: Option<drill::Drill>) -> Router {
    let mut router = Router::new();
    for subscriber in handlers(env, Timing::CLOUD).into_iter().filter(|s| s.function == function) {
        let topic = subscriber.spec.topic.to_string();
        // One drill for the whole function, so its holds are numbered across its subscriptions.
        let handler: Arc<dyn harmonia_bus::Handler> = match &drill {
            Some(drill) => Arc::new(drill::Delayed::new(subscriber.handler, topic.clone(), drill.clone())),
            None => subscriber.handler,
        };
        router = router.merge(push::router(&format!("/push/{topic}"), handler));
    }
    router
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

/// Log to stderr (human-readable, or Cloud Logging JSON), and export spans to OTLP or Cloud
/// Trace as `config` selects, and metrics to the OTLP collector; off by default. An exporter
/// that cannot be built is an error (logging is installed either way, so the caller can report
/// it).
pub async fn init_telemetry(
    function: &str,
    config: &Config,
) -> Result<harmonia_telemetry::Exporters, harmonia_telemetry::Error> {
    let format_name = match config.log_format {
        LogFormat::Text => None,
        LogFormat::Json => Some("json"),
    };
    let format = harmonia_telemetry::Format::from_name(format_name, config.project.clone());
    match config.export(function) {
        Ok(export) => harmonia_telemetry::init_with(format, &config.log_filter, &export).await,
        Err(e) => {
            harmonia_telemetry::init(format, &config.log_filter);
            Err(e)
        }
    }
}

/// Run a pipeline stage function (or the dead-letter recorder) until SIGTERM; this is its
/// binary's whole `main`.
pub async fn run_stage(function: Function) -> std::process::ExitCode {
    run(function, Vec::new(), |env, config| {
        let drill = config.fault_delay.map(|hold| drill::Drill::new(hold, config.fault_ready_file.clone()));
        stage_router_with(function, &env, drill)
    })
    .await
}

/// Run `function` with `tools` on its runtime and the router `app` builds from the backends
/// and the configuration, until SIGTERM or Ctrl-C. An invalid configuration stops it before
/// anything starts, with the variable named on stderr and a failure exit code.
pub async fn run(
    function: Function,
    tools: Vec<Arc<dyn Tool>>,
    app: impl FnOnce(Arc<Env>, &Config) -> Result<Router, Error>,
) -> std::process::ExitCode {
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            // Logging is configured by the very variables that failed to parse, so this one
            // line goes to stderr directly; Cloud Run records stderr as the service's log.
            eprintln!("harmonia-{function}: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let exporters = match init_telemetry(function.as_str(), &config).await {
        Ok(exporters) => exporters,
        Err(e) => {
            tracing::error!(function = %function, error = %e, "telemetry could not be configured");
            return std::process::ExitCode::FAILURE;
        }
    };
    let serve = async {
        let env = env_from_config(&config, tools).await?;
        let mut app = app(env, &config)?;
        if let Some(hold) = config.fault_response_hold
            && !function.is_pushed()
        {
            // Drills: an HTTP function holds each response after doing the work, so it can be
            // killed with the work done and the answer lost.
            app = drill::hold_responses(app, drill::Drill::new(hold, config.fault_ready_file.clone()));
        }
        let listener = tokio::net::TcpListener::bind(SocketAddr::new(config.bind, config.port))
            .await
            .map_err(|_| Error::new(Code::DependencyUnavailable, "the port is not available"))?;
        tracing::info!(function = %function, port = config.port, "serving");
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown())
            .await
            .map_err(|_| Error::from_code(Code::Internal))
    };
    let code = match serve.await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(function = %function, code = %e.code, message = %e.message, "stopped");
            std::process::ExitCode::FAILURE
        }
    };
    exporters.shutdown().await;
    code
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

#[cfg(test)]
mod tests;
