//! Gemini on Vertex AI over REST (`generateContent`).
//!
//! Sends `systemInstruction`, `contents` (text, `functionCall`, `functionResponse` parts),
//! `tools.functionDeclarations`, and — on turns without tools — `generationConfig` with
//! `responseMimeType: application/json` and the role's `responseJsonSchema`; reads `candidates`,
//! `usageMetadata` and `groundingMetadata`. Authenticates with Application Default Credentials
//! (or not at all, for a local endpoint). Retries only 429 and 5xx (and timeouts) with
//! exponential backoff; provider bodies never leave this module.

use std::time::Duration;

use async_trait::async_trait;
use backon::{ExponentialBuilder, Retryable};
use harmonia_contracts::body::CappedBody;
use harmonia_contracts::domain::TokenUsage;
use harmonia_contracts::tool::Provenance;
use serde_json::{Map, Value, json};

use crate::model::{self, Grounding, Model, ModelRequest, ModelResponse, Part, Speaker};

/// How requests are authenticated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    /// Application Default Credentials (Cloud Run's service account, or `gcloud auth`).
    ApplicationDefault,
    /// No credentials (a local endpoint).
    None,
}

/// Where and how to call Gemini.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeminiConfig {
    /// Base URL, e.g. `https://us-central1-aiplatform.googleapis.com`.
    pub endpoint: String,
    /// Project id.
    pub project: String,
    /// Location, e.g. `us-central1`.
    pub location: String,
    /// Model, e.g. `gemini-2.5-flash`.
    pub model: String,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Attempts for 429/5xx/timeouts (at least 1).
    pub max_attempts: u32,
    /// First retry delay; doubles per attempt.
    pub backoff: Duration,
    /// Authentication.
    pub auth: Auth,
}

impl GeminiConfig {
    /// Vertex AI in `location` for `project` with ADC and sensible limits.
    pub fn vertex(project: &str, location: &str, model: &str) -> Self {
        Self {
            endpoint: format!("https://{location}-aiplatform.googleapis.com"),
            project: project.to_owned(),
            location: location.to_owned(),
            model: model.to_owned(),
            timeout: Duration::from_secs(60),
            max_attempts: 3,
            backoff: Duration::from_millis(500),
            auth: Auth::ApplicationDefault,
        }
    }

    fn url(&self) -> String {
        format!(
            "{}/v1/projects/{}/locations/{}/publishers/google/models/{}:generateContent",
            self.endpoint.trim_end_matches('/'),
            self.project,
            self.location,
            self.model
        )
    }
}

/// The Gemini client.
pub struct Gemini {
    config: GeminiConfig,
    http: reqwest::Client,
    credentials: Option<google_cloud_auth::credentials::Credentials>,
    name: String,
}

impl std::fmt::Debug for Gemini {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gemini").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Gemini {
    /// A client; with ADC, credentials are looked up now.
    pub fn new(config: GeminiConfig) -> Result<Self, model::Error> {
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .build()
            .map_err(|_| model::Error::Unavailable("http client"))?;
        let credentials = match config.auth {
            Auth::ApplicationDefault => Some(
                google_cloud_auth::credentials::Builder::default()
                    .build()
                    .map_err(|_| model::Error::Unavailable("credentials"))?,
            ),
            Auth::None => None,
        };
        let name: String = config
            .model
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' })
            .take(64)
            .collect();
        Ok(Self { config, http, credentials, name })
    }

    async fn auth_headers(&self) -> Result<reqwest::header::HeaderMap, model::Error> {
        use google_cloud_auth::credentials::CacheableResource;
        match &self.credentials {
            None => Ok(reqwest::header::HeaderMap::new()),
            Some(c) => match c.headers(http::Extensions::new()).await {
                Ok(CacheableResource::New { data, .. }) => Ok(data),
                _ => Err(model::Error::Unavailable("credentials")),
            },
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

/// The longest `generateContent` response body read (4 MiB): a role's answer is a few
/// kilobytes and grounding metadata tens, so anything near this is not an answer. The client
/// refuses a longer body (`oversized response`) before buffering past it.
pub const MAX_RESPONSE_BYTES: usize = 4 << 20;

/// Decode a `generateContent` response body as received: JSON text, then [`parse_response`].
/// A body over [`MAX_RESPONSE_BYTES`] is refused (`oversized response`). Nesting is bounded by
/// `serde_json`'s recursion limit (128), so a hostile or corrupted body is refused (`malformed
/// response`) rather than exhausting the stack.
pub fn decode_response(body: &[u8]) -> Result<ModelResponse, model::Error> {
    if body.len() > MAX_RESPONSE_BYTES {
        return Err(model::Error::Refused("oversized response"));
    }
    let value: Value = serde_json::from_slice(body).map_err(|_| model::Error::Refused("malformed response"))?;
    parse_response(&value)
}

/// Read a `generateContent` response body.
pub fn parse_response(body: &Value) -> Result<ModelResponse, model::Error> {
    let candidate = body
        .get("candidates")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or(model::Error::Refused("no candidates"))?;
    if matches!(
        candidate.get("finishReason").and_then(Value::as_str),
        Some("SAFETY" | "PROHIBITED_CONTENT" | "BLOCKLIST" | "SPII")
    ) {
        return Err(model::Error::Refused("blocked"));
    }
    let raw_parts = candidate
        .get("content")
        .and_then(|c| c.get("parts"))
        .and_then(Value::as_array)
        .ok_or(model::Error::Refused("no content"))?;
    let mut parts = Vec::new();
    for p in raw_parts {
        if let Some(call) = p.get("functionCall") {
            let name =
                call.get("name").and_then(Value::as_str).ok_or(model::Error::Refused("function call without name"))?;
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

/// One failed `generateContent` call, and whether another attempt may help.
struct Failed {
    error: model::Error,
    transient: bool,
}

impl Failed {
    fn transient(error: model::Error) -> Self {
        Failed { error, transient: true }
    }

    fn fatal(error: model::Error) -> Self {
        Failed { error, transient: false }
    }
}

impl Gemini {
    /// `max_attempts` in all (at least one), waiting `backoff` and then twice as long each time.
    fn retry_policy(&self) -> ExponentialBuilder {
        let retries = usize::try_from(self.config.max_attempts.max(1) - 1).unwrap_or(usize::MAX);
        ExponentialBuilder::new()
            .with_min_delay(self.config.backoff)
            .with_factor(2.0)
            .without_max_delay()
            .with_max_times(retries)
    }

    /// One call: timeouts, connection failures, 429 and 5xx are transient; anything else,
    /// including missing credentials, is final.
    async fn call_once(&self, url: &str, body: &Value) -> Result<ModelResponse, Failed> {
        let headers = self.auth_headers().await.map_err(Failed::fatal)?;
        let mut response = self.http.post(url).headers(headers).json(body).send().await.map_err(|e| {
            Failed::transient(model::Error::Unavailable(if e.is_timeout() { "timeout" } else { "connection" }))
        })?;
        let status = response.status();
        if status.as_u16() == 429 {
            return Err(Failed::transient(model::Error::Throttled));
        }
        if status.is_server_error() {
            return Err(Failed::transient(model::Error::Unavailable("server error")));
        }
        if !status.is_success() {
            return Err(Failed::fatal(model::Error::Refused("client error")));
        }
        let oversized = |_| Failed::fatal(model::Error::Refused("oversized response"));
        let mut body = CappedBody::new(response.content_length(), MAX_RESPONSE_BYTES).map_err(oversized)?;
        while let Some(chunk) =
            response.chunk().await.map_err(|_| Failed::fatal(model::Error::Refused("malformed response")))?
        {
            body.push(&chunk).map_err(oversized)?;
        }
        decode_response(&body.finish()).map_err(Failed::fatal)
    }
}

#[async_trait]
impl Model for Gemini {
    fn name(&self) -> &str {
        &self.name
    }

    fn provenance(&self) -> Provenance {
        Provenance::Live
    }

    fn provider(&self) -> &'static str {
        // Always Vertex AI's `generateContent` (a local endpoint stands in for it in tests).
        "gcp.vertex_ai"
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, model::Error> {
        let body = request_body(request);
        let url = self.config.url();
        (|| self.call_once(&url, &body))
            .retry(self.retry_policy())
            .when(|f: &Failed| f.transient)
            .await
            .map_err(|f| f.error)
    }
}
