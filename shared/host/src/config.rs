//! Start-up configuration: every variable of the crate's table, parsed once into typed fields.
//!
//! [`Config::from_env`] runs before anything else in a function's `main`; an invalid value
//! stops start-up with an [`Error`] naming the variable, never a default and never a panic.
//! An empty or blank value counts as unset (deployment tools often write empty variables).
//! Secrets are held as [`SecretString`] so they cannot be logged by accident.

use std::ffi::OsString;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use axum::http::Uri;
use harmonia_contracts::Code;
use harmonia_pipeline::registry::Timing;
use secrecy::SecretString;

/// Google's published ID-token signing keys, the default of `HARMONIA_GOOGLE_JWKS`.
pub const GOOGLE_JWKS_URL: &str = "https://www.googleapis.com/oauth2/v3/certs";

/// The variable that once named a file of operator credential digests. Operator credentials
/// now live in the store; a start-up that still sets it is refused with this name.
pub const RETIRED_CREDENTIALS_VAR: &str = "HARMONIA_OPERATOR_CREDENTIALS";

/// Longest accepted `HARMONIA_STEP_LEASE_SECS`: Pub/Sub's longest ack deadline.
const MAX_STEP_LEASE_SECS: u64 = harmonia_pipeline::registry::MAX_STEP_LEASE.as_secs();

/// Longest accepted topic prefix, so every prefixed topic and subscription name stays within
/// Pub/Sub's 255 characters.
const MAX_TOPIC_PREFIX_CHARS: usize = 100;

/// A variable that holds an invalid value (or lacks a required one).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid_config: {variable} {expected}")]
pub struct Error {
    /// The environment variable.
    pub variable: &'static str,
    /// What it must hold, as a safe sentence (the value itself is never repeated: it may be a
    /// secret).
    pub expected: &'static str,
}

impl Error {
    fn new(variable: &'static str, expected: &'static str) -> Self {
        Self { variable, expected }
    }
}

impl From<Error> for harmonia_contracts::Error {
    fn from(e: Error) -> Self {
        harmonia_contracts::Error::new(Code::InvalidConfig, format!("{} {}", e.variable, e.expected))
    }
}

/// Where state lives (`HARMONIA_STORE`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreBackend {
    /// Firestore in `GOOGLE_CLOUD_PROJECT`, database `FIRESTORE_DATABASE`.
    Firestore {
        /// Firestore database id.
        database: String,
    },
    /// A SQLite file.
    Sqlite(PathBuf),
}

/// Where blobs (long sources' transcripts and frames) live (`HARMONIA_BLOBS`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlobBackend {
    /// A Cloud Storage bucket (through `STORAGE_EMULATOR_HOST` when that is set).
    Gcs {
        /// Bucket name.
        bucket: String,
    },
    /// A folder.
    Folder(PathBuf),
}

/// Which model answers (`HARMONIA_MODEL`).
#[derive(Clone, PartialEq, Eq)]
pub enum ModelBackend {
    /// The deterministic offline model (`provenance: mock`).
    Offline,
    /// Gemini on Vertex AI, with Application Default Credentials (`vertex`).
    Vertex {
        /// Vertex AI location, a region or `global` (`GEMINI_LOCATION`).
        location: String,
        /// Model name (`GEMINI_MODEL`).
        model: String,
    },
    /// Gemini through the Gemini API, with an API key (`gemini`).
    Gemini {
        /// Model name (`GEMINI_MODEL`).
        model: String,
        /// The API key (`GEMINI_API_KEY`); never printed.
        api_key: String,
        /// The Gemini API's base URL (`GEMINI_BASE_URL`, default Google's): a gateway or
        /// proxy that speaks the same API.
        base_url: String,
    },
    /// An OpenAI-compatible chat completions server (`openai`): OpenAI, Ollama, the llama.cpp
    /// server, vLLM.
    OpenAi {
        /// Base URL up to the API version (`OPENAI_BASE_URL`, default OpenAI's).
        base_url: String,
        /// Model name (`OPENAI_MODEL`, required).
        model: String,
        /// The API key (`OPENAI_API_KEY`; a local server may need none); never printed.
        api_key: Option<String>,
    },
}

impl std::fmt::Debug for ModelBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelBackend::Offline => f.write_str("Offline"),
            ModelBackend::Vertex { location, model } => {
                f.debug_struct("Vertex").field("location", location).field("model", model).finish()
            }
            ModelBackend::Gemini { model, base_url, .. } => f
                .debug_struct("Gemini")
                .field("model", model)
                .field("api_key", &"<redacted>")
                .field("base_url", base_url)
                .finish(),
            ModelBackend::OpenAi { base_url, model, api_key } => f
                .debug_struct("OpenAi")
                .field("base_url", base_url)
                .field("model", model)
                .field("api_key", &api_key.as_ref().map(|_| "<redacted>"))
                .finish(),
        }
    }
}

/// Where posts go (`HARMONIA_CONNECTOR`).
#[derive(Clone, Debug)]
pub enum ConnectorBackend {
    /// The local platform simulation.
    Sandbox,
    /// A signed webhook.
    Webhook {
        /// Target URL (`WEBHOOK_URL`).
        url: String,
        /// HMAC signing secret (`WEBHOOK_SECRET`).
        secret: SecretString,
    },
}

/// Google ID-token verification (enabled by `HARMONIA_GOOGLE_AUDIENCE`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GoogleTokens {
    /// Where the signing keys are fetched (`HARMONIA_GOOGLE_JWKS`, Google's certificates by default).
    pub jwks_url: String,
    /// The audience a token must name (`HARMONIA_GOOGLE_AUDIENCE`).
    pub audience: String,
    /// The email → identity file (`HARMONIA_GOOGLE_PRINCIPALS`).
    pub principals: PathBuf,
}

/// How logs are written (`HARMONIA_LOG_FORMAT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// Cloud Logging JSON.
    Json,
}

/// OTLP/HTTP export of traces and metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtlpExport {
    /// The collector's base URL (`/v1/traces` and `/v1/metrics` are appended).
    pub endpoint: harmonia_telemetry::OtlpEndpoint,
    /// `OTEL_SERVICE_NAME`, when set; otherwise the function's own name is used.
    pub service: Option<String>,
}

/// Everything a function reads from its environment, validated.
#[derive(Clone, Debug)]
pub struct Config {
    /// Listen port (`PORT`).
    pub port: u16,
    /// Listen address (`HARMONIA_BIND`).
    pub bind: IpAddr,
    /// Google Cloud project (`GOOGLE_CLOUD_PROJECT`).
    pub project: Option<String>,
    /// State backend.
    pub store: StoreBackend,
    /// Blob backend.
    pub blobs: BlobBackend,
    /// The bucket operators upload sources to (`HARMONIA_SOURCES_BUCKET`), if any.
    pub sources_bucket: Option<String>,
    /// Where the Nova function answers (`HARMONIA_NOVA_URL`): the operator function forwards
    /// the console's questions there. Unset, it serves no `/v1/ask`.
    pub nova_url: Option<String>,
    /// Prefix of every topic and subscription (`HARMONIA_TOPIC_PREFIX`), valid in Pub/Sub names.
    pub topic_prefix: String,
    /// Model backend.
    pub model: ModelBackend,
    /// Publishing connector (`HARMONIA_CONNECTOR`); `None` when unset: a function that never
    /// sends gets the sandbox, and its reach from [`Config::publishing`].
    pub connector: Option<ConnectorBackend>,
    /// Where this deployment's posts go (`HARMONIA_PUBLISHING`), declared for the functions
    /// that judge drafts without holding the credentials
    /// ([`harmonia_connectors::reach`]).
    pub publishing: Option<harmonia_connectors::reach::Reach>,
    /// The channel secrets file (`HARMONIA_CHANNEL_SECRETS`): channel accounts with their own
    /// credentials ([`harmonia_connectors::accounts`]).
    pub channel_secrets: Option<PathBuf>,
    /// Google ID-token verification, when enabled.
    pub google: Option<GoogleTokens>,
    /// Skills folder (`HARMONIA_SKILLS_DIR`); unset, the skills the build embeds.
    pub skills_dir: Option<PathBuf>,
    /// Log filter directives (`HARMONIA_LOG`).
    pub log_filter: String,
    /// Log format.
    pub log_format: LogFormat,
    /// OTLP export, when an endpoint is configured.
    pub otlp: Option<OtlpExport>,
    /// The span exporter (`HARMONIA_TRACE_EXPORTER`); unset: OTLP when an endpoint is set,
    /// otherwise none.
    pub trace_exporter: Option<harmonia_telemetry::TraceExporter>,
    /// How long a step's in-flight claim holds off duplicates (`HARMONIA_STEP_LEASE_SECS`).
    pub step_lease: Duration,
    /// Corrective turns per invocation when an answer misses its contract
    /// (`HARMONIA_MODEL_REPAIRS`).
    pub model_repairs: harmonia_agents::runtime::Repairs,
    /// The most model requests a minute the process sends (`HARMONIA_MODEL_RPM`).
    pub model_rpm: Option<std::num::NonZeroU32>,
    /// Drills: hold each push delivery this long before the step runs (`HARMONIA_FAULT_DELAY_MS`).
    pub fault_delay: Option<Duration>,
    /// Drills: hold each HTTP response this long after the work (`HARMONIA_FAULT_RESPONSE_HOLD_MS`).
    pub fault_response_hold: Option<Duration>,
    /// Drills: hold each connector call this long after the platform answered, before the
    /// receipt is written (`HARMONIA_FAULT_EFFECT_HOLD_MS`).
    pub fault_effect_hold: Option<Duration>,
    /// Where drills report each hold (`HARMONIA_FAULT_READY_FILE`), if anywhere.
    pub fault_ready_file: Option<PathBuf>,
}

/// Reads variables through `lookup`, so tests can parse a table instead of the process
/// environment.
struct Vars<F>(F);

impl<F: Fn(&str) -> Option<OsString>> Vars<F> {
    /// The variable's text; `None` when unset or blank.
    fn get(&self, name: &'static str) -> Result<Option<String>, Error> {
        match (self.0)(name) {
            None => Ok(None),
            Some(raw) => {
                let text = raw.into_string().map_err(|_| Error::new(name, "must be UTF-8 text"))?;
                Ok(Some(text.trim().to_owned()).filter(|t| !t.is_empty()))
            }
        }
    }

    fn parse<T: std::str::FromStr>(&self, name: &'static str, expected: &'static str) -> Result<Option<T>, Error> {
        self.get(name)?.map(|v| v.parse().map_err(|_| Error::new(name, expected))).transpose()
    }

    fn millis(&self, name: &'static str) -> Result<Option<Duration>, Error> {
        let ms: Option<u64> = self.parse(name, "must be a whole number of milliseconds (0 turns it off)")?;
        Ok(ms.filter(|ms| *ms > 0).map(Duration::from_millis))
    }

    fn url(&self, name: &'static str) -> Result<Option<String>, Error> {
        self.get(name)?
            .map(|v| http_url(&v).ok_or_else(|| Error::new(name, "must be an http or https URL")))
            .transpose()
    }
}

/// `text` as an absolute http(s) URL without a trailing slash, if it is one.
fn http_url(text: &str) -> Option<String> {
    let uri: Uri = text.parse().ok()?;
    let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
    (scheme_ok && uri.authority().is_some_and(|a| !a.host().is_empty())).then(|| text.trim_end_matches('/').to_owned())
}

fn is_name(text: &str, extra: &str) -> bool {
    text.chars().all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
}

/// The model backend `choice` names (`HARMONIA_MODEL` when `None`) and its provider's variables.
fn model_backend<F: Fn(&str) -> Option<OsString>>(vars: &Vars<F>, choice: Option<&str>) -> Result<ModelBackend, Error> {
    let backend = match choice.map(Some).unwrap_or(vars.get("HARMONIA_MODEL")?.as_deref()) {
        None | Some("offline") => ModelBackend::Offline,
        Some(backend @ ("vertex" | "gemini")) => {
            let model = vars.get("GEMINI_MODEL")?.unwrap_or_else(|| "gemini-2.5-flash".into());
            if !is_name(&model, "-._/@") {
                return Err(Error::new("GEMINI_MODEL", "must be a model name such as gemini-2.5-flash"));
            }
            if backend == "vertex" {
                let location = vars.get("GEMINI_LOCATION")?.unwrap_or_else(|| "us-central1".into());
                if !is_name(&location, "-") {
                    return Err(Error::new(
                        "GEMINI_LOCATION",
                        "must be a Vertex AI location such as us-central1, or global",
                    ));
                }
                ModelBackend::Vertex { location, model }
            } else {
                let api_key = vars.get("GEMINI_API_KEY")?.filter(|k| !k.trim().is_empty()).ok_or_else(|| {
                    Error::new("GEMINI_API_KEY", "must be set to a Gemini API key when the model is gemini")
                })?;
                if !api_key.bytes().all(|b| b.is_ascii_graphic()) {
                    return Err(Error::new("GEMINI_API_KEY", "must be printable ASCII with no spaces"));
                }
                let base_url =
                    vars.url("GEMINI_BASE_URL")?.unwrap_or_else(|| harmonia_agents::gemini::GEMINI_API_ENDPOINT.into());
                ModelBackend::Gemini { model, api_key, base_url }
            }
        }
        Some("openai") => {
            let base_url =
                vars.url("OPENAI_BASE_URL")?.unwrap_or_else(|| harmonia_agents::openai::OPENAI_BASE_URL.into());
            let model = vars.get("OPENAI_MODEL")?.filter(|m| !m.trim().is_empty()).ok_or_else(|| {
                Error::new(
                    "OPENAI_MODEL",
                    "must name the model when the model is openai, e.g. gpt-4.1-mini or qwen2.5:7b",
                )
            })?;
            if !is_name(&model, "-._/:@") {
                return Err(Error::new("OPENAI_MODEL", "must be a model name such as gpt-4.1-mini or qwen2.5:7b"));
            }
            let api_key = vars.get("OPENAI_API_KEY")?.filter(|k| !k.trim().is_empty());
            if api_key.as_ref().is_some_and(|k| !k.bytes().all(|b| b.is_ascii_graphic())) {
                return Err(Error::new("OPENAI_API_KEY", "must be printable ASCII with no spaces"));
            }
            ModelBackend::OpenAi { base_url, model, api_key }
        }
        Some(_) => return Err(Error::new("HARMONIA_MODEL", "must be offline, vertex, gemini or openai")),
    };
    Ok(backend)
}

/// `HARMONIA_MODEL_REPAIRS`: 0-5 corrective turns per invocation, 2 when unset.
fn model_repairs<F: Fn(&str) -> Option<OsString>>(vars: &Vars<F>) -> Result<harmonia_agents::runtime::Repairs, Error> {
    Ok(vars
        .parse("HARMONIA_MODEL_REPAIRS", "must be a whole number of corrective turns from 0 to 5 (0 turns them off)")?
        .unwrap_or_default())
}

/// `HARMONIA_MODEL_RPM`: 1-100000 requests a minute; unset, none.
fn model_rpm<F: Fn(&str) -> Option<OsString>>(vars: &Vars<F>) -> Result<Option<std::num::NonZeroU32>, Error> {
    const EXPECTED: &str = "must be a whole number of model requests a minute, from 1 to 100000";
    match vars.parse::<u32>("HARMONIA_MODEL_RPM", EXPECTED)? {
        None => Ok(None),
        Some(n) if (1..=100_000).contains(&n) => Ok(std::num::NonZeroU32::new(n)),
        Some(_) => Err(Error::new("HARMONIA_MODEL_RPM", EXPECTED)),
    }
}

/// `HARMONIA_MODEL_RPM` from this process's environment (for commands that build their own
/// model client).
pub fn model_rpm_from_env() -> Result<Option<std::num::NonZeroU32>, Error> {
    model_rpm(&Vars(|name: &str| std::env::var_os(name)))
}

/// `HARMONIA_MODEL_REPAIRS` from this process's environment (for commands that build their
/// own runtime).
pub fn model_repairs_from_env() -> Result<harmonia_agents::runtime::Repairs, Error> {
    model_repairs(&Vars(|name: &str| std::env::var_os(name)))
}

impl ModelBackend {
    /// The backend `choice` names (a `--model` flag), or `HARMONIA_MODEL` when `None`, with
    /// its provider's variables read from this process's environment.
    pub fn from_env(choice: Option<&str>) -> Result<Self, Error> {
        model_backend(&Vars(|name: &str| std::env::var_os(name)), choice)
    }
}

/// Whether every registry name built from `prefix` is a valid Pub/Sub name: names are the
/// prefix followed by a lowercase topic or subscription, so the prefix must start a name.
fn valid_topic_prefix(prefix: &str) -> bool {
    prefix.is_empty()
        || (prefix.len() <= MAX_TOPIC_PREFIX_CHARS && format!("{prefix}topic").parse::<harmonia_bus::Name>().is_ok())
}

/// `HARMONIA_BLOBS`: `gcs:<bucket>` or `folder:<path>`. Unset, a SQLite store keeps blobs in
/// the folder `blobs` beside its file (as the embedded default does); Firestore state needs a
/// bucket named, since nothing beside it is durable on Cloud Run.
fn blob_backend<F: Fn(&str) -> Option<OsString>>(vars: &Vars<F>, store: &StoreBackend) -> Result<BlobBackend, Error> {
    const VAR: &str = "HARMONIA_BLOBS";
    const EXPECTED: &str = "must be gcs:<bucket> (a Cloud Storage bucket name) or folder:<path>";
    match vars.get(VAR)? {
        None => match store {
            StoreBackend::Sqlite(file) => {
                Ok(BlobBackend::Folder(file.parent().unwrap_or_else(|| std::path::Path::new(".")).join("blobs")))
            }
            StoreBackend::Firestore { .. } => Err(Error::new(
                VAR,
                "is required with Firestore state: gcs:<bucket>, the bucket that holds long sources",
            )),
        },
        Some(value) => {
            if let Some(bucket) = value.strip_prefix("gcs:").map(str::trim) {
                if harmonia_blob::valid_bucket_name(bucket) {
                    return Ok(BlobBackend::Gcs { bucket: bucket.to_owned() });
                }
            } else if let Some(path) = value.strip_prefix("folder:").map(str::trim).filter(|p| !p.is_empty()) {
                return Ok(BlobBackend::Folder(PathBuf::from(path)));
            }
            Err(Error::new(VAR, EXPECTED))
        }
    }
}

impl Config {
    /// The configuration of this process's environment.
    pub fn from_env() -> Result<Self, Error> {
        Self::from_lookup(|name| std::env::var_os(name))
    }

    /// The configuration that `lookup` (variable → value) describes.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Result<Self, Error> {
        let vars = Vars(lookup);
        let port = vars.parse("PORT", "must be a port number (0-65535)")?.unwrap_or(8080);
        let bind = vars.parse("HARMONIA_BIND", "must be an IP address")?.unwrap_or(IpAddr::from([0, 0, 0, 0]));
        let project = vars.get("GOOGLE_CLOUD_PROJECT")?;
        if project.as_deref().is_some_and(|p| !is_name(p, "-.:")) {
            return Err(Error::new("GOOGLE_CLOUD_PROJECT", "must be a project id (letters, digits, '-', '.', ':')"));
        }
        let store = match vars.get("HARMONIA_STORE")?.as_deref() {
            None | Some("firestore") => {
                let database = vars.get("FIRESTORE_DATABASE")?.unwrap_or_else(|| "(default)".into());
                if database != "(default)" && !is_name(&database, "-") {
                    return Err(Error::new("FIRESTORE_DATABASE", "must be a database id or (default)"));
                }
                StoreBackend::Firestore { database }
            }
            Some(s) => match s.strip_prefix("sqlite:").map(str::trim).filter(|p| !p.is_empty()) {
                Some(path) => StoreBackend::Sqlite(PathBuf::from(path)),
                None => return Err(Error::new("HARMONIA_STORE", "must be firestore or sqlite:<path>")),
            },
        };
        let blobs = blob_backend(&vars, &store)?;
        let sources_bucket = vars.get("HARMONIA_SOURCES_BUCKET")?;
        if sources_bucket.as_deref().is_some_and(|b| !harmonia_blob::valid_bucket_name(b)) {
            return Err(Error::new("HARMONIA_SOURCES_BUCKET", "must be a Cloud Storage bucket name"));
        }
        let topic_prefix = vars.get("HARMONIA_TOPIC_PREFIX")?.unwrap_or_default();
        if !valid_topic_prefix(&topic_prefix) {
            return Err(Error::new(
                "HARMONIA_TOPIC_PREFIX",
                "must start with a letter, use only letters, digits and - _ . ~ + %, not start with goog, and be at most 100 characters",
            ));
        }
        let model = model_backend(&vars, None)?;
        let connector = match vars.get("HARMONIA_CONNECTOR")?.as_deref() {
            None => None,
            Some("sandbox") => Some(ConnectorBackend::Sandbox),
            Some("webhook") => Some(ConnectorBackend::Webhook {
                url: vars
                    .url("WEBHOOK_URL")?
                    .ok_or_else(|| Error::new("WEBHOOK_URL", "is required for the webhook connector"))?,
                secret: vars
                    .get("WEBHOOK_SECRET")?
                    .map(SecretString::from)
                    .ok_or_else(|| Error::new("WEBHOOK_SECRET", "is required for the webhook connector"))?,
            }),
            Some(_) => return Err(Error::new("HARMONIA_CONNECTOR", "must be sandbox or webhook")),
        };
        let publishing = vars
            .get("HARMONIA_PUBLISHING")?
            .map(|text| harmonia_connectors::reach::Reach::parse(&text))
            .transpose()
            .map_err(|_| {
                Error::new(
                    "HARMONIA_PUBLISHING",
                    "must be a JSON object {\"connector\": sandbox or webhook, \"accounts\": [{\"platform\", \"handle\", \"connector\"}]} naming each Bluesky or Mastodon account once",
                )
            })?;
        if vars.get(RETIRED_CREDENTIALS_VAR)?.is_some() {
            // Refused rather than ignored: a deployment still setting it expects it to grant
            // access, and silently not reading it would lock its operators out without a word.
            return Err(Error::new(
                RETIRED_CREDENTIALS_VAR,
                "is no longer read: operator credentials live in the store (create them with harmonia operator add)",
            ));
        }
        let google = google_tokens(&vars)?;
        let skills_dir = vars.get("HARMONIA_SKILLS_DIR")?.map(PathBuf::from);
        let log_filter = vars.get("HARMONIA_LOG")?.unwrap_or_else(|| "info".into());
        if tracing_subscriber::EnvFilter::try_new(&log_filter).is_err() {
            return Err(Error::new("HARMONIA_LOG", "must be a tracing filter such as info or harmonia=debug"));
        }
        let log_format = match vars.get("HARMONIA_LOG_FORMAT")?.as_deref() {
            None | Some("text") => LogFormat::Text,
            Some("json") => LogFormat::Json,
            Some(_) => return Err(Error::new("HARMONIA_LOG_FORMAT", "must be text or json")),
        };
        let otlp = otlp_export(&vars)?;
        let trace_exporter = trace_exporter(&vars, otlp.as_ref(), project.as_deref())?;
        let step_lease = match vars.parse::<u64>("HARMONIA_STEP_LEASE_SECS", "must be whole seconds from 1 to 600")? {
            None => Timing::CLOUD.model_ack_deadline,
            Some(secs) if (1..=MAX_STEP_LEASE_SECS).contains(&secs) => Duration::from_secs(secs),
            Some(_) => return Err(Error::new("HARMONIA_STEP_LEASE_SECS", "must be whole seconds from 1 to 600")),
        };
        Ok(Self {
            port,
            bind,
            project,
            store,
            blobs,
            sources_bucket,
            nova_url: vars.url("HARMONIA_NOVA_URL")?,
            topic_prefix,
            model,
            connector,
            publishing,
            channel_secrets: vars.get("HARMONIA_CHANNEL_SECRETS")?.map(PathBuf::from),
            google,
            skills_dir,
            log_filter,
            log_format,
            otlp,
            trace_exporter,
            step_lease,
            model_repairs: model_repairs(&vars)?,
            model_rpm: model_rpm(&vars)?,
            fault_delay: vars.millis("HARMONIA_FAULT_DELAY_MS")?,
            fault_response_hold: vars.millis("HARMONIA_FAULT_RESPONSE_HOLD_MS")?,
            fault_effect_hold: vars.millis("HARMONIA_FAULT_EFFECT_HOLD_MS")?,
            fault_ready_file: vars.get("HARMONIA_FAULT_READY_FILE")?.map(PathBuf::from),
        })
    }

    /// What `function` exports: spans as [`Config::trace_exporter`] selects, metrics to the
    /// OTLP collector, named `OTEL_SERVICE_NAME` or `harmonia-<function>`.
    pub fn export(&self, function: &str) -> Result<harmonia_telemetry::Export, harmonia_telemetry::Error> {
        let otlp = self.otlp.as_ref().map(|o| o.endpoint.clone());
        let service =
            self.otlp.as_ref().and_then(|o| o.service.clone()).unwrap_or_else(|| format!("harmonia-{function}"));
        harmonia_telemetry::Export::resolve(service, self.trace_exporter, otlp, self.project.clone())
    }

    /// `GOOGLE_CLOUD_PROJECT`, which Firestore and Pub/Sub require.
    pub fn require_project(&self) -> Result<&str, Error> {
        self.project
            .as_deref()
            .ok_or_else(|| Error::new("GOOGLE_CLOUD_PROJECT", "is required for Firestore and Pub/Sub"))
    }
}

fn google_tokens<F: Fn(&str) -> Option<OsString>>(vars: &Vars<F>) -> Result<Option<GoogleTokens>, Error> {
    let jwks_url = vars.url("HARMONIA_GOOGLE_JWKS")?;
    let Some(audience) = vars.get("HARMONIA_GOOGLE_AUDIENCE")? else {
        return match (jwks_url, vars.get("HARMONIA_GOOGLE_PRINCIPALS")?) {
            (None, None) => Ok(None),
            _ => Err(Error::new("HARMONIA_GOOGLE_AUDIENCE", "is required to verify Google ID tokens")),
        };
    };
    let principals = vars
        .get("HARMONIA_GOOGLE_PRINCIPALS")?
        .map(PathBuf::from)
        .ok_or_else(|| Error::new("HARMONIA_GOOGLE_PRINCIPALS", "is required with HARMONIA_GOOGLE_AUDIENCE"))?;
    Ok(Some(GoogleTokens { jwks_url: jwks_url.unwrap_or_else(|| GOOGLE_JWKS_URL.to_owned()), audience, principals }))
}

/// `HARMONIA_TRACE_EXPORTER`, checked against what its selection needs (an OTLP endpoint, or
/// the project Cloud Trace writes to) by the very rule [`Config::export`] applies later.
fn trace_exporter<F: Fn(&str) -> Option<OsString>>(
    vars: &Vars<F>,
    otlp: Option<&OtlpExport>,
    project: Option<&str>,
) -> Result<Option<harmonia_telemetry::TraceExporter>, Error> {
    use harmonia_telemetry::Error as Refused;
    let variable = harmonia_telemetry::TRACE_EXPORTER_VAR;
    let Some(raw) = vars.get(variable)? else { return Ok(None) };
    let exporter = raw.parse().map_err(|_| Error::new(variable, "must be otlp, cloud_trace or none"))?;
    // The service name plays no part in whether a selection is complete.
    let endpoint = otlp.map(|o| o.endpoint.clone());
    match harmonia_telemetry::Export::resolve("harmonia", Some(exporter), endpoint, project.map(str::to_owned)) {
        Ok(_) => Ok(Some(exporter)),
        Err(Refused::ProjectMissing) => {
            Err(Error::new("GOOGLE_CLOUD_PROJECT", "is required when HARMONIA_TRACE_EXPORTER is cloud_trace"))
        }
        Err(Refused::OtlpEndpointMissing) => {
            Err(Error::new(variable, "is otlp, which needs HARMONIA_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_ENDPOINT)"))
        }
        Err(_) => Err(Error::new(variable, "names an exporter that cannot be configured")),
    }
}

/// The collector's base URL from `HARMONIA_OTLP_ENDPOINT` and the standard `OTEL_EXPORTER_OTLP_*`
/// variables. The exporter takes one base URL, so the per-signal endpoints are honoured when
/// they are `<base>/v1/traces` and `<base>/v1/metrics`; variables naming different collectors
/// are refused rather than one silently winning.
fn otlp_export<F: Fn(&str) -> Option<OsString>>(vars: &Vars<F>) -> Result<Option<OtlpExport>, Error> {
    const DISAGREE: &str = "names a different collector than the other OTLP endpoint variables";
    let mut base: Option<(String, &'static str)> = None;
    let mut agree = |candidate: Option<String>, variable: &'static str| -> Result<(), Error> {
        match (&base, candidate) {
            (_, None) => Ok(()),
            (None, Some(url)) => {
                base = Some((url, variable));
                Ok(())
            }
            (Some((known, _)), Some(url)) if *known == url => Ok(()),
            (Some(_), Some(_)) => Err(Error::new(variable, DISAGREE)),
        }
    };
    agree(vars.url("HARMONIA_OTLP_ENDPOINT")?, "HARMONIA_OTLP_ENDPOINT")?;
    agree(vars.url("OTEL_EXPORTER_OTLP_ENDPOINT")?, "OTEL_EXPORTER_OTLP_ENDPOINT")?;
    for (variable, path, expected) in [
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "/v1/traces", "must be an http or https URL ending in /v1/traces"),
        ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "/v1/metrics", "must be an http or https URL ending in /v1/metrics"),
    ] {
        let signal = vars.get(variable)?;
        let signal_base = signal
            .map(|url| {
                http_url(&url)
                    .and_then(|u| u.strip_suffix(path).map(str::to_owned))
                    .filter(|b| http_url(b).is_some())
                    .ok_or_else(|| Error::new(variable, expected))
            })
            .transpose()?;
        agree(signal_base, variable)?;
    }
    let service = vars.get("OTEL_SERVICE_NAME")?;
    if service.as_deref().is_some_and(|s| s.chars().any(char::is_control) || s.chars().count() > 255) {
        return Err(Error::new("OTEL_SERVICE_NAME", "must be a name of at most 255 printable characters"));
    }
    base.map(|(url, variable)| {
        // The exporter's own parse, so a collector accepted here is one it can use.
        let endpoint = harmonia_telemetry::OtlpEndpoint::from_var(variable, &url)
            .map_err(|_| Error::new(variable, "must be an http or https URL without a query"))?;
        Ok(OtlpExport { endpoint, service })
    })
    .transpose()
}

#[cfg(test)]
mod tests;
