//! The forwarded `POST /v1/ask` through real HTTP: the operator API in front of a Nova server
//! of its own on another port, sharing one store, as the two functions share Firestore.

use std::sync::Arc;

use harmonia_agents::Runtime;
use harmonia_agents::offline::OfflineModel;
use harmonia_agents::skills::SkillLibrary;
use harmonia_auth::Role;
use harmonia_local::Local;
use harmonia_testkit::{error_code, send, spawn_app};
use serde_json::json;

use super::*;
use crate::OperatorState;

struct Fx {
    operator: harmonia_testkit::Spawned,
    nova: Option<harmonia_testkit::Spawned>,
    credential: String,
    _local: Local,
    _dir: harmonia_testkit::TempDir,
}

async fn fixture() -> Fx {
    let dir = harmonia_testkit::temp_dir();
    let local = Local::open(dir.path()).await.expect("open");
    let ws = local.workspace().await.expect("a configured workspace");
    let store = local.env.store.clone();
    let credential = crate::tests::credential(&*store, &ws, "ana", Role::Operator).await;
    let credentials = Arc::new(Credentials::new(store.clone()));
    let skills = Arc::new(SkillLibrary::configured().expect("skills"));
    let runtime = harmonia_nova::with_tools(Runtime::new(Arc::new(OfflineModel), store, skills));
    let nova = spawn_app(harmonia_nova::app(harmonia_nova::NovaState {
        runtime: Arc::new(runtime),
        credentials: credentials.clone(),
    }))
    .await;
    let link = NovaLink::new(&nova.to_string()).expect("a plain-http link needs no ID token");
    let state = OperatorState { env: local.env.clone(), credentials: credentials.clone() };
    let operator = spawn_app(crate::app_with(state, routes(link, credentials))).await;
    Fx { operator, nova: Some(nova), credential, _local: local, _dir: dir }
}

impl Fx {
    /// A console session: its cookie and CSRF token.
    async fn sign_in(&self) -> (String, String) {
        let response = reqwest::Client::new()
            .post(format!("{}/v1/console/session", self.operator))
            .json(&json!({ "credential": self.credential }))
            .send()
            .await
            .expect("sign in");
        assert_eq!(response.status(), 201);
        let cookie = response.headers()[header::SET_COOKIE].to_str().expect("text");
        let cookie = cookie.split(';').next().expect("name=value").to_owned();
        let body: serde_json::Value = response.json().await.expect("json");
        (cookie, body["csrf"].as_str().expect("csrf").to_owned())
    }

    fn ask(&self, question: &str) -> reqwest::RequestBuilder {
        reqwest::Client::new().post(format!("{}/v1/ask", self.operator)).json(&json!({ "question": question }))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_session_asks_nova_through_the_operator_api_and_gets_its_answer_as_nova_gave_it() {
    let fx = fixture().await;
    let (cookie, csrf) = fx.sign_in().await;
    // As the console's page sends it: the cookie, the CSRF token and its own Origin, which Nova
    // checks against the host the operator API was asked at.
    let page = fx.operator.to_string();
    let (s, v) = send(
        fx.ask("What is pending in the feed?")
            .header("cookie", &cookie)
            .header(CSRF_HEADER, &csrf)
            .header("origin", &page),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert!(!v["answer"]["answer"].as_str().expect("the answer").is_empty(), "{v}");
    assert_eq!(v["skill"], "signal-watch", "{v}");
    let call = &v["tool_calls"][0];
    assert_eq!(call["name"], "get_operator_feed", "{v}");
    assert_eq!(call["envelope"]["status"], "success", "the envelope as the tool returned it: {v}");
    // An operator credential works the same way.
    let (s, v) = send(fx.ask("What is pending in the feed?").bearer_auth(&fx.credential)).await;
    assert_eq!(s, 200, "{v}");
    // Nova's own refusals come back as it gave them.
    let (s, v) = send(fx.ask("  ").bearer_auth(&fx.credential)).await;
    assert_eq!((s, error_code(&v)), (400, "invalid_request"), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_api_refuses_what_it_must_before_forwarding_and_says_when_nova_is_unreachable() {
    let mut fx = fixture().await;
    let (cookie, _) = fx.sign_in().await;
    let (s, v) = send(fx.ask("What is pending?").header("cookie", &cookie)).await;
    assert_eq!((s, error_code(&v)), (403, "csrf_rejected"), "no CSRF token: {v}");
    let (s, v) = send(fx.ask("What is pending?")).await;
    assert_eq!((s, error_code(&v)), (401, "unauthenticated"), "{v}");
    harmonia_testkit::assert_json_fallbacks(&fx.operator, reqwest::Method::GET, "/v1/ask").await;

    fx.nova.take().expect("nova").shutdown().await;
    let (s, v) = send(fx.ask("What is pending?").bearer_auth(&fx.credential)).await;
    assert_eq!((s, error_code(&v)), (503, "dependency_unavailable"), "{v}");
    assert_eq!(v["error"]["message"], "Nova could not be reached; ask again in a moment.", "no address or cause: {v}");
}
