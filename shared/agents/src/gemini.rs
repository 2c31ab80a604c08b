//! Gemini over REST (`generateContent`): on Vertex AI (any location, `global` included), or
//! through the Gemini API with an API key. Both speak the same body.
//!
//! Sends `systemInstruction`, `contents` (text, `functionCall`, `functionResponse` parts),
//! `tools.functionDeclarations`, and — on turns without tools — `generationConfig` with
//! `responseMimeType: application/json` and the role's `responseJsonSchema`; reads `candidates`,
//! `usageMetadata` and `groundingMetadata`. Authenticates with Application Default Credentials
//! (Vertex AI), an `x-goog-api-key` (the Gemini API), or not at all (a local endpoint).
//!
//! Failures are typed ([`model::Error`]): 401 and 403 (and an API key the Gemini API calls
//! invalid) are `Auth`, 404 `NotFound`, 429 `Throttled`, 5xx, timeouts and connection failures
//! `Unavailable`, other 4xx `BadRequest`, a safety block `Refused`, and an unreadable answer
//! `OutputInvalid`; calls are retried and logged as [`crate::wire`] says, with the provider's
//! error code read from `error.status` and `error.details[].reason`. Provider bodies never
//! leave this module.

use async_trait::async_trait;
use harmonia_contracts::domain::TokenUsage;
use harmonia_contracts::tool::Provenance;
use serde_json::{Map, Value, json};

use crate::model::{self, Grounding, Model, ModelRequest, ModelResponse, Part, Speaker};
use crate::wire::{self, Limits, MAX_RESPONSE_BYTES, Provider, plain_token};

/// How requests are authenticated.
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    /// Application Default Credentials (Cloud Run's service account, or `gcloud auth`).
    ApplicationDefault,
    /// A Gemini API key, sent as `x-goog-api-key`.
    ApiKey(String),
    /// No credentials (a local endpoint).
    None,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Auth::ApplicationDefault => "ApplicationDefault",
            Auth::ApiKey(_) => "ApiKey(<redacted>)",
            Auth::None => "None",
        })
    }
}

/// Which `generateContent` is called.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Api {
    /// Vertex AI: `{endpoint}/v1/projects/{project}/locations/{location}/publishers/google/models/{model}`.
    Vertex {
        /// Project id.
        project: String,
        /// Location, e.g. `us-central1` or `global`.
        location: String,
    },
    /// The Gemini API: `{endpoint}/v1beta/models/{model}`.
    Developer,
}

/// Where and how to call Gemini.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeminiConfig {
    /// Base URL, e.g. `https://us-central1-aiplatform.googleapis.com`.
    pub endpoint: String,
    /// Which API the endpoint serves.
    pub api: Api,
    /// Model, e.g. `gemini-2.5-flash`.
    pub model: String,
    /// Timeout, attempts and backoff.
    pub limits: Limits,
    /// Authentication.
    pub auth: Auth,
}

/// The Gemini API's endpoint.
pub const GEMINI_API_ENDPOINT: &str = "https://generativelanguage.googleapis.com";

impl GeminiConfig {
    /// Vertex AI in `location` (a region, or `global`) for `project` with ADC and sensible limits.
    pub fn vertex(project: &str, location: &str, model: &str) -> Self {
        let endpoint = match location {
            "global" => "https://aiplatform.googleapis.com".to_owned(),
            region => format!("https://{region}-aiplatform.googleapis.com"),
        };
        Self {
            endpoint,
            api: Api::Vertex { project: project.to_owned(), location: location.to_owned() },
            auth: Auth::ApplicationDefault,
            ..Self::limits(model)
        }
    }

    /// The Gemini API with `api_key`, and the same limits.
    pub fn developer(api_key: &str, model: &str) -> Self {
        Self { auth: Auth::ApiKey(api_key.to_owned()), ..Self::limits(model) }
    }

    /// The Gemini API's endpoint and the default limits, unauthenticated.
    fn limits(model: &str) -> Self {
        Self {
            endpoint: GEMINI_API_ENDPOINT.to_owned(),
            api: Api::Developer,
            model: model.to_owned(),
            limits: Limits::default(),
            auth: Auth::None,
        }
    }

    fn url(&self) -> String {
        let base = self.endpoint.trim_end_matches('/');
        match &self.api {
            Api::Vertex { project, location } => format!(
                "{base}/v1/projects/{project}/locations/{location}/publishers/google/models/{}:generateContent",
                self.model
            ),
            Api::Developer => format!("{base}/v1beta/models/{}:generateContent", self.model),
        }
    }
}

/// The Gemini client.
pub struct Gemini {
    config: GeminiConfig,
    http: reqwest::Client,
    /// The pace every call of this client shares.
    pace: wire::Pace,
    credentials: Option<google_cloud_auth::credentials::Credentials>,
    name: String,
}

impl std::fmt::Debug for Gemini {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gemini").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Gemini {
    /// A client; with ADC, credentials are looked up now (none found is `Auth`).
    pub fn new(config: GeminiConfig) -> Result<Self, model::Error> {
        let http = config.limits.client()?;
        let credentials = match config.auth {
            Auth::ApplicationDefault => {
                Some(google_cloud_auth::credentials::Builder::default().build().map_err(|_| model::Error::Auth)?)
            }
            Auth::ApiKey(_) | Auth::None => None,
        };
        Ok(Self {
            name: model::activity_name(&config.model),
            pace: wire::Pace::new(&config.limits),
            config,
            http,
            credentials,
        })
    }

    async fn auth_headers(&self) -> Result<reqwest::header::HeaderMap, model::Error> {
        use google_cloud_auth::credentials::CacheableResource;
        match (&self.credentials, &self.config.auth) {
            (Some(c), _) => match c.headers(http::Extensions::new()).await {
                Ok(CacheableResource::New { data, .. }) => Ok(data),
                _ => Err(model::Error::Auth),
            },
            (None, Auth::ApiKey(key)) => {
                wire::credential(reqwest::header::HeaderName::from_static("x-goog-api-key"), key)
            }
            (None, _) => Ok(reqwest::header::HeaderMap::new()),
        }
    }
}

/// The `generateContent` request body.
pub fn request_body(request: &ModelRequest) -> Value {
    let contents: Vec<Value> = request
        .turns
        .iter()
        .map(|turn| {
            let parts: Vec<Value> = turn
                .parts
                .iter()
                .map(|p| match p {
                    Part::Text(text) => json!({ "text": text }),
                    Part::FunctionCall { name, args } => {
                        json!({ "functionCall": { "name": name, "args": args } })
                    }
                    Part::FunctionResponse { name, response } => {
                        json!({ "functionResponse": { "name": name, "response": response } })
                    }
                })
                .collect();
            let role = match turn.speaker {
                Speaker::User => "user",
                Speaker::Model => "model",
            };
            json!({ "role": role, "parts": parts })
        })
        .collect();
    let mut body = Map::new();
    body.insert("systemInstruction".into(), json!({ "parts": [{ "text": request.system_instruction }] }));
    body.insert("contents".into(), Value::Array(contents));
    if request.grounded_search {
        body.insert("tools".into(), json!([{ "googleSearch": {} }]));
        body.insert("generationConfig".into(), json!({ "temperature": 0.0 }));
    } else if request.tools.is_empty() {
        body.insert(
            "generationConfig".into(),
            json!({ "responseMimeType": "application/json", "responseJsonSchema": *request.response_schema, "temperature": 0.2 }),
        );
    } else {
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({ "name": t.name, "description": t.description, "parameters": t.parameters }))
            .collect();
        body.insert("tools".into(), json!([{ "functionDeclarations": declarations }]));
        body.insert("generationConfig".into(), json!({ "temperature": 0.2 }));
    }
    Value::Object(body)
}

fn count(v: &Value, key: &str) -> u32 {
    v.get(key).and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()).unwrap_or(0)
}

/// Decode a `generateContent` response body as received: JSON text, then [`parse_response`].
/// A body over [`MAX_RESPONSE_BYTES`] is refused (`oversized response`). Nesting is bounded by
/// `serde_json`'s recursion limit (128), so a hostile or corrupted body is refused (`malformed
/// response`) rather than exhausting the stack. Both are `OutputInvalid`.
pub fn decode_response(body: &[u8]) -> Result<ModelResponse, model::Error> {
    if body.len() > MAX_RESPONSE_BYTES {
        return Err(model::Error::OutputInvalid("oversized response"));
    }
    let value: Value = serde_json::from_slice(body).map_err(|_| model::Error::OutputInvalid("malformed response"))?;
    parse_response(&value)
}

/// The finish reasons with which Gemini withholds an answer: a refusal, never a bad answer.
const REFUSING_FINISH_REASONS: &[&str] =
    &["SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY"];

/// Read a `generateContent` response body: a blocked prompt (`promptFeedback.blockReason`) or
/// a refusing finish reason is `Refused`; no candidate, no content, an answer cut short at the
/// token limit or a nameless function call is `OutputInvalid`.
pub fn parse_response(body: &Value) -> Result<ModelResponse, model::Error> {
    if body.get("promptFeedback").and_then(|f| f.get("blockReason")).is_some_and(|r| !r.is_null()) {
        return Err(model::Error::Refused("prompt blocked"));
    }
    let candidate = body
        .get("candidates")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or(model::Error::OutputInvalid("no candidates"))?;
    let finish = candidate.get("finishReason").and_then(Value::as_str);
    if finish.is_some_and(|reason| REFUSING_FINISH_REASONS.contains(&reason)) {
        return Err(model::Error::Refused("blocked"));
    }
    if finish == Some("MAX_TOKENS") {
        return Err(model::Error::OutputInvalid("cut short at the token limit"));
    }
    let raw_parts = candidate
        .get("content")
        .and_then(|c| c.get("parts"))
        .and_then(Value::as_array)
        .ok_or(model::Error::OutputInvalid("no content"))?;
    let mut parts = Vec::new();
    for p in raw_parts {
        if let Some(call) = p.get("functionCall") {
            let name = call
                .get("name")
                .and_then(Value::as_str)
                .ok_or(model::Error::OutputInvalid("function call without name"))?;
            let args = call.get("args").cloned().unwrap_or_else(|| json!({}));
            parts.push(Part::FunctionCall { name: name.to_owned(), args });
        } else if let Some(text) = p.get("text").and_then(Value::as_str) {
            // Thought summaries are not answers.
            if !p.get("thought").and_then(Value::as_bool).unwrap_or(false) {
                parts.push(Part::Text(text.to_owned()));
            }
        }
    }
    let usage = body.get("usageMetadata").cloned().unwrap_or_default();
    let grounding = candidate.get("groundingMetadata").map(grounding);
    Ok(ModelResponse {
        parts,
        usage: TokenUsage {
            input_tokens: count(&usage, "promptTokenCount"),
            output_tokens: count(&usage, "candidatesTokenCount"),
        },
        grounding,
    })
}

/// `groundingMetadata` as reported (`webSearchQueries`, `groundingChunks[].web`,
/// `groundingSupports[]` with byte offsets into a text part); checked later by
/// [`crate::research`], so nothing is dropped or repaired here.
fn grounding(g: &Value) -> Grounding {
    // An index that is not a non-negative whole number cannot point at anything.
    let index =
        |v: Option<&Value>| v.and_then(Value::as_u64).and_then(|n| usize::try_from(n).ok()).unwrap_or(usize::MAX);
    let list = |key: &str| g.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
    Grounding {
        queries: list("webSearchQueries").iter().filter_map(|q| q.as_str().map(str::to_owned)).collect(),
        chunks: list("groundingChunks")
            .iter()
            .map(|c| {
                let web = c.get("web");
                let text = |key: &str| web.and_then(|w| w.get(key)).and_then(Value::as_str).unwrap_or("").to_owned();
                model::GroundingChunk { uri: text("uri"), title: text("title") }
            })
            .collect(),
        supports: list("groundingSupports")
            .iter()
            .map(|s| {
                let segment = s.get("segment");
                let field = |key: &str| segment.and_then(|seg| seg.get(key));
                model::GroundingSupport {
                    // Proto3 JSON leaves out zero values: an absent part or start is 0.
                    part: field("partIndex").map_or(0, |v| index(Some(v))),
                    start: field("startIndex").map_or(0, |v| index(Some(v))),
                    end: index(field("endIndex")),
                    text: field("text").and_then(Value::as_str).map(str::to_owned),
                    chunks: s
                        .get("groundingChunkIndices")
                        .and_then(Value::as_array)
                        .map(|ix| ix.iter().map(|i| index(Some(i))).collect())
                        .unwrap_or_default(),
                }
            })
            .collect(),
    }
}

/// The provider's error code in an error body (`error.status`, and the first
/// `error.details[].reason`), kept only when it is a plain token: never the message.
pub fn provider_error_code(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let error = value.get("error")?;
    let status = plain_token(error.get("status"));
    let reason = error
        .get("details")
        .and_then(Value::as_array)
        .and_then(|details| details.iter().find_map(|d| plain_token(d.get("reason"))));
    match (status, reason) {
        (Some(status), Some(reason)) => Some(format!("{status}/{reason}")),
        (status, reason) => status.or(reason),
    }
}

/// What a non-success status means, given the provider's error code.
pub fn classify(status: u16, provider_code: Option<&str>) -> model::Error {
    let code = provider_code.unwrap_or("");
    match status {
        401 | 403 => model::Error::Auth,
        404 => model::Error::NotFound,
        429 => model::Error::Throttled,
        500..=599 => model::Error::Unavailable("server error"),
        // The Gemini API answers 400 for a key it does not accept.
        _ if code.contains("API_KEY_INVALID")
            || code.starts_with("UNAUTHENTICATED")
            || code.starts_with("PERMISSION_DENIED") =>
        {
            model::Error::Auth
        }
        _ if code.starts_with("NOT_FOUND") => model::Error::NotFound,
        _ => model::Error::BadRequest,
    }
}

const PROVIDER_VERTEX: Provider =
    Provider { name: "gcp.vertex_ai", error_code: provider_error_code, classify, decode: decode_response };
const PROVIDER_GEMINI: Provider = Provider { name: "gcp.gemini", ..PROVIDER_VERTEX };

#[async_trait]
impl Model for Gemini {
    fn name(&self) -> &str {
        &self.name
    }

    fn provenance(&self) -> Provenance {
        Provenance::Live
    }

    fn provider(&self) -> &'static str {
        // OpenTelemetry's names; a local endpoint stands in for either in tests.
        match self.config.api {
            Api::Vertex { .. } => PROVIDER_VERTEX.name,
            Api::Developer => PROVIDER_GEMINI.name,
        }
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, model::Error> {
        let headers = self.auth_headers().await?;
        let provider = match self.config.api {
            Api::Vertex { .. } => &PROVIDER_VERTEX,
            Api::Developer => &PROVIDER_GEMINI,
        };
        wire::post(
            &self.http,
            provider,
            &self.name,
            &self.config.limits,
            &self.pace,
            &self.config.url(),
            headers,
            &request_body(request),
        )
        .await
    }
}
