//! What only a deployed function needs (the feature `cloud`): the backends its configuration
//! names (Firestore, Pub/Sub, Cloud Storage, or SQLite and a folder), a stage function's push
//! routes, the registry's topics and subscriptions created on Pub/Sub, and the serving loop.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use harmonia_agents::Runtime;
use harmonia_agents::skills::SkillLibrary;
use harmonia_agents::tools::Tool;
use harmonia_bus_pubsub::{PubSubBus, PubSubConfig, push};
use harmonia_connectors::{Connector, Sandbox, SigningKey, Webhook};
use harmonia_contracts::{Code, Error};
use harmonia_pipeline::Env;
use harmonia_pipeline::registry::{Function, Timing};
use harmonia_pipeline::steps::handlers;
use harmonia_store::Store;
use secrecy::ExposeSecret;

use crate::config::{BlobBackend, Config, ConnectorBackend, StoreBackend};
use crate::lazy::{LazyBlobs, LazyBus, LazyStore, LazyUploads};
use crate::{config_error, drill, init_telemetry, model};

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
        Some(dir) => SkillLibrary::load(dir).map_err(|e| Error::new(Code::InvalidConfig, e.for_operator(true)))?,
        None => SkillLibrary::embedded().map_err(|e| Error::new(Code::InvalidConfig, e.for_operator(false)))?,
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
        Some(path) => harmonia_connectors::accounts::Accounts::load(path, Some(&store))?,
        None => harmonia_connectors::accounts::Accounts::none(),
    };
    let reach = reach(config, connector.as_ref(), &accounts)?;
    let (connector, accounts) = match config.fault_effect_hold {
        // Drills: every connector call is held after the platform answered, so the function
        // can be killed with the post made and its receipt unwritten.
        Some(hold) => {
            let drill = drill::Drill::new(hold, config.fault_ready_file.clone());
            let held =
                |c: Arc<dyn Connector>| Arc::new(drill::HeldEffects::new(c, drill.clone())) as Arc<dyn Connector>;
            let accounts = accounts.iter().fold(harmonia_connectors::accounts::Accounts::none(), |all, (p, h, c)| {
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
        faults: Default::default(),
        sweeps: Default::default(),
    }))
}

/// Where this function's posts go, for policy: what its connectors reach when it holds them
/// (`HARMONIA_CONNECTOR` or `HARMONIA_CHANNEL_SECRETS` set), which must then be what
/// `HARMONIA_PUBLISHING` declares, if it declares anything; otherwise the declaration, or the
/// sandbox alone.
pub(crate) fn reach(
    config: &Config,
    connector: &dyn Connector,
    accounts: &harmonia_connectors::accounts::Accounts,
) -> Result<harmonia_connectors::reach::Reach, Error> {
    let held = harmonia_connectors::reach::Reach::of(connector, accounts);
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
    let bus_error = Error::from;
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
        let app = crate::busy::counted(app);
        let listener = tokio::net::TcpListener::bind(SocketAddr::new(config.bind, config.port))
            .await
            .map_err(|e| Error::new(Code::DependencyUnavailable, "the port is not available").with_cause(e))?;
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
