//! OpenAI-compatible chat completions (`POST {base}/chat/completions`): OpenAI itself, and the
//! servers that speak its API — Ollama, the llama.cpp server, vLLM.
//!
//! The conversation becomes `messages`: the role's instruction as the `system` message, the
//! runtime's turns as `user` messages, the model's function calls as an `assistant` message
//! with `tool_calls`, and each result as a `tool` message answering its call's id (ids are
//! derived from the call's place in the conversation, so a replayed conversation always pairs
//! them). A role with tools gets them as `tools` of type `function`; a role without gets its
//! output schema as `response_format` of type `json_schema` with `strict`, in the subset strict
//! mode accepts ([`strict_schema`]), and the `null`s strict mode makes the model write for an
//! absent optional field are taken out of the answer again ([`drop_absent`]).
//!
//! Failures are typed as [`crate::wire`] says: 401 and 403 (and `insufficient_quota`) are
//! `Auth`, 404 (and `model_not_found`) `NotFound`, 429 `Throttled`, 5xx `Unavailable`, other
//! 4xx `BadRequest`; a `refusal` or the `content_filter` finish reason is `Refused`, and an
//! answer cut short at `length` is `OutputInvalid`. The provider's error code is read from
//! `error.code` or `error.type`. Chat completions has no grounded search, so this backend
//! offers none.

use async_trait::async_trait;
use harmonia_contracts::domain::TokenUsage;
use harmonia_contracts::tool::Provenance;
use serde_json::{Map, Value, json};

use crate::model::{self, Model, ModelRequest, ModelResponse, Part, Speaker};
use crate::wire::{self, Limits, MAX_RESPONSE_BYTES, Provider, plain_token};

/// OpenAI's own endpoint, the default base URL.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// Where and how to call an OpenAI-compatible server.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// Base URL, up to and including the API version (`https://api.openai.com/v1`,
    /// `http://localhost:11434/v1` for Ollama).
    pub base_url: String,
    /// The API key, sent as a bearer token; local servers often need none.
    pub api_key: Option<String>,
    /// The model, e.g. `gpt-4.1-mini` or `qwen2.5:7b`.
    pub model: String,
    /// Timeout, attempts and backoff.
    pub limits: Limits,
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("limits", &self.limits)
            .finish()
    }
}

impl OpenAiConfig {
    /// `model` at `base_url`, with `api_key` when there is one, and the default limits.
    pub fn new(base_url: &str, api_key: Option<&str>, model: &str) -> Self {
        Self {
            base_url: base_url.to_owned(),
            api_key: api_key.map(str::to_owned),
            model: model.to_owned(),
            limits: Limits::default(),
        }
    }
}

/// The client.
pub struct OpenAi {
    config: OpenAiConfig,
    http: reqwest::Client,
    /// The pace every call of this client shares.
    pace: wire::Pace,
    name: String,
}

impl std::fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAi").field("config", &self.config).finish_non_exhaustive()
    }
}

impl OpenAi {
    /// A client.
    pub fn new(config: OpenAiConfig) -> Result<Self, model::Error> {
        let http = config.limits.client()?;
        Ok(Self {
            name: crate::model::activity_name(&config.model),
            pace: wire::Pace::new(&config.limits),
            config,
            http,
        })
    }
}

/// The id of call `index` of the model's turn `turn`.
fn call_id(turn: usize, index: usize) -> String {
    format!("call_{turn}_{index}")
}

/// The chat completions request body for `model`.
pub fn request_body(model: &str, request: &ModelRequest) -> Value {
    let mut messages = vec![json!({"role": "system", "content": request.system_instruction})];
    for (t, turn) in request.turns.iter().enumerate() {
        let mut text = Vec::new();
        let mut calls = Vec::new();
        for part in &turn.parts {
            match part {
                Part::Text(t) => text.push(t.as_str()),
                Part::FunctionCall { name, args } => calls.push(json!({
                    "id": call_id(t, calls.len()),
                    "type": "function",
                    "function": {"name": name, "arguments": args.to_string()},
                })),
                // Results answer the calls of the model's turn just before, in their order.
                Part::FunctionResponse { response, .. } => {
                    let index = messages.iter().rev().take_while(|m| m["role"] == "tool").count();
                    messages.push(json!({
                        "role": "tool",
                        "tool_call_id": call_id(t.saturating_sub(1), index),
                        "content": response.to_string(),
                    }));
                }
            }
        }
        match turn.speaker {
            Speaker::User if !text.is_empty() => messages.push(json!({"role": "user", "content": text.join("\n")})),
            Speaker::User => {}
            Speaker::Model => {
                let mut message = Map::new();
                message.insert("role".into(), json!("assistant"));
                message.insert("content".into(), if text.is_empty() { Value::Null } else { json!(text.join("\n")) });
                if !calls.is_empty() {
                    message.insert("tool_calls".into(), Value::Array(calls));
                }
                messages.push(Value::Object(message));
            }
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("temperature".into(), json!(0.2));
    if request.tools.is_empty() {
        body.insert(
            "response_format".into(),
            json!({"type": "json_schema", "json_schema": {
                "name": format!("{}_output", request.role),
                "strict": true,
                "schema": strict_schema(&request.response_schema),
            }}),
        );
    } else {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    Value::Object(body)
}

/// Keywords strict mode refuses, left out (the runtime still checks the answer against the
/// full schema).
const UNSUPPORTED: &[&str] = &["$schema", "minLength", "maxLength", "default", "uniqueItems", "format"];

/// `schema` in the subset strict structured output accepts: every object closed
/// (`additionalProperties: false`) with every property required — an optional one may be
/// `null` instead — `oneOf` written as `anyOf`, and the keywords strict mode refuses left out.
pub fn strict_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                if UNSUPPORTED.contains(&key.as_str()) {
                    continue;
                }
                let key = if key == "oneOf" { "anyOf" } else { key.as_str() };
                let value = match key {
                    "properties" => {
                        let required: Vec<&str> = map
                            .get("required")
                            .and_then(Value::as_array)
                            .map(|r| r.iter().filter_map(Value::as_str).collect())
                            .unwrap_or_default();
                        let props = value.as_object().cloned().unwrap_or_default();
                        let props = props.into_iter().map(|(name, prop)| {
                            let prop = strict_schema(&prop);
                            let prop = if required.contains(&name.as_str()) {
                                prop
                            } else {
                                json!({"anyOf": [prop, {"type": "null"}]})
                            };
                            (name, prop)
                        });
                        Value::Object(props.collect())
                    }
                    "required" if map.contains_key("properties") => continue,
                    // A map of named schemas, not a schema: its names are kept as they are.
                    "$defs" | "definitions" => Value::Object(
                        value.as_object().into_iter().flatten().map(|(n, d)| (n.clone(), strict_schema(d))).collect(),
                    ),
                    _ => strict_schema(value),
                };
                out.insert(key.to_owned(), value);
            }
            if let Some(props) = map.get("properties").and_then(Value::as_object) {
                out.insert("required".into(), Value::Array(props.keys().map(|k| json!(k)).collect()));
                out.insert("additionalProperties".into(), json!(false));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(strict_schema).collect()),
        other => other.clone(),
    }
}

/// `answer` with the `null` members taken out that `schema` (the full schema of the request)
/// does not require — the members strict mode made the model write — so an absent optional
/// field is absent again. Follows local `$ref`s, `items` and the `anyOf`/`oneOf` alternative
/// whose properties hold every member.
pub fn drop_absent(answer: &mut Value, schema: &Value) {
    drop_in(answer, schema, schema, 0);
}

fn drop_in(value: &mut Value, schema: &Value, root: &Value, depth: usize) {
    // Schemas of Harmonia's roles nest a few levels; a deeper (or cyclic) walk stops here.
    if depth > 64 {
        return;
    }
    let schema = resolve(schema, root);
    match value {
        Value::Object(members) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                let required: Vec<&str> = schema
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                members.retain(|k, v| !v.is_null() || required.contains(&k.as_str()));
                for (k, v) in members.iter_mut() {
                    if let Some(prop) = props.get(k) {
                        drop_in(v, prop, root, depth + 1);
                    }
                }
            } else if let Some(alt) = alternative(schema, root, members) {
                drop_in(value, alt, root, depth + 1);
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items") {
                for v in items {
                    drop_in(v, item, root, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// A local `$ref` (`#/$defs/Name`) resolved against `root`; anything else as it is.
fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#')) {
        Some(pointer) => root.pointer(pointer).unwrap_or(schema),
        None => schema,
    }
}

/// The `anyOf`/`oneOf` alternative of `schema` whose properties hold every member.
fn alternative<'a>(schema: &'a Value, root: &'a Value, members: &Map<String, Value>) -> Option<&'a Value> {
    let alternatives = schema.get("anyOf").or_else(|| schema.get("oneOf"))?.as_array()?;
    alternatives.iter().find(|alt| {
        resolve(alt, root)
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|props| members.keys().all(|k| props.contains_key(k)))
    })
}

/// The provider's error code in an error body: `error.code`, else `error.type`.
pub fn provider_error_code(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let error = value.get("error")?;
    plain_token(error.get("code")).or_else(|| plain_token(error.get("type")))
}

/// What a non-success status means, given the provider's error code.
pub fn classify(status: u16, provider_code: Option<&str>) -> model::Error {
    match (status, provider_code.unwrap_or("")) {
        // Out of credit is not throttling: no retry helps until the account is seen to.
        (_, "insufficient_quota" | "invalid_api_key") | (401 | 403, _) => model::Error::Auth,
        (_, "model_not_found") | (404, _) => model::Error::NotFound,
        (429, _) => model::Error::Throttled,
        (500..=599, _) => model::Error::Unavailable("server error"),
        _ => model::Error::BadRequest,
    }
}

/// Decode a chat completions body: the first choice's `content` as text and its `tool_calls`
/// as function calls (arguments parsed from their JSON text), and `usage`. A body over
/// [`MAX_RESPONSE_BYTES`] or not in this shape is `OutputInvalid`.
pub fn decode_response(body: &[u8]) -> Result<ModelResponse, model::Error> {
    if body.len() > MAX_RESPONSE_BYTES {
        return Err(model::Error::OutputInvalid("oversized response"));
    }
    let value: Value = serde_json::from_slice(body).map_err(|_| model::Error::OutputInvalid("malformed response"))?;
    let choice = value
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or(model::Error::OutputInvalid("no choices"))?;
    let message = choice.get("message").ok_or(model::Error::OutputInvalid("no message"))?;
    match choice.get("finish_reason").and_then(Value::as_str) {
        Some("content_filter") => return Err(model::Error::Refused("content filter")),
        Some("length") => return Err(model::Error::OutputInvalid("cut short at the token limit")),
        _ => {}
    }
    if message.get("refusal").is_some_and(|r| !r.is_null()) {
        return Err(model::Error::Refused("refusal"));
    }
    let mut parts = Vec::new();
    if let Some(text) = message.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        parts.push(Part::Text(text.to_owned()));
    }
    for call in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
        let function = call.get("function").ok_or(model::Error::OutputInvalid("tool call without function"))?;
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .ok_or(model::Error::OutputInvalid("function call without name"))?;
        let args = match function.get("arguments") {
            Some(Value::String(text)) if text.trim().is_empty() => json!({}),
            Some(Value::String(text)) => {
                serde_json::from_str(text).map_err(|_| model::Error::OutputInvalid("unparseable arguments"))?
            }
            // Some compatible servers send the arguments as an object already.
            Some(args @ Value::Object(_)) => args.clone(),
            None => json!({}),
            Some(_) => return Err(model::Error::OutputInvalid("unparseable arguments")),
        };
        parts.push(Part::FunctionCall { name: name.to_owned(), args });
    }
    if parts.is_empty() {
        return Err(model::Error::OutputInvalid("no content"));
    }
    let usage = value.get("usage").cloned().unwrap_or_default();
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok()).unwrap_or(0);
    Ok(ModelResponse {
        parts,
        usage: TokenUsage { input_tokens: count("prompt_tokens"), output_tokens: count("completion_tokens") },
        grounding: None,
    })
}

const PROVIDER: Provider =
    Provider { name: "openai", error_code: provider_error_code, classify, decode: decode_response };

#[async_trait]
impl Model for OpenAi {
    fn name(&self) -> &str {
        &self.name
    }

    fn provenance(&self) -> Provenance {
        Provenance::Live
    }

    fn provider(&self) -> &'static str {
        PROVIDER.name
    }

    fn grounded_search(&self) -> bool {
        false
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, model::Error> {
        if request.grounded_search {
            return Err(model::Error::BadRequest);
        }
        let headers = match &self.config.api_key {
            Some(key) => wire::credential(reqwest::header::AUTHORIZATION, &format!("Bearer {key}"))?,
            None => reqwest::header::HeaderMap::new(),
        };
        let url = format!("{}/chat/completions", self.config.base_url.trim_end_matches('/'));
        let mut response = wire::post(
            &self.http,
            &PROVIDER,
            &self.name,
            &self.config.limits,
            &self.pace,
            &url,
            headers,
            &request_body(&self.config.model, request),
        )
        .await?;
        if request.tools.is_empty() {
            // Strict mode wrote `null` for every optional field left out: take those out again.
            for part in &mut response.parts {
                if let Part::Text(text) = part
                    && let Ok(mut answer) = serde_json::from_str::<Value>(text)
                {
                    drop_absent(&mut answer, &request.response_schema);
                    *text = answer.to_string();
                }
            }
        }
        Ok(response)
    }
}
