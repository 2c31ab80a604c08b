//! A recorded-response model server: a local axum server that answers a model provider's
//! wire API (OpenAI's `POST /v1/chat/completions`, or the Gemini API's
//! `POST /v1beta/models/{model}:generateContent`) with recordings kept as files in that
//! provider's documented wire format.
//!
//! A recording is chosen by what the request is: the role its system instruction names
//! ("You are Nimi, …"), and how many model turns the conversation already holds. The file for
//! the `n`-th answer of a role is `{role}.{n}.json`; Harmonia's routing answers are
//! `harmonia-{task}.{n}.json` (one per routed task), and the answers for a second writing or
//! review pass (`input.pass` 2) are `{role}-pass2.{n}.json`.
//!
//! What a recording cannot know in advance (the job's ids, the planning snapshot, dates
//! relative to the run) it names with a placeholder that is filled from the request:
//! - `{{input:POINTER}}`: the value at the JSON pointer in the task's input (the user turn);
//! - `{{result:TOOL:POINTER}}`: the value at the pointer in the latest result of `TOOL` in the
//!   conversation.
//!
//! A request for which there is no recording, or whose placeholder cannot be filled, is
//! answered 500 and listed in [`RecordedModel::misses`], so a test can say exactly what was
//! asked. The API key is checked as the provider checks it: a request without it is a 401.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

/// Which provider's wire API is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI chat completions.
    OpenAi,
    /// The Gemini API's `generateContent`.
    Gemini,
}

/// One answered request: the recording's name, and the token counts it reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Served {
    /// The recording's file name without `.json`, e.g. `nimi.2`.
    pub recording: String,
    /// The role that asked (lowercase).
    pub role: String,
    /// Input tokens the recording reports.
    pub input_tokens: u64,
    /// Output tokens the recording reports.
    pub output_tokens: u64,
}

#[derive(Clone)]
struct Server {
    wire: Wire,
    /// Where recordings are looked for, the first folder holding one first.
    dirs: Vec<PathBuf>,
    key: String,
    served: Arc<Mutex<Vec<Served>>>,
    misses: Arc<Mutex<Vec<String>>>,
}

/// A running recorded-response server.
pub struct RecordedModel {
    /// Its base URL: `OPENAI_BASE_URL` (ending in `/v1`) or `GEMINI_BASE_URL`.
    pub url: String,
    server: Server,
}

impl RecordedModel {
    /// Serve the recordings in `dir` on a free local port, in `wire`'s API, to callers holding
    /// `key`.
    pub async fn start(wire: Wire, dir: &Path, key: &str) -> Self {
        Self::start_over(wire, &[dir], key).await
    }

    /// Serve the recordings of `dirs`, a recording of an earlier folder standing in for the one
    /// of the same name in a later one (a variation recorded over a whole job's answers).
    pub async fn start_over(wire: Wire, dirs: &[&Path], key: &str) -> Self {
        let dirs = dirs.iter().map(|d| d.to_path_buf()).collect();
        let server = Server { wire, dirs, key: key.to_owned(), served: Arc::default(), misses: Arc::default() };
        let app = match wire {
            Wire::OpenAi => axum::Router::new().route("/v1/chat/completions", post(answer)),
            Wire::Gemini => axum::Router::new().route("/v1beta/models/{call}", post(answer)),
        }
        .with_state(server.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let url = match wire {
            Wire::OpenAi => format!("http://{addr}/v1"),
            Wire::Gemini => format!("http://{addr}"),
        };
        Self { url, server }
    }

    /// Every request answered from a recording, in order.
    pub fn served(&self) -> Vec<Served> {
        self.server.served.lock().expect("lock").clone()
    }

    /// Every request that had no recording (or an unfillable placeholder), described.
    pub fn misses(&self) -> Vec<String> {
        self.server.misses.lock().expect("lock").clone()
    }
}

/// What a request asks, read from either wire format.
struct Asked {
    role: String,
    input: Value,
    /// Model turns the conversation already holds.
    turns: usize,
    /// Tool results in order: (tool name, result).
    results: Vec<(String, Value)>,
}

fn parse_json_text(text: Option<&str>) -> Value {
    text.and_then(|t| serde_json::from_str(t).ok()).unwrap_or(Value::Null)
}

fn role_of(system: &str) -> Option<String> {
    let rest = system.strip_prefix("You are ")?;
    let name: String = rest.chars().take_while(char::is_ascii_alphabetic).collect();
    (!name.is_empty()).then(|| name.to_lowercase())
}

fn asked_openai(body: &Value) -> Option<Asked> {
    let messages = body.get("messages")?.as_array()?;
    let system = messages.iter().find(|m| m["role"] == "system")?["content"].as_str()?;
    let task = parse_json_text(messages.iter().find(|m| m["role"] == "user")?["content"].as_str());
    let mut names: HashMap<String, String> = HashMap::new();
    let mut results = Vec::new();
    let mut turns = 0;
    for m in messages {
        match m["role"].as_str() {
            Some("assistant") => {
                turns += 1;
                for call in m["tool_calls"].as_array().into_iter().flatten() {
                    if let (Some(id), Some(name)) = (call["id"].as_str(), call["function"]["name"].as_str()) {
                        names.insert(id.to_owned(), name.to_owned());
                    }
                }
            }
            Some("tool") => {
                let name = m["tool_call_id"].as_str().and_then(|id| names.get(id)).cloned().unwrap_or_default();
                results.push((name, parse_json_text(m["content"].as_str())));
            }
            _ => {}
        }
    }
    Some(Asked { role: role_of(system)?, input: task["input"].clone(), turns, results })
}

fn asked_gemini(body: &Value) -> Option<Asked> {
    let system = body["systemInstruction"]["parts"][0]["text"].as_str()?;
    let contents = body.get("contents")?.as_array()?;
    let task = parse_json_text(contents.first()?["parts"][0]["text"].as_str());
    let turns = contents.iter().filter(|c| c["role"] == "model").count();
    let results = contents
        .iter()
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| {
            let response = p.get("functionResponse")?;
            Some((response["name"].as_str()?.to_owned(), response["response"].clone()))
        })
        .collect();
    Some(Asked { role: role_of(system)?, input: task["input"].clone(), turns, results })
}

impl Asked {
    /// The recording's name for this request.
    fn recording(&self) -> String {
        let role = match self.role.as_str() {
            "harmonia" => format!("harmonia-{}", self.input["task"].as_str().unwrap_or("unknown")),
            role if self.input["pass"] == 2 => format!("{role}-pass2"),
            role => role.to_owned(),
        };
        format!("{role}.{}", self.turns + 1)
    }

    /// The value a placeholder names, as the text it stands for.
    fn fill(&self, expression: &str) -> Result<String, String> {
        let value = if let Some(pointer) = expression.strip_prefix("input:") {
            self.input.pointer(pointer).cloned()
        } else if let Some(rest) = expression.strip_prefix("result:") {
            let (tool, pointer) = rest.split_once(':').ok_or_else(|| format!("no pointer in {expression}"))?;
            self.results.iter().rev().find(|(name, _)| name == tool).and_then(|(_, r)| r.pointer(pointer).cloned())
        } else {
            return Err(format!("unknown placeholder {expression}"));
        };
        let text = match value {
            Some(Value::String(s)) => s,
            Some(Value::Number(n)) => n.to_string(),
            other => return Err(format!("{expression} is {other:?}")),
        };
        // Recordings put a value inside JSON text that may itself sit in a JSON string.
        if text.chars().any(|c| c == '"' || c == '\\' || c.is_control()) {
            return Err(format!("{expression} holds characters a recording cannot carry"));
        }
        Ok(text)
    }

    /// `template` with every placeholder filled.
    fn render(&self, template: &str) -> Result<String, String> {
        let mut out = String::with_capacity(template.len());
        let mut rest = template;
        while let Some(open) = rest.find("{{") {
            out.push_str(&rest[..open]);
            let close = rest[open..].find("}}").ok_or("an unclosed placeholder")? + open;
            out.push_str(&self.fill(&rest[open + 2..close])?);
            rest = &rest[close + 2..];
        }
        out.push_str(rest);
        Ok(out)
    }
}

fn tokens(wire: Wire, body: &Value) -> (u64, u64) {
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    match wire {
        Wire::OpenAi => (n(&body["usage"]["prompt_tokens"]), n(&body["usage"]["completion_tokens"])),
        Wire::Gemini => {
            (n(&body["usageMetadata"]["promptTokenCount"]), n(&body["usageMetadata"]["candidatesTokenCount"]))
        }
    }
}

fn error(wire: Wire, status: StatusCode, message: &str) -> Response {
    let body = match wire {
        Wire::OpenAi => json!({"error": {"message": message, "type": "server_error", "param": null, "code": null}}),
        Wire::Gemini => json!({"error": {"code": status.as_u16(), "message": message, "status": "INTERNAL"}}),
    };
    (status, Json(body)).into_response()
}

async fn answer(State(server): State<Server>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    let wire = server.wire;
    let key = match wire {
        Wire::OpenAi => {
            headers.get("authorization").and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "))
        }
        Wire::Gemini => headers.get("x-goog-api-key").and_then(|v| v.to_str().ok()),
    };
    if key != Some(server.key.as_str()) {
        return error(wire, StatusCode::UNAUTHORIZED, "no valid API key");
    }
    let asked = match wire {
        Wire::OpenAi => asked_openai(&body),
        Wire::Gemini => asked_gemini(&body),
    };
    let Some(asked) = asked else {
        server.misses.lock().expect("lock").push("a request naming no role".into());
        return error(wire, StatusCode::INTERNAL_SERVER_ERROR, "unreadable request");
    };
    let name = asked.recording();
    let file = format!("{name}.json");
    let rendered = server
        .dirs
        .iter()
        .find_map(|dir| std::fs::read_to_string(dir.join(&file)).ok())
        .ok_or_else(|| format!("{name}: no recording"))
        .and_then(|template| asked.render(&template).map_err(|e| format!("{name}: {e}")))
        .and_then(|text| {
            serde_json::from_str::<Value>(&text).map_err(|e| format!("{name}: not JSON once filled: {e}"))
        });
    match rendered {
        Ok(recording) => {
            let (input_tokens, output_tokens) = tokens(wire, &recording);
            server.served.lock().expect("lock").push(Served {
                recording: name,
                role: asked.role,
                input_tokens,
                output_tokens,
            });
            (StatusCode::OK, Json(recording)).into_response()
        }
        Err(miss) => {
            server.misses.lock().expect("lock").push(miss);
            error(wire, StatusCode::INTERNAL_SERVER_ERROR, "no recording for this request")
        }
    }
}
