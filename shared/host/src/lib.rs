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
//! | `HARMONIA_CHANNEL_SECRETS` | unset: no channel accounts | the channel secrets file, or a directory of them (on Cloud Run, one Secret Manager secret per channel, each mounted as `<dir>/<name>/channel.toml`): channels with credentials of their own, e.g. Bluesky app passwords (see `harmonia_connectors::accounts`) |
//! | `HARMONIA_PUBLISHING` | unset: what this function's own connectors reach | JSON: where the deployment's posts go, `{"connector": …, "accounts": [{"platform", "handle", "connector"}]}`, for the functions that judge drafts without holding credentials (policy, operator); a function holding connectors refuses to start when it differs (see `harmonia_connectors::reach`) |
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
//! `harmonia operator add` on the embedded default, and for a deployment with
//! `harmonia first-admin` (its first admin), then `harmonia --cloud operator add` or
//! `POST /v1/operators` (see `harmonia_auth`). The retired
//! `HARMONIA_OPERATOR_CREDENTIALS` is refused at start-up, naming the variable.
//!
//! Stage functions serve `POST /push/<topic>` for each subscription the registry gives them
//! (the push endpoint of that subscription) and `GET /healthz`; the operator, ingest and Nova
//! functions pass their own routers to [`run`]. Every function's router counts its requests and
//! the time the instance was busy (`harmonia.http.requests`, `harmonia.instance.busy`, as Cloud
//! Run bills request-based instances) on the process's meter.

#[cfg(feature = "cloud")]
mod busy;
#[cfg(feature = "cloud")]
mod cloud;
pub mod config;
#[cfg(feature = "cloud")]
mod drill;
#[cfg(feature = "cloud")]
pub mod lazy;

#[cfg(feature = "cloud")]
pub use cloud::{env_from_config, env_from_environment, provision, push_router, run, run_stage, stage_router};

use std::collections::HashMap;
use std::sync::Arc;

use harmonia_agents::gemini::{Gemini, GeminiConfig};
use harmonia_agents::model::Model;
use harmonia_agents::offline::OfflineModel;
use harmonia_agents::openai::{OpenAi, OpenAiConfig};
use harmonia_auth::{Credentials, GoogleIdTokens, KeySet, Principal};
use harmonia_contracts::{Code, Error};
pub use harmonia_pipeline::registry::Function;
use harmonia_store::Store;

use config::LogFormat;
pub use config::{Config, ModelBackend};

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

#[cfg(all(test, feature = "cloud"))]
mod tests;
