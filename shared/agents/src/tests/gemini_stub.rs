//! The Gemini client against a local stub that speaks the `generateContent` wire format
//! (Vertex AI's path and the Gemini API's), with the error bodies, statuses and headers the
//! two document.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use harmonia_contracts::event::{Pass, Stage};
use harmonia_contracts::{Code, Role};
use serde_json::{Value, json};

use super::Fixture;
use crate::gemini::{Api, Auth, Gemini, GeminiConfig};
use crate::io::{DraftOutput, NoniInput};
use crate::model::{self, GroundingChunk, GroundingSupport, Model, ModelRequest, Part, Speaker, Turn};
use crate::role;
use crate::wire::Limits;

/// One reply: a status, a body, and a `Retry-After` header when set.
type Reply = (u16, Value, Option<&'static str>);

#[derive(Clone, Default)]
struct Stub {
    replies: Arc<Mutex<VecDeque<Reply>>>,
    seen: Arc<Mutex<Vec<Value>>>,
    /// Each request's `x-goog-api-key` header, if any.
    keys: Arc<Mutex<Vec<Option<String>>>>,
}

async fn answer(State(stub): State<Stub>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    stub.seen.lock().expect("lock").push(body);
    let key = headers.get("x-goog-api-key").and_then(|v| v.to_str().ok()).map(str::to_owned);
    stub.keys.lock().expect("lock").push(key);
    let (status, reply, retry_after) =
        stub.replies.lock().expect("lock").pop_front().unwrap_or((500, json!({"error": "empty"}), None));
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, Json(reply)).into_response();
    if let Some(after) = retry_after {
        response.headers_mut().insert(RETRY_AFTER, after.parse().expect("header"));
    }
    response
}

const VERTEX_PATH: &str =
    "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent";
const DEVELOPER_PATH: &str = "/v1beta/models/gemini-2.5-flash:generateContent";

/// A stub serving `replies` in turn on both APIs' paths; the config calls Vertex AI's.
async fn stub(replies: Vec<(u16, Value)>) -> (Stub, GeminiConfig) {
    stub_with(replies.into_iter().map(|(status, body)| (status, body, None)).collect()).await
}

async fn stub_with(replies: Vec<Reply>) -> (Stub, GeminiConfig) {
    let stub = Stub { replies: Arc::new(Mutex::new(replies.into())), ..Stub::default() };
    let app = axum::Router::new()
        .route(VERTEX_PATH, post(answer))
        .route(DEVELOPER_PATH, post(answer))
        .with_state(stub.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let config = GeminiConfig {
        endpoint: format!("http://127.0.0.1:{port}"),
        api: Api::Vertex { project: "p".into(), location: "us-central1".into() },
        limits: Limits { timeout: Duration::from_secs(5), backoff: Duration::from_millis(1), ..Limits::default() },
        auth: Auth::None,
        ..GeminiConfig::developer("unused", "gemini-2.5-flash")
    };
    (stub, config)
}

fn text(t: &str) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": [{"text": t}]}, "finishReason": "STOP"}],
           "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 30, "totalTokenCount": 150}})
}

fn call(name: &str, args: Value) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": name, "args": args}}]}, "finishReason": "STOP"}],
           "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}})
}

/// A stub whose model loads Noni's skill and its persuasion reference, then answers `last`.
async fn noni_stub(last: Value) -> (Stub, GeminiConfig) {
    let skill = "noni-writing-skills";
    stub(vec![
        (200, call("load_skill", json!({"name": skill}))),
        (200, call("load_reference", json!({"skill": skill, "reference": "persuasion.md"}))),
        (200, last),
    ])
    .await
}

pub(super) fn noni(f: &Fixture) -> NoniInput {
    let _ = f;
    let moment = harmonia_contracts::domain::Moment {
        evidence_id: "m-54100".parse().expect("id"),
        quote: "we lost none of them".into(),
        start_ms: 54100,
        end_ms: 61800,
    };
    let item: harmonia_contracts::domain::PlanItem = serde_json::from_value(json!({
        "id": "item-1", "brief": "brief-1", "sequence": 1, "channel": "linkedin", "format": "text",
        "window": {"start": "2026-12-02T14:00:00Z", "end": "2026-12-02T15:00:00Z"},
        "deadline": "2026-12-02T08:00:00Z", "depends_on": [], "priority": 1}))
    .expect("item");
    let brief: harmonia_contracts::domain::Brief = serde_json::from_value(json!({
        "id": "brief-1", "angle": "Outcomes", "key_message": "k", "audience": "a", "platforms": ["linkedin"],
        "evidence": ["m-54100"]}))
    .expect("brief");
    NoniInput::new(Pass::FIRST, item, brief, &[moment], None)
}

#[tokio::test]
async fn function_call_round_trip_through_the_runtime() {
    let f = Fixture::new().await;
    let (stub, config) = noni_stub(text(
        &json!({"body": "Rangers lost none of them.", "claims": [{"text": "none lost", "evidence": ["m-54100"]}]})
            .to_string(),
    ))
    .await;
    let rt = f.runtime(Arc::new(Gemini::new(config).expect("client")));
    let inv = rt.invoke::<role::Noni>(&f.seed(Stage::Draft, noni(&f))).await.expect("accepted");
    let draft: DraftOutput = inv.output;
    assert_eq!(draft.provenance, harmonia_contracts::tool::Provenance::Live);
    assert_eq!((inv.activity.usage.input_tokens, inv.activity.usage.output_tokens), (320, 50));
    assert_eq!(inv.activity.model, "gemini-2.5-flash");

    let seen = stub.seen.lock().expect("lock").clone();
    assert_eq!(seen.len(), 3);
    let first = &seen[0];
    assert!(first["systemInstruction"]["parts"][0]["text"].as_str().is_some_and(|t| t.contains("Noni")));
    assert_eq!(first["contents"][0]["role"], "user");
    let names: Vec<&str> = first["tools"][0]["functionDeclarations"]
        .as_array()
        .expect("decls")
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert_eq!(names, ["load_skill", "load_reference", "search_verified_publications", "google_search"]);
    // The second request carries the model's call and our functionResponse.
    let turns = seen[1]["contents"].as_array().expect("contents");
    assert_eq!(turns[1]["role"], "model");
    assert_eq!(turns[1]["parts"][0]["functionCall"]["name"], "load_skill");
    assert_eq!(turns[2]["role"], "user");
    assert_eq!(turns[2]["parts"][0]["functionResponse"]["name"], "load_skill");
    assert!(
        turns[2]["parts"][0]["functionResponse"]["response"]["instructions"].as_str().is_some_and(|t| t.len() > 100)
    );
}

#[tokio::test]
async fn a_malformed_json_answer_is_a_schema_violation() {
    let f = Fixture::new().await;
    let (_stub, config) = noni_stub(text("{\"body\": \"unterminated")).await;
    let rt = f.runtime(Arc::new(Gemini::new(config).expect("client")));
    let err = rt.invoke::<role::Noni>(&f.seed(Stage::Draft, noni(&f))).await.expect_err("rejected");
    let e = err.contract().expect("contract");
    assert_eq!((e.role, e.code), (Role::Noni, Code::SchemaViolation));
    assert!(!e.safe_message.contains("unterminated"));
}

pub(super) fn request() -> ModelRequest {
    ModelRequest {
        role: Role::Harmonia,
        system_instruction: "route".into(),
        turns: vec![Turn { speaker: Speaker::User, parts: vec![Part::Text("{}".into())] }],
        tools: Arc::from([]),
        response_schema: std::sync::Arc::new(json!({"type": "object"})),
        grounded_search: false,
    }
}

#[tokio::test]
async fn throttling_is_retried_then_reported() {
    let (stub, config) =
        stub(vec![(429, json!({"error": {"message": "quota secret-detail"}})), (503, json!({})), (200, text("{}"))])
            .await;
    let gemini = Gemini::new(config.clone()).expect("client");
    let ok = gemini.generate(&request()).await.expect("third attempt succeeds");
    assert_eq!(ok.parts, vec![Part::Text("{}".into())]);
    assert_eq!(stub.seen.lock().expect("lock").len(), 3);
    // Structured output is requested when there are no tools.
    assert_eq!(stub.seen.lock().expect("lock")[0]["generationConfig"]["responseMimeType"], "application/json");

    let (stub, config) =
        self::stub(vec![(429, json!({})), (429, json!({})), (429, json!({})), (200, text("{}"))]).await;
    let err = Gemini::new(config).expect("client").generate(&request()).await.expect_err("throttled");
    assert_eq!(err, model::Error::Throttled);
    assert_eq!(stub.seen.lock().expect("lock").len(), 3, "no more than max_attempts");

    let (stub, config) = self::stub(vec![(400, json!({"error": "bad"})), (200, text("{}"))]).await;
    let err = Gemini::new(config).expect("client").generate(&request()).await.expect_err("refused");
    assert_eq!(err, model::Error::BadRequest);
    assert_eq!(stub.seen.lock().expect("lock").len(), 1, "a 400 is not retried");
}

#[tokio::test]
async fn an_answer_past_the_size_limit_is_refused_unread_and_not_retried() {
    let huge = text(&"x".repeat(crate::wire::MAX_RESPONSE_BYTES));
    let (stub, config) = stub(vec![(200, huge.clone()), (200, text("{}"))]).await;
    let err = Gemini::new(config).expect("client").generate(&request()).await.expect_err("refused");
    assert_eq!(err, model::Error::OutputInvalid("oversized response"));
    assert_eq!(stub.seen.lock().expect("lock").len(), 1, "an oversized answer is final");
    // The decoder holds the same bound for a body it is handed.
    let bytes = huge.to_string().into_bytes();
    assert_eq!(
        crate::gemini::decode_response(&bytes).expect_err("refused"),
        model::Error::OutputInvalid("oversized response")
    );
}

#[tokio::test]
async fn grounding_metadata_is_read() {
    let body = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Sync works offline."}]},
        "groundingMetadata": {"webSearchQueries": ["offline first sync"],
            "groundingChunks": [{"web": {"uri": "https://example.org/a", "title": "Example"}}, {"retrievedContext": {}}],
            "groundingSupports": [
                {"segment": {"endIndex": 19, "text": "Sync works offline."}, "groundingChunkIndices": [0], "confidenceScores": [0.9]},
                {"segment": {"partIndex": 0, "startIndex": 5, "endIndex": -1}, "groundingChunkIndices": [1, -2, 0.5]}]}}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1}});
    let (_stub, config) = stub(vec![(200, body)]).await;
    let response = Gemini::new(config).expect("client").generate(&request()).await.expect("ok");
    let g = response.grounding.clone().expect("grounding");
    assert_eq!(g.queries, ["offline first sync"]);
    let chunk = |uri: &str, title: &str| GroundingChunk { uri: uri.into(), title: title.into() };
    assert_eq!(g.chunks, [chunk("https://example.org/a", "Example"), chunk("", "")]);
    // Omitted zeros read as 0; numbers that are not indices are kept as usize::MAX for the
    // validation to refuse, never repaired.
    let support = |part, start, end, text: Option<&str>, chunks: Vec<usize>| GroundingSupport {
        part,
        start,
        end,
        text: text.map(str::to_owned),
        chunks,
    };
    assert_eq!(
        g.supports,
        [
            support(0, 0, 19, Some("Sync works offline."), vec![0]),
            support(0, 5, usize::MAX, None, vec![1, usize::MAX, usize::MAX])
        ]
    );
    assert_eq!(crate::research::accept(&response), Err(crate::research::Rejected::NotHttps));
}

#[test]
fn response_bytes_decode_to_parts_and_anything_else_is_unreadable_output() {
    let body = text("{}").to_string();
    let response = crate::gemini::decode_response(body.as_bytes()).expect("decodes");
    assert!(matches!(response.parts.as_slice(), [Part::Text(t)] if t == "{}"));
    assert_eq!(response.usage.input_tokens, 120);
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    for bad in [b"\xff".as_slice(), b"{\"candidates\":", deep.as_bytes()] {
        assert!(
            matches!(crate::gemini::decode_response(bad), Err(model::Error::OutputInvalid("malformed response"))),
            "{}",
            String::from_utf8_lossy(&bad[..bad.len().min(20)])
        );
    }
}

/// A Google error body: `status` and a detail `reason` are the provider's code; the message
/// must never be logged.
fn google_error(code: u16, status: &str, reason: Option<&str>) -> Value {
    let details: Vec<Value> = reason
        .map(|r| json!({"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": r, "domain": "googleapis.com"}))
        .into_iter()
        .collect();
    json!({"error": {"code": code, "message": "secret-detail of the provider", "status": status, "details": details}})
}

#[tokio::test]
async fn each_refusing_status_is_its_own_error_logged_with_its_status_and_provider_code_never_the_body() {
    let (logs, _guard) = super::fixture::warnings();
    let cases = [
        (401, google_error(401, "UNAUTHENTICATED", None), model::Error::Auth, "UNAUTHENTICATED"),
        (
            403,
            google_error(403, "PERMISSION_DENIED", Some("IAM_PERMISSION_DENIED")),
            model::Error::Auth,
            "PERMISSION_DENIED/IAM_PERMISSION_DENIED",
        ),
        (
            400,
            google_error(400, "INVALID_ARGUMENT", Some("API_KEY_INVALID")),
            model::Error::Auth,
            "INVALID_ARGUMENT/API_KEY_INVALID",
        ),
        (404, google_error(404, "NOT_FOUND", None), model::Error::NotFound, "NOT_FOUND"),
        (400, google_error(400, "INVALID_ARGUMENT", None), model::Error::BadRequest, "INVALID_ARGUMENT"),
        (422, json!("not a google error"), model::Error::BadRequest, "none"),
    ];
    for (status, body, expected, provider_code) in cases {
        let (stub, config) = stub(vec![(status, body), (200, text("{}"))]).await;
        let err = Gemini::new(config).expect("client").generate(&request()).await.expect_err("refused");
        assert_eq!(err, expected, "status {status}");
        assert_eq!(stub.seen.lock().expect("lock").len(), 1, "status {status} is not retried");
        let text = logs.text();
        let line = text.lines().last().expect("a log line");
        // Cloud Logging JSON writes field names in lowerCamelCase.
        assert!(line.contains(&format!("\"status\":{status}")), "{line}");
        assert!(line.contains(&format!("\"providerCode\":\"{provider_code}\"")), "{line}");
        assert!(line.contains(&format!("\"code\":\"{}\"", expected.code())), "{line}");
    }
    // A server that keeps failing, and one that is not there, are unavailable after the retries.
    let (stub, config) = stub(vec![(500, google_error(500, "INTERNAL", None)); 3]).await;
    let err = Gemini::new(config).expect("client").generate(&request()).await.expect_err("unavailable");
    assert_eq!((err.code(), stub.seen.lock().expect("lock").len()), (Code::ModelUnavailable, 3));
    let gone = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr");
    let (_, config) = self::stub(Vec::new()).await;
    let config = GeminiConfig { endpoint: format!("http://{gone}"), ..config };
    let err = Gemini::new(config).expect("client").generate(&request()).await.expect_err("unavailable");
    assert_eq!(err, model::Error::Unavailable("connection"));
    assert!(!logs.text().contains("secret-detail"), "a provider's message is never logged");
}

#[tokio::test]
async fn a_throttled_call_waits_at_least_the_retry_after_it_was_given_and_never_one_past_its_limit() {
    let (stub, config) =
        stub_with(vec![(429, google_error(429, "RESOURCE_EXHAUSTED", None), Some("1")), (200, text("{}"), None)]).await;
    let began = std::time::Instant::now();
    let ok = Gemini::new(config).expect("client").generate(&request()).await.expect("the second attempt answers");
    assert_eq!(ok.parts, vec![Part::Text("{}".into())]);
    assert!(began.elapsed() >= Duration::from_secs(1), "waited {:?}, asked for 1 s", began.elapsed());
    assert_eq!(stub.seen.lock().expect("lock").len(), 2);

    // Asked to wait longer than the client ever waits: throttled at once, the step retries later.
    let (stub, config) =
        stub_with(vec![(429, google_error(429, "RESOURCE_EXHAUSTED", None), Some("3600")), (200, text("{}"), None)])
            .await;
    let err = Gemini::new(config).expect("client").generate(&request()).await.expect_err("throttled");
    assert_eq!((err.code(), stub.seen.lock().expect("lock").len()), (Code::ModelThrottled, 1));
}

#[test]
fn retry_after_is_read_as_seconds_or_an_http_date() {
    let now = chrono::DateTime::parse_from_rfc3339("2026-12-02T10:00:00Z").expect("time").with_timezone(&chrono::Utc);
    assert_eq!(crate::wire::retry_after("7", now), Some(Duration::from_secs(7)));
    assert_eq!(crate::wire::retry_after("Wed, 02 Dec 2026 10:00:30 GMT", now), Some(Duration::from_secs(30)));
    assert_eq!(crate::wire::retry_after("Wed, 02 Dec 2026 09:00:00 GMT", now), Some(Duration::ZERO));
    assert_eq!(crate::wire::retry_after("soon", now), None);
}

#[test]
fn a_blocked_prompt_or_a_refusing_finish_reason_is_a_refusal_and_a_cut_short_answer_is_unreadable() {
    let decode = |v: Value| crate::gemini::decode_response(v.to_string().as_bytes()).map(|_| ()).map_err(|e| e.code());
    let finished = |reason: &str| json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "{}"}]}, "finishReason": reason}]});
    for reason in ["SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION"] {
        assert_eq!(decode(finished(reason)), Err(Code::ModelRefused), "{reason}");
    }
    assert_eq!(decode(json!({"promptFeedback": {"blockReason": "SAFETY"}})), Err(Code::ModelRefused));
    assert_eq!(decode(finished("MAX_TOKENS")), Err(Code::ModelOutputInvalid));
    assert_eq!(decode(json!({"candidates": []})), Err(Code::ModelOutputInvalid));
    assert_eq!(decode(finished("STOP")), Ok(()));
}

#[tokio::test]
async fn the_gemini_api_is_called_on_its_path_with_the_key_in_a_header_and_vertex_ai_in_any_location() {
    let (stub, vertex) = stub(vec![(200, text("{}"))]).await;
    let config =
        GeminiConfig { endpoint: vertex.endpoint.clone(), ..GeminiConfig::developer("key-123", "gemini-2.5-flash") };
    let gemini = Gemini::new(config.clone()).expect("client");
    assert_eq!(gemini.provider(), "gcp.gemini");
    gemini.generate(&request()).await.expect("answered on the Gemini API's path");
    assert_eq!(stub.keys.lock().expect("lock").as_slice(), [Some("key-123".to_owned())]);
    assert!(!format!("{config:?}").contains("key-123"), "the key never reaches debug output");

    assert_eq!(Gemini::new(vertex).expect("client").provider(), "gcp.vertex_ai");
    let global = GeminiConfig::vertex("p", "global", "gemini-2.5-flash");
    assert_eq!(global.endpoint, "https://aiplatform.googleapis.com");
    assert_eq!(
        GeminiConfig::vertex("p", "europe-west4", "m").endpoint,
        "https://europe-west4-aiplatform.googleapis.com"
    );
}
