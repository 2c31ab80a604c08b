//! The Gemini client against a local stub that speaks the `generateContent` wire format.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use harmonia_contracts::event::{Pass, Stage};
use harmonia_contracts::{Code, Role};
use serde_json::{Value, json};

use super::Fixture;
use crate::gemini::{Auth, Gemini, GeminiConfig};
use crate::io::{DraftOutput, NoniInput, RoleInput};
use crate::model::{self, GroundingChunk, GroundingSupport, Model, ModelRequest, Part, Speaker, Turn};

#[derive(Clone, Default)]
struct Stub {
    replies: Arc<Mutex<VecDeque<(u16, Value)>>>,
    seen: Arc<Mutex<Vec<Value>>>,
}

async fn answer(State(stub): State<Stub>, Json(body): Json<Value>) -> (StatusCode, Json<Value>) {
    stub.seen.lock().expect("lock").push(body);
    let (status, reply) = stub.replies.lock().expect("lock").pop_front().unwrap_or((500, json!({"error": "empty"})));
    (StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), Json(reply))
}

async fn stub(replies: Vec<(u16, Value)>) -> (Stub, GeminiConfig) {
    let stub = Stub { replies: Arc::new(Mutex::new(replies.into())), seen: Arc::default() };
    let app = axum::Router::new()
        .route(
            "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent",
            post(answer),
        )
        .with_state(stub.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let config = GeminiConfig {
        endpoint: format!("http://127.0.0.1:{port}"),
        project: "p".into(),
        location: "us-central1".into(),
        model: "gemini-2.5-flash".into(),
        timeout: Duration::from_secs(5),
        max_attempts: 3,
        backoff: Duration::from_millis(1),
        auth: Auth::None,
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

fn noni(f: &Fixture) -> RoleInput {
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
    RoleInput::Noni(NoniInput::new(Pass::FIRST, item, brief, &[moment], None))
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
    let inv = rt.invoke(&f.seed(Stage::Draft, noni(&f))).await.expect("accepted");
    let draft: DraftOutput = inv.state_delta.require("draft").expect("draft");
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
    let err = rt.invoke(&f.seed(Stage::Draft, noni(&f))).await.expect_err("rejected");
    let e = err.contract().expect("contract");
    assert_eq!((e.role, e.code), (Role::Noni, Code::SchemaViolation));
    assert!(!e.safe_message.contains("unterminated"));
}

fn request() -> ModelRequest {
    ModelRequest {
        role: Role::Harmonia,
        system_instruction: "route".into(),
        turns: vec![Turn { speaker: Speaker::User, parts: vec![Part::Text("{}".into())] }],
        tools: Vec::new(),
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
    assert!(matches!(err, model::Error::Refused(_)));
    assert_eq!(stub.seen.lock().expect("lock").len(), 1, "a 400 is not retried");
}

#[tokio::test]
async fn an_answer_past_the_size_limit_is_refused_unread_and_not_retried() {
    let huge = text(&"x".repeat(crate::gemini::MAX_RESPONSE_BYTES));
    let (stub, config) = stub(vec![(200, huge.clone()), (200, text("{}"))]).await;
    let err = Gemini::new(config).expect("client").generate(&request()).await.expect_err("refused");
    assert_eq!(err, model::Error::Refused("oversized response"));
    assert_eq!(stub.seen.lock().expect("lock").len(), 1, "an oversized answer is final");
    // The decoder holds the same bound for a body it is handed.
    let bytes = huge.to_string().into_bytes();
    assert_eq!(
        crate::gemini::decode_response(&bytes).expect_err("refused"),
        model::Error::Refused("oversized response")
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
fn response_bytes_decode_to_parts_and_anything_else_is_a_malformed_response() {
    let body = text("{}").to_string();
    let response = crate::gemini::decode_response(body.as_bytes()).expect("decodes");
    assert!(matches!(response.parts.as_slice(), [Part::Text(t)] if t == "{}"));
    assert_eq!(response.usage.input_tokens, 120);
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    for bad in [b"\xff".as_slice(), b"{\"candidates\":", deep.as_bytes()] {
        assert!(
            matches!(crate::gemini::decode_response(bad), Err(model::Error::Refused("malformed response"))),
            "{}",
            String::from_utf8_lossy(&bad[..bad.len().min(20)])
        );
    }
}
