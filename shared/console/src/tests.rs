use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request};
use axum::routing::post;
use harmonia_auth::{Role, operators};
use harmonia_http::Caller;
use harmonia_store::Store;
use harmonia_store_sqlite::SqliteStore;
use harmonia_testkit::{Reply, oneshot};
use serde_json::Value;

use super::*;

struct Fixture {
    router: Router,
    store: Arc<dyn Store>,
    /// Ana's credential, in workspace `brand`.
    ana: String,
    _dir: harmonia_testkit::TempDir,
}

/// The console's routes and one state-changing API route that names its caller.
async fn fixture() -> Fixture {
    let dir = harmonia_testkit::temp_dir();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("console.db")).expect("store"));
    let cli = "cli".parse().expect("op");
    let issued = operators::add(&*store, &"brand".parse().expect("ws"), &"ana".parse().expect("op"), Role::Admin, &cli)
        .await
        .expect("ana");
    let credentials = Arc::new(Credentials::new(store.clone()));
    let probe = post(|Caller(who): Caller| async move {
        axum::Json(json!({"operator": who.operator, "workspace": who.workspace}))
    });
    let router = routes::<Arc<Credentials>>().route("/v1/probe", probe).with_state(credentials);
    Fixture { router, store, ana: issued.credential, _dir: dir }
}

fn request(method: Method, path: &str, headers: &[(&str, &str)], body: Option<Value>) -> Request<Body> {
    let mut builder = Request::builder().method(method).uri(path);
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    match body {
        Some(body) => builder.header("content-type", "application/json").body(Body::from(body.to_string())),
        None => builder.body(Body::empty()),
    }
    .expect("request")
}

fn header<'a>(reply: &'a Reply, name: &str) -> &'a str {
    reply.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default()
}

/// Sign in as `credential`; the reply, and the `Cookie` header value a browser would send.
async fn sign_in(f: &Fixture, credential: &str, extra: &[(&str, &str)]) -> (Reply, String) {
    let reply = oneshot(
        f.router.clone(),
        request(Method::POST, "/v1/console/session", extra, Some(json!({"credential": credential}))),
    )
    .await;
    let cookie = header(&reply, "set-cookie").split(';').next().unwrap_or_default().to_owned();
    (reply, cookie)
}

#[tokio::test]
async fn the_page_and_its_assets_are_served_under_the_strict_policy_with_no_external_reference() {
    let f = fixture().await;
    let page = oneshot(f.router.clone(), request(Method::GET, "/", &[], None)).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(header(&page, "content-type").starts_with("text/html"));
    assert_eq!(header(&page, "content-security-policy"), CSP);
    assert!(CSP.starts_with("default-src 'self'") && !CSP.contains("unsafe"), "{CSP}");
    assert_eq!(header(&page, "x-content-type-options"), "nosniff");
    let html = String::from_utf8(page.body.to_vec()).expect("utf-8");
    assert!(!html.contains("<script>") && !html.contains(" style="), "no inline script or style");
    for asset in ASSETS {
        let reply =
            oneshot(f.router.clone(), request(Method::GET, &format!("/assets/{}", asset.name), &[], None)).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", asset.name);
        assert_eq!(header(&reply, "content-type"), asset.content_type);
        assert_eq!(header(&reply, "content-security-policy"), CSP);
        assert_eq!(reply.body.as_ref(), asset.bytes);
    }
    // The page and the console's own code name no other origin; the renderer's bundle names
    // only A2UI's catalog ids, which are identifiers that nothing fetches. The SVG namespace
    // name the timeline creates its elements in is an identifier too.
    for text in [
        html.as_str(),
        std::str::from_utf8(ASSETS[0].bytes).expect("js"),
        std::str::from_utf8(ASSETS[1].bytes).expect("js"),
    ] {
        let text = text.replace("'http://www.w3.org/2000/svg'", "");
        assert!(!text.contains("http://") && !text.contains("https://"), "an external URL");
    }
    let missing = oneshot(f.router.clone(), request(Method::GET, "/assets/nope.js", &[], None)).await;
    assert_eq!(
        (missing.status, missing.json()["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("unknown_route"))
    );
}

#[tokio::test]
async fn signing_in_opens_an_http_only_strict_session_that_state_changes_use_only_with_its_csrf_token() {
    let f = fixture().await;
    let (wrong, _) = sign_in(&f, &format!("{}x", f.ana), &[]).await;
    assert_eq!(
        (wrong.status, wrong.json()["error"]["code"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("unauthenticated"))
    );
    assert!(wrong.headers.get("set-cookie").is_none());

    let (signed, cookie) = sign_in(&f, &f.ana, &[]).await;
    assert_eq!(signed.status, StatusCode::CREATED);
    let set = header(&signed, "set-cookie");
    assert!(set.starts_with("harmonia_session=hcs_brand/"), "{}", set.len());
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=43200"] {
        assert!(set.contains(attribute), "{attribute}");
    }
    assert!(!set.contains("Secure"), "plain HTTP locally");
    let body = signed.json();
    assert_eq!(
        (body["operator"].as_str(), body["workspace"].as_str(), body["role"].as_str()),
        (Some("ana"), Some("brand"), Some("admin"))
    );
    let csrf = body["csrf"].as_str().expect("csrf").to_owned();
    assert!(!body.to_string().contains(&cookie[cookie.len() - 64..]), "the session token is only in the cookie");

    // A reloaded page learns who is signed in, and the CSRF token again.
    let again =
        oneshot(f.router.clone(), request(Method::GET, "/v1/console/session", &[("cookie", &cookie)], None)).await;
    assert_eq!((again.status, again.json()["csrf"].as_str()), (StatusCode::OK, Some(csrf.as_str())));

    // State changes need the token; the same request with it goes through as Ana.
    let without = oneshot(f.router.clone(), request(Method::POST, "/v1/probe", &[("cookie", &cookie)], None)).await;
    assert_eq!(
        (without.status, without.json()["error"]["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("csrf_rejected"))
    );
    let forged = [("cookie", cookie.as_str()), ("x-csrf-token", "0123")];
    let forged = oneshot(f.router.clone(), request(Method::POST, "/v1/probe", &forged, None)).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    // With the token, the request must still come from the console's own page: an Origin
    // naming the host it was sent to.
    let page = [("host", "console.test:8080"), ("origin", "http://console.test:8080")];
    let no_origin = [("cookie", cookie.as_str()), ("x-csrf-token", csrf.as_str()), page[0]];
    let foreign =
        [("cookie", cookie.as_str()), ("x-csrf-token", csrf.as_str()), page[0], ("origin", "https://evil.test")];
    for headers in [&no_origin[..], &foreign[..]] {
        let refused = oneshot(f.router.clone(), request(Method::POST, "/v1/probe", headers, None)).await;
        assert_eq!(
            (refused.status, refused.json()["error"]["code"].as_str()),
            (StatusCode::FORBIDDEN, Some("csrf_rejected"))
        );
        assert!(refused.json()["error"]["message"].as_str().is_some_and(|m| m.contains("Origin")));
    }
    let with = [("cookie", cookie.as_str()), ("x-csrf-token", csrf.as_str()), page[0], page[1]];
    let with = oneshot(f.router.clone(), request(Method::POST, "/v1/probe", &with, None)).await;
    assert_eq!((with.status, with.json()["operator"].as_str()), (StatusCode::OK, Some("ana")));

    // Signing out needs the token too, ends the session in the store and clears the cookie.
    let refused =
        oneshot(f.router.clone(), request(Method::DELETE, "/v1/console/session", &[("cookie", &cookie)], None)).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let out = [("cookie", cookie.as_str()), ("x-csrf-token", csrf.as_str()), page[0], page[1]];
    let out = oneshot(f.router.clone(), request(Method::DELETE, "/v1/console/session", &out, None)).await;
    assert_eq!(out.status, StatusCode::OK);
    assert!(header(&out, "set-cookie").contains("Max-Age=0"));
    let stored = f
        .store
        .query(&"brand".parse().expect("ws"), harmonia_auth::sessions::SESSIONS, &harmonia_store::Query::all(10))
        .await;
    assert_eq!(stored.expect("query").len(), 0, "the session is gone from the store");
    let after = [("cookie", cookie.as_str()), ("x-csrf-token", csrf.as_str()), page[0], page[1]];
    let after = oneshot(f.router.clone(), request(Method::POST, "/v1/probe", &after, None)).await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED, "a closed session authenticates nothing");
}

#[tokio::test]
async fn the_cookie_is_secure_behind_tls_and_a_sign_in_names_exactly_one_way() {
    let f = fixture().await;
    let (signed, _) = sign_in(&f, &f.ana, &[("x-forwarded-proto", "https")]).await;
    assert!(header(&signed, "set-cookie").ends_with("; Secure"));
    let both = json!({"credential": f.ana, "id_token": "x"});
    let reply = oneshot(f.router.clone(), request(Method::POST, "/v1/console/session", &[], Some(both))).await;
    assert_eq!(
        (reply.status, reply.json()["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_request"))
    );
    let nobody = oneshot(f.router.clone(), request(Method::GET, "/v1/console/session", &[], None)).await;
    assert_eq!(nobody.status, StatusCode::UNAUTHORIZED);
}
