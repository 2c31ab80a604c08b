//! Tokens signed with a test key, against a key set served by a local server on port 0.
//! Nothing here calls Google.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::header::CACHE_CONTROL;
use axum::routing::get;
use base64::Engine as _;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{EncodingKey, Header};
use serde_json::{Value, json};

use super::*;

const KEY: &str = include_str!("../../testdata/test-signing-key.rsa.b64");
const AUD: &str = "https://operator.example.run.app";

fn signing_key() -> EncodingKey {
    let der = base64::engine::general_purpose::STANDARD.decode(KEY.trim()).expect("base64 key");
    EncodingKey::from_rsa_der(&der)
}

fn jwk(kid: &str) -> Value {
    let mut jwk = Jwk::from_encoding_key(&signing_key(), Algorithm::RS256).expect("public key");
    jwk.common.key_id = Some(kid.to_owned());
    serde_json::to_value(jwk).expect("jwk")
}

fn token(kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &signing_key()).expect("sign")
}

fn now() -> i64 {
    i64::try_from(jsonwebtoken::get_current_timestamp()).expect("time")
}

fn claims(aud: &str, exp: i64, email: &str, verified: bool) -> Value {
    json!({"iss": "https://accounts.google.com", "aud": aud, "exp": exp, "iat": exp - 3600,
           "email": email, "email_verified": verified, "sub": "1234"})
}

/// The key endpoint: serves `keys` with `cache_control`, counting requests.
#[derive(Clone, Default)]
struct Endpoint {
    keys: Arc<Mutex<Vec<Value>>>,
    cache_control: Arc<Mutex<String>>,
    hits: Arc<AtomicU64>,
}

async fn certs(State(e): State<Endpoint>) -> ([(axum::http::HeaderName, String); 1], String) {
    e.hits.fetch_add(1, Ordering::SeqCst);
    let keys = e.keys.lock().expect("keys").clone();
    let cache_control = e.cache_control.lock().expect("cache control").clone();
    ([(CACHE_CONTROL, cache_control)], json!({ "keys": keys }).to_string())
}

async fn endpoint(kids: &[&str], cache_control: &str) -> (Endpoint, String) {
    let e = Endpoint::default();
    *e.keys.lock().expect("keys") = kids.iter().map(|k| jwk(k)).collect();
    *e.cache_control.lock().expect("cache control") = cache_control.to_owned();
    let app = Router::new().route("/certs", get(certs)).with_state(e.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/certs", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (e, url)
}

fn ana() -> Identity {
    Identity { operator: "ana".parse().expect("op"), workspace: "ws".parse().expect("ws"), role: Role::Operator }
}

fn verifier(keys: KeySet) -> GoogleIdTokens {
    let principal = Principal { operator: "ana".parse().expect("op"), workspace: "ws".parse().expect("ws") };
    GoogleIdTokens::new(keys, AUD, HashMap::from([("Ana@Example.com".to_owned(), principal)]))
}

async fn code(v: &GoogleIdTokens, token: &str) -> Option<Code> {
    v.verify(token).await.err().map(|e| e.code)
}

#[tokio::test]
async fn valid_tokens_pass_and_each_failed_check_has_its_code() {
    let (_, url) = endpoint(&["k1"], "public, max-age=3600").await;
    let v = verifier(KeySet::new(&url).expect("url"));
    let exp = now() + 600;
    assert_eq!(v.verify(&token("k1", &claims(AUD, exp, "ana@example.com", true))).await.ok(), Some(ana()));
    let expired = claims(AUD, now() - 600, "ana@example.com", true);
    assert_eq!(code(&v, &token("k1", &expired)).await, Some(Code::TokenExpired));
    let other_audience = claims("https://other.example.run.app", exp, "ana@example.com", true);
    assert_eq!(code(&v, &token("k1", &other_audience)).await, Some(Code::TokenWrongAudience));
    let mut other_issuer = claims(AUD, exp, "ana@example.com", true);
    other_issuer["iss"] = json!("https://evil.example.com");
    assert_eq!(code(&v, &token("k1", &other_issuer)).await, Some(Code::TokenWrongIssuer));
    let unverified = claims(AUD, exp, "ana@example.com", false);
    assert_eq!(code(&v, &token("k1", &unverified)).await, Some(Code::TokenEmailUnverified));
    let unmapped = claims(AUD, exp, "eve@example.com", true);
    assert_eq!(code(&v, &token("k1", &unmapped)).await, Some(Code::Authorization));

    let good = token("k1", &claims(AUD, exp, "ana@example.com", true));
    let mut forged = good.clone();
    forged.replace_range(forged.len() - 8.., "AAAAAAAA");
    assert_eq!(code(&v, &forged).await, Some(Code::Unauthenticated), "bad signature");
    let (header, rest) = good.split_once('.').expect("jwt");
    let signature = rest.rsplit_once('.').expect("signature").1;
    let longer = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(claims(AUD, exp + 99_999, "ana@example.com", true).to_string());
    assert_eq!(code(&v, &format!("{header}.{longer}.{signature}")).await, Some(Code::Unauthenticated), "tampered");
    assert_eq!(code(&v, "not.a.jwt").await, Some(Code::Unauthenticated));
    assert_eq!(v.keys().fetches(), 1, "one fetch served every check while max-age holds");
}

#[tokio::test]
async fn a_rotated_key_is_fetched_when_a_token_names_it() {
    let (endpoint, url) = endpoint(&["k1"], "max-age=3600").await;
    let v = verifier(KeySet::new(&url).expect("url").with_min_refresh(Duration::ZERO));
    let exp = now() + 600;
    assert!(v.verify(&token("k1", &claims(AUD, exp, "ana@example.com", true))).await.is_ok());
    *endpoint.keys.lock().expect("keys") = vec![jwk("k1"), jwk("k2")];
    assert_eq!(v.verify(&token("k2", &claims(AUD, exp, "ana@example.com", true))).await.ok(), Some(ana()));
    assert_eq!(endpoint.hits.load(Ordering::SeqCst), 2, "the new kid caused exactly one refresh");
}

#[tokio::test]
async fn unknown_key_ids_cannot_hammer_the_endpoint() {
    let (endpoint, url) = endpoint(&["k1"], "max-age=3600").await;
    let v = verifier(KeySet::new(&url).expect("url"));
    let exp = now() + 600;
    for i in 0..50 {
        let t = token(&format!("bogus-{i}"), &claims(AUD, exp, "ana@example.com", true));
        assert_eq!(code(&v, &t).await, Some(Code::Unauthenticated));
    }
    assert_eq!(endpoint.hits.load(Ordering::SeqCst), 1, "one fetch per refresh interval, however many kids");
    assert!(v.verify(&token("k1", &claims(AUD, exp, "ana@example.com", true))).await.is_ok());
}

#[tokio::test]
async fn keys_are_refetched_when_max_age_runs_out() {
    let (endpoint, url) = endpoint(&["k1"], "max-age=0").await;
    let v = verifier(KeySet::new(&url).expect("url").with_min_refresh(Duration::ZERO));
    let t = token("k1", &claims(AUD, now() + 600, "ana@example.com", true));
    assert!(v.verify(&t).await.is_ok());
    assert!(v.verify(&t).await.is_ok());
    assert_eq!(endpoint.hits.load(Ordering::SeqCst), 2, "an expired cache is refreshed");
}

#[tokio::test]
async fn an_unreachable_key_endpoint_is_a_retryable_dependency_failure() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/certs", listener.local_addr().expect("addr"));
    drop(listener);
    let v = verifier(KeySet::new(&url).expect("url"));
    let t = token("k1", &claims(AUD, now() + 600, "ana@example.com", true));
    let e = v.verify(&t).await.expect_err("refused");
    assert_eq!(e.code, Code::DependencyUnavailable);
    assert_eq!(code(&v, &t).await, Some(Code::DependencyUnavailable), "not retried within the interval");
    assert_eq!(v.keys().fetches(), 1);
}

#[tokio::test]
async fn a_key_set_past_its_size_limit_is_refused_like_an_unreachable_one() {
    let kids: Vec<String> = (0..400).map(|i| format!("k{i}")).collect();
    let (endpoint, url) = endpoint(&kids.iter().map(String::as_str).collect::<Vec<_>>(), "max-age=3600").await;
    let served = json!({ "keys": endpoint.keys.lock().expect("keys").clone() }).to_string().len();
    assert!(served > MAX_KEY_SET_BYTES, "the served set ({served} bytes) is past the limit");
    let v = verifier(KeySet::new(&url).expect("url"));
    let e = v.verify(&token("k1", &claims(AUD, now() + 600, "ana@example.com", true))).await.expect_err("refused");
    assert_eq!(e.code, Code::DependencyUnavailable);
    // Within the limit, the same keys verify.
    *endpoint.keys.lock().expect("keys") = vec![jwk("k1")];
    let v = verifier(KeySet::new(&url).expect("url"));
    assert_eq!(v.verify(&token("k1", &claims(AUD, now() + 600, "ana@example.com", true))).await.ok(), Some(ana()));
}

#[test]
fn a_key_set_keeps_only_rsa_keys_with_an_id_and_anything_else_is_not_a_key_set() {
    let mut no_id = jwk("x");
    no_id["kid"] = Value::Null;
    let oct = json!({"kty": "oct", "kid": "h1", "k": "c2VjcmV0"});
    let body = json!({"keys": [jwk("k1"), no_id, oct, jwk("k2")]}).to_string();
    let keys = decode_key_set(body.as_bytes()).expect("a key set");
    let mut ids: Vec<&str> = keys.keys().map(String::as_str).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["k1", "k2"]);
    for bad in [b"".as_slice(), b"{}", b"{\"keys\": 3}", b"\xff", b"[]"] {
        assert!(decode_key_set(bad).is_none(), "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn cache_control_max_age_is_read_capped_and_refused_caching_honoured() {
    assert_eq!(max_age(Some("public, max-age=21600, must-revalidate")), Some(Duration::from_secs(21600)));
    assert_eq!(max_age(Some("max-age=99999999")), Some(MAX_AGE_CAP));
    assert_eq!(max_age(Some("no-store, max-age=60")), None);
    assert_eq!(max_age(Some("public")), None);
    assert_eq!(max_age(None), None);
    assert!(KeySet::new("file:///etc/keys.json").is_err());
}

#[tokio::test]
async fn credentials_route_jwts_to_google_and_operator_credentials_to_the_store() {
    let (_, url) = endpoint(&["k1"], "max-age=3600").await;
    let dir = harmonia_testkit::temp_dir();
    let store: Arc<dyn harmonia_store::Store> =
        Arc::new(harmonia_store_sqlite::SqliteStore::open(dir.path().join("auth.db")).expect("store"));
    let ws = "ws".parse().expect("ws");
    let admin = "ana".parse().expect("op");
    let issued =
        crate::operators::add(&*store, &ws, &admin, Role::Admin, &"cli".parse().expect("op")).await.expect("add");
    let credentials = crate::Credentials::new(store).with_google(verifier(KeySet::new(&url).expect("url")));
    let id_token = token("k1", &claims(AUD, now() + 600, "ana@example.com", true));
    assert_eq!(
        credentials.authenticate(Some(&format!("Bearer {id_token}"))).await.ok(),
        Some(ana()),
        "an ID-token caller is an operator, whatever records its name has"
    );
    let by_credential = credentials.authenticate(Some(&format!("Bearer {}", issued.credential))).await.ok();
    assert_eq!(by_credential.map(|who| who.role), Some(Role::Admin));
    let expired = token("k1", &claims(AUD, now() - 600, "ana@example.com", true));
    let refused = credentials.authenticate(Some(&format!("Bearer {expired}"))).await.err().map(|e| e.code);
    assert_eq!(refused, Some(Code::TokenExpired));
}

#[test]
fn the_key_id_is_read_before_any_signature_check_and_only_from_an_rs256_header() {
    let claims = claims(AUD, now() + 600, "ana@example.com", true);
    assert_eq!(GoogleIdTokens::key_id(&token("k1", &claims)).ok().as_deref(), Some("k1"));
    let unsigned = |header: &str| {
        let header = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(header);
        format!("{header}.e30.c2ln")
    };
    assert_eq!(GoogleIdTokens::key_id(&unsigned(r#"{"alg":"RS256","kid":"k2"}"#)).ok().as_deref(), Some("k2"));
    for refused in [
        unsigned(r#"{"alg":"HS256","kid":"k1"}"#),
        unsigned(r#"{"alg":"RS256"}"#),
        unsigned("not json"),
        "a.b.c".to_owned(),
        String::new(),
    ] {
        assert_eq!(GoogleIdTokens::key_id(&refused).err().map(|e| e.code), Some(Code::Unauthenticated), "{refused}");
    }
}
