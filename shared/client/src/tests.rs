//! The client against a local server that answers as a deployment can: the API's own errors,
//! throttling, and a proxy's pages.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::*;

/// A server on port 0 whose every route answers `answers` in turn (the last one repeatedly),
/// counting the requests it received and keeping the last `Authorization` header.
struct Server {
    url: String,
    hits: Arc<AtomicUsize>,
    bearer: Arc<std::sync::Mutex<Option<String>>>,
}

type Answer = (StatusCode, Vec<(&'static str, &'static str)>, &'static str);

async fn serve(path: &'static str, answers: Vec<Answer>) -> Server {
    let hits = Arc::new(AtomicUsize::new(0));
    let bearer = Arc::new(std::sync::Mutex::new(None));
    let (h, b) = (hits.clone(), bearer.clone());
    let answer = move |headers: HeaderMap| {
        let n = h.fetch_add(1, Ordering::SeqCst);
        let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
        *b.lock().expect("lock") = auth;
        let (status, extra, body) = answers[n.min(answers.len() - 1)].clone();
        async move {
            let mut response: Response = (status, body).into_response();
            response.headers_mut().insert("content-type", "application/json".parse().expect("header"));
            for (k, v) in extra {
                response.headers_mut().insert(k, v.parse().expect("header"));
            }
            response
        }
    };
    let app = Router::new().route(path, get(answer.clone()).post(answer));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    Server { url, hits, bearer }
}

fn client(url: &str) -> Client {
    Client::new(url, Auth::from_text("hop_w/ana/s3cret")).expect("client").with_backoff(Duration::from_millis(1))
}

const ME: &str = r#"{"operator":"ana","workspace":"w","role":"operator"}"#;
const UNAVAILABLE: &str = r#"{"error":{"code":"store_unavailable","category":"unavailable","message":"The state store is unavailable.","retryable":true}}"#;
const CONFLICT: &str = r#"{"error":{"code":"invalid_transition","category":"precondition","message":"The job is strategy_approved.","retryable":false}}"#;

#[tokio::test]
async fn an_answer_is_typed_and_the_credential_is_the_bearer() {
    let server = serve("/v1/me", vec![(StatusCode::OK, vec![], ME)]).await;
    let me = client(&server.url).me().await.expect("me");
    assert_eq!((me.operator.as_str(), me.workspace.as_str()), ("ana", "w"));
    assert_eq!(server.bearer.lock().expect("lock").as_deref(), Some("Bearer hop_w/ana/s3cret"));
}

#[tokio::test]
async fn the_apis_error_comes_back_typed_with_its_own_message() {
    let server = serve("/v1/jobs/{job}/retry", vec![(StatusCode::CONFLICT, vec![], CONFLICT)]).await;
    let job: JobId = "job-1".parse().expect("id");
    let refused = client(&server.url).retry(&job).await.map(|_| ()).expect_err("refused");
    assert_eq!(refused.code, Code::InvalidTransition);
    assert_eq!(refused.message, "The job is strategy_approved.");
    assert_eq!(server.hits.load(Ordering::SeqCst), 1, "a conflict is not retried");
}

#[tokio::test]
async fn a_throttled_request_waits_and_is_sent_again() {
    let throttled = (StatusCode::TOO_MANY_REQUESTS, vec![("retry-after", "0")], "{}");
    let server = serve("/v1/jobs/{job}/retry", vec![throttled, (StatusCode::OK, vec![], "{}")]).await;
    let job: JobId = "job-1".parse().expect("id");
    // The second answer is not a retry's body: that it is read at all shows the retry.
    let read = client(&server.url).retry(&job).await.map(|_| ()).expect_err("not a retry body");
    assert_eq!(read.code, Code::Internal);
    assert_eq!(server.hits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_read_is_retried_on_a_retryable_5xx_but_a_decision_is_not() {
    let server =
        serve("/v1/me", vec![(StatusCode::SERVICE_UNAVAILABLE, vec![], UNAVAILABLE), (StatusCode::OK, vec![], ME)])
            .await;
    client(&server.url).me().await.expect("answered on the second attempt");
    assert_eq!(server.hits.load(Ordering::SeqCst), 2);

    let server = serve("/v1/jobs/{job}/retry", vec![(StatusCode::SERVICE_UNAVAILABLE, vec![], UNAVAILABLE)]).await;
    let job: JobId = "job-1".parse().expect("id");
    let failed = client(&server.url).retry(&job).await.map(|_| ()).expect_err("unavailable");
    assert_eq!(failed.code, Code::StoreUnavailable);
    assert_eq!(server.hits.load(Ordering::SeqCst), 1, "a write the server may have applied is sent once");
}

#[tokio::test]
async fn a_proxys_page_is_api_unavailable_and_never_shown() {
    let page = (StatusCode::BAD_GATEWAY, vec![("content-type", "text/html")], "<html>upstream secret-host</html>");
    let server = serve("/v1/me", vec![page]).await;
    let failed = client(&server.url).me().await.map(|_| ()).expect_err("unavailable");
    assert_eq!(failed.code, Code::ApiUnavailable);
    assert!(!failed.message.contains("secret-host"), "{}", failed.message);
    assert_eq!(server.hits.load(Ordering::SeqCst), MAX_ATTEMPTS);
}

#[tokio::test]
async fn an_unreachable_api_is_api_unavailable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    drop(listener);
    let failed = client(&url).me().await.map(|_| ()).expect_err("unreachable");
    assert_eq!(failed.code, Code::ApiUnavailable);
}

#[test]
fn an_address_that_is_not_http_is_refused_and_auth_never_shows_its_secret() {
    for bad in ["", "operator.example", "ftp://operator.example", "http://"] {
        let refused = Client::new(bad, Auth::from_text("hop_x")).map(|_| ()).expect_err(bad);
        assert_eq!(refused.code, Code::InvalidConfig, "{bad}");
    }
    let auth = Auth::from_text("hop_w/ana/s3cret");
    assert!(matches!(auth, Auth::Credential(_)));
    assert!(!format!("{auth:?}").contains("s3cret"));
    assert!(matches!(Auth::from_text("eyJhbGciOi.eyJzdWIi.sig"), Auth::IdToken(_)));
    let client = Client::new("https://operator.example/", auth).expect("client");
    assert_eq!(client.base(), "https://operator.example");
    assert!(!format!("{client:?}").contains("s3cret"));
}

#[test]
fn a_decision_body_takes_only_its_own_field() {
    let body = DecisionBody {
        subject: ApprovalSubject::Draft,
        decision: DecisionKind::Reject,
        version: "abcdef12".into(),
        reason: Some("Off brand.".into()),
        feedback: None,
    };
    let json = serde_json::to_value(&body).expect("json");
    assert_eq!(
        json,
        serde_json::json!({"subject":"draft","decision":"reject","version":"abcdef12","reason":"Off brand."})
    );
    assert!(
        serde_json::from_str::<DecisionBody>(r#"{"subject":"draft","decision":"approve","version":"a","x":1}"#)
            .is_err()
    );
}
