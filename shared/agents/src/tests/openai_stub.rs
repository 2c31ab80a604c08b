//! The OpenAI-compatible client against a recorded-response server: a local axum server that
//! answers `POST /v1/chat/completions` with the recordings under `recordings/openai/` (bodies
//! in the documented wire format) in the order a test queues them, and keeps every request.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::header::{AUTHORIZATION, RETRY_AFTER};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use harmonia_contracts::event::Stage;
use harmonia_contracts::{Code, Role};
use serde_json::{Value, json};

use super::Fixture;
use super::gemini_stub::{noni, request};
use crate::io::{DraftOutput, EntityKind, EntityRef, Layout, MayaInput};
use crate::model::{self, Model, ModelRequest, Part};
use crate::openai::{OpenAi, OpenAiConfig, drop_absent, strict_schema};
use crate::role;
use crate::wire::Limits;

/// A recording by file name.
fn recording(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tests/recordings/openai").join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).expect("recording")).expect("recording JSON")
}

/// One queued answer: a status, a recording, and a `Retry-After` header when set.
type Reply = (u16, &'static str, Option<&'static str>);

/// The recorded-response server's state.
#[derive(Clone, Default)]
struct RecordedResponses {
    replies: Arc<Mutex<VecDeque<Reply>>>,
    requests: Arc<Mutex<Vec<Value>>>,
    authorizations: Arc<Mutex<Vec<Option<String>>>>,
}

impl RecordedResponses {
    fn requests(&self) -> Vec<Value> {
        self.requests.lock().expect("lock").clone()
    }
}

async fn answer(State(server): State<RecordedResponses>, headers: HeaderMap, Json(body): Json<Value>) -> Response {
    server.requests.lock().expect("lock").push(body);
    let auth = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()).map(str::to_owned);
    server.authorizations.lock().expect("lock").push(auth);
    let Some((status, name, retry_after)) = server.replies.lock().expect("lock").pop_front() else {
        return (StatusCode::INTERNAL_SERVER_ERROR, Json(recording("error-server.json"))).into_response();
    };
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, Json(recording(name))).into_response();
    if let Some(after) = retry_after {
        response.headers_mut().insert(RETRY_AFTER, after.parse().expect("header"));
    }
    response
}

/// A recorded-response server answering `replies` in turn, and a client config for it.
async fn serve(replies: Vec<Reply>) -> (RecordedResponses, OpenAiConfig) {
    let server = RecordedResponses { replies: Arc::new(Mutex::new(replies.into())), ..RecordedResponses::default() };
    let app = axum::Router::new().route("/v1/chat/completions", post(answer)).with_state(server.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let config = OpenAiConfig {
        limits: Limits { timeout: Duration::from_secs(5), backoff: Duration::from_millis(1), ..Limits::default() },
        ..OpenAiConfig::new(&format!("http://127.0.0.1:{port}/v1/"), Some("sk-test-secret"), "gpt-4.1-mini")
    };
    (server, config)
}

fn ok(name: &'static str) -> Reply {
    (200, name, None)
}

#[tokio::test]
async fn noni_runs_its_whole_tool_calling_loop_and_every_result_answers_its_call() {
    let f = Fixture::new().await;
    let (server, config) =
        serve(vec![ok("noni-load-skill.json"), ok("noni-load-reference.json"), ok("noni-draft.json")]).await;
    let model = OpenAi::new(config).expect("client");
    assert!(!model.grounded_search(), "chat completions has no grounded search");
    let rt = f.runtime(Arc::new(model));
    let inv = rt.invoke::<role::Noni>(&f.seed(Stage::Draft, noni(&f))).await.expect("accepted");
    let draft: DraftOutput = inv.output;
    assert_eq!(draft.provenance, harmonia_contracts::tool::Provenance::Live);
    assert_eq!(draft.body, "Rangers lost none of them.");
    // Usage is summed over the three calls into the activity record.
    assert_eq!((inv.activity.usage.input_tokens, inv.activity.usage.output_tokens), (812 + 1630 + 2410, 21 + 27 + 44));
    assert_eq!(inv.activity.model, "gpt-4.1-mini");

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let first = &requests[0];
    assert_eq!(first["model"], "gpt-4.1-mini");
    assert_eq!(first["messages"][0]["role"], "system");
    assert!(first["messages"][0]["content"].as_str().is_some_and(|t| t.contains("Noni")));
    assert_eq!(first["messages"][1]["role"], "user");
    let tools: Vec<&str> =
        first["tools"].as_array().expect("tools").iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert_eq!(tools, ["load_skill", "load_reference", "search_verified_publications"], "no google_search offered");
    assert!(first.get("response_format").is_none(), "a role with tools gets no response format");
    // The third request replays both calls, each answered by a tool message with its id.
    let messages = requests[2]["messages"].as_array().expect("messages");
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant", "tool"]);
    for (call, result) in [(2, 3), (4, 5)] {
        let id = &messages[call]["tool_calls"][0]["id"];
        assert_eq!(&messages[result]["tool_call_id"], id);
    }
    assert_eq!(messages[2]["tool_calls"][0]["function"]["name"], "load_skill");
    let args: Value =
        serde_json::from_str(messages[2]["tool_calls"][0]["function"]["arguments"].as_str().expect("text"))
            .expect("json");
    assert_eq!(args, json!({"name": "noni-writing-skills"}));
    let result: Value = serde_json::from_str(messages[3]["content"].as_str().expect("text")).expect("json");
    assert!(result["instructions"].as_str().is_some_and(|t| t.len() > 100), "the skill's text came back");
    assert_eq!(
        server.authorizations.lock().expect("lock").as_slice(),
        [
            Some("Bearer sk-test-secret".to_owned()),
            Some("Bearer sk-test-secret".to_owned()),
            Some("Bearer sk-test-secret".to_owned())
        ]
    );
}

#[tokio::test]
async fn a_role_without_tools_asks_for_strict_structured_output_and_its_answer_is_validated() {
    let f = Fixture::new().await;
    let (server, config) = serve(vec![ok("maya-layout.json")]).await;
    let rt = f.runtime(Arc::new(OpenAi::new(config).expect("client")));
    let input = MayaInput {
        catalog: vec![EntityRef { kind: EntityKind::Job, id: "job-test".into() }],
        view: "job_view".into(),
    };
    let inv = rt.invoke::<role::Maya>(&f.seed(Stage::Operator, input)).await.expect("accepted");
    let layout: Layout = inv.output;
    assert_eq!((layout.root.as_str(), layout.components.len()), ("root", 2));
    let format = &server.requests()[0]["response_format"];
    assert_eq!((format["type"].as_str(), format["json_schema"]["strict"].as_bool()), (Some("json_schema"), Some(true)));
    assert_eq!(format["json_schema"]["name"], "maya_output");
    assert!(server.requests()[0].get("tools").is_none());
    assert_strict(&format["json_schema"]["schema"]);
}

/// Every object of a strict schema is closed and requires every property; no keyword strict
/// mode refuses is left.
fn assert_strict(schema: &Value) {
    match schema {
        Value::Object(map) => {
            for keyword in ["oneOf", "minLength", "maxLength", "$schema", "format", "default"] {
                assert!(!map.contains_key(keyword), "{keyword} is left in {schema}");
            }
            if let Some(props) = map.get("properties").and_then(Value::as_object) {
                assert_eq!(map.get("additionalProperties"), Some(&json!(false)), "{schema}");
                let required: Vec<&str> =
                    map["required"].as_array().expect("required").iter().filter_map(Value::as_str).collect();
                assert_eq!(required, props.keys().map(String::as_str).collect::<Vec<_>>());
            }
            for (key, value) in map {
                match key.as_str() {
                    // Maps of named schemas: each value is a schema, the names are not keywords.
                    "properties" | "$defs" => {
                        value.as_object().into_iter().flatten().for_each(|(_, v)| assert_strict(v))
                    }
                    _ => assert_strict(value),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(assert_strict),
        _ => {}
    }
}

#[test]
fn every_roles_output_schema_has_a_strict_form_and_nulls_for_absent_fields_are_taken_out() {
    for role in Role::ALL {
        let schema = (crate::roles::spec(role).output_schema)();
        assert_strict(&strict_schema(&schema));
    }
    let schema = json!({"type": "object", "required": ["a"], "properties": {
        "a": {"type": ["string", "null"]},
        "b": {"type": "string", "minLength": 1},
        "list": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
        "$defs": {"format": {"type": "string", "format": "date-time"}, "Item": {"type": "object", "required": ["x"], "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}}}});
    let strict = strict_schema(&schema);
    assert_eq!(strict["properties"]["b"], json!({"anyOf": [{"type": "string"}, {"type": "null"}]}));
    assert_eq!(strict["required"], json!(["a", "b", "list"]));
    assert_eq!(strict["$defs"]["Item"]["required"], json!(["x", "y"]));
    assert_eq!(strict["$defs"]["format"], json!({"type": "string"}), "a definition's name is not a keyword");
    let mut answer = json!({"a": null, "b": null, "list": [{"x": 1, "y": null}, {"x": 2, "y": 3}]});
    drop_absent(&mut answer, &schema);
    assert_eq!(answer, json!({"a": null, "list": [{"x": 1}, {"x": 2, "y": 3}]}), "a required null stays");
}

#[tokio::test]
async fn each_refusal_status_and_unreadable_answer_is_its_own_error_and_only_outages_are_retried() {
    let (logs, _guard) = super::fixture::warnings();
    let cases: [(Reply, Code, usize); 10] = [
        ((401, "error-invalid-api-key.json", None), Code::ModelAuth, 1),
        ((429, "error-insufficient-quota.json", None), Code::ModelAuth, 1),
        ((404, "error-model-not-found.json", None), Code::ModelNotFound, 1),
        ((400, "error-bad-request.json", None), Code::ModelBadRequest, 1),
        ((429, "error-rate-limit.json", None), Code::ModelThrottled, 3),
        ((500, "error-server.json", None), Code::ModelUnavailable, 3),
        (ok("content-filter.json"), Code::ModelRefused, 1),
        (ok("refusal.json"), Code::ModelRefused, 1),
        (ok("length.json"), Code::ModelOutputInvalid, 1),
        (ok("bad-arguments.json"), Code::ModelOutputInvalid, 1),
    ];
    for (reply, code, attempts) in cases {
        let (server, config) = serve(vec![reply; attempts]).await;
        let err = OpenAi::new(config).expect("client").generate(&request()).await.expect_err("refused");
        assert_eq!((err.code(), server.requests().len()), (code, attempts), "{}", reply.1);
    }
    let text = logs.text();
    assert!(text.contains("\"status\":401") && text.contains("\"providerCode\":\"invalid_api_key\""), "{text}");
    assert!(text.contains("\"providerCode\":\"insufficient_quota\""), "{text}");
    assert!(text.contains("\"providerCode\":\"server_error\""), "{text}");
    for secret in ["Incorrect API key", "sk-test-secret", "exceeded your current quota", "Rangers"] {
        assert!(!text.contains(secret), "{secret} reached a log line");
    }
    // Throttled with a Retry-After: waited for, then answered.
    let (server, config) = serve(vec![(429, "error-rate-limit.json", Some("1")), ok("maya-layout.json")]).await;
    let began = std::time::Instant::now();
    OpenAi::new(config).expect("client").generate(&request()).await.expect("the second attempt answers");
    assert!(began.elapsed() >= Duration::from_secs(1), "waited {:?}, asked for 1 s", began.elapsed());
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_grounded_search_is_refused_without_a_call_and_the_key_never_reaches_debug_output() {
    let (server, config) = serve(vec![ok("maya-layout.json")]).await;
    assert!(!format!("{config:?}").contains("sk-test-secret"));
    let grounded = ModelRequest { grounded_search: true, ..request() };
    let err = OpenAi::new(config).expect("client").generate(&grounded).await.expect_err("refused");
    assert_eq!(err, model::Error::BadRequest);
    assert!(server.requests().is_empty());
    // A local server without a key gets no authorization header.
    let (server, config) = serve(vec![ok("maya-layout.json")]).await;
    let answer =
        OpenAi::new(OpenAiConfig { api_key: None, ..config }).expect("client").generate(&request()).await.expect("ok");
    assert!(matches!(answer.parts.as_slice(), [Part::Text(_)]));
    assert_eq!(server.authorizations.lock().expect("lock").as_slice(), [None]);
}

/// One client's calls share its pace: under `HARMONIA_MODEL_RPM` concurrent calls (of any role
/// or job) go one interval apart, and a provider's `Retry-After` holds every call of the client,
/// not only the one it answered.
#[tokio::test]
async fn the_calls_of_one_client_share_its_pace_and_the_providers_retry_after() {
    let (server, config) = serve(vec![ok("maya-layout.json"), ok("maya-layout.json"), ok("maya-layout.json")]).await;
    let rpm = std::num::NonZeroU32::new(600); // one call every 100 ms
    let model = Arc::new(OpenAi::new(OpenAiConfig { limits: Limits { rpm, ..config.limits }, ..config }).expect("c"));
    let began = std::time::Instant::now();
    let calls: Vec<_> = (0..3)
        .map(|_| {
            let model = model.clone();
            tokio::spawn(async move { model.generate(&request()).await })
        })
        .collect();
    for call in calls {
        call.await.expect("task").expect("answered");
    }
    assert!(began.elapsed() >= Duration::from_millis(200), "three calls 100 ms apart took {:?}", began.elapsed());
    assert_eq!(server.requests().len(), 3);

    // A 429 asking for 1 s, to a call that does not retry: the next call of the client, whoever
    // makes it, waits for the rest of that second before it is sent.
    let (server, config) = serve(vec![(429, "error-rate-limit.json", Some("1")), ok("maya-layout.json")]).await;
    let limits = Limits { max_attempts: 1, ..config.limits };
    let model = OpenAi::new(OpenAiConfig { limits, ..config }).expect("client");
    assert_eq!(model.generate(&request()).await.expect_err("throttled"), model::Error::Throttled);
    let began = std::time::Instant::now();
    model.generate(&request()).await.expect("answered after the hold");
    assert!(began.elapsed() >= Duration::from_millis(900), "the next call waited {:?}", began.elapsed());
    assert_eq!(server.requests().len(), 2);
}
