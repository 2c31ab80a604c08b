//! The operator console: a browser UI over the operator API, served by the operator function
//! and `harmonia serve` beside the API it calls.
//!
//! - [`routes`] serves the page at `/` and its assets at `/assets/{file}`, every byte embedded
//!   in the binary at build time (nothing is installed or fetched at run time), each response
//!   under a strict Content Security Policy ([`CSP`]: its own origin only, no inline script);
//!   and the session endpoints at `/v1/console/session`.
//! - Signing in (`POST`, with an operator credential, or a Google ID token on Cloud Run) opens
//!   a server-side session ([`harmonia_auth::sessions`]) held in an HttpOnly, SameSite=Strict
//!   cookie, `Secure` when the request came over TLS. The answer carries the session's CSRF
//!   token, which the page keeps in memory only and sends as `X-CSRF-Token` with every
//!   state-changing request ([`harmonia_http::Caller`] checks it). `GET` tells a reloaded page
//!   who is signed in; `DELETE` signs out, ending the session in the store.
//! - The page's own code is `web/` (plain modules, no framework); the A2UI renderer is the
//!   official one, bundled by `infra/console/build.sh` into `infra/console/dist/a2ui.js`.

use std::sync::Arc;

use axum::Router;
use axum::extract::{FromRef, Path, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, SET_COOKIE};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, request::Parts};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use harmonia_auth::Credentials;
use harmonia_auth::sessions::LIFETIME;
use harmonia_contracts::{Code, Error};
use harmonia_http::caller::{SESSION_COOKIE, console_session};
use harmonia_http::{ApiError, JsonBody};
use serde::Deserialize;
use serde_json::json;

/// The Content Security Policy of every console response: scripts, styles, images and API
/// calls from the console's own origin only; no inline script, no plugins, no framing.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; \
    connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; \
    frame-ancestors 'none'";

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

const INDEX: &[u8] = include_bytes!("../web/index.html");

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// A file of the page's own `web/` folder, served as `content_type`.
macro_rules! web {
    ($name:literal, $content_type:expr) => {
        Asset { name: $name, content_type: $content_type, bytes: include_bytes!(concat!("../web/", $name)) }
    };
}

/// The files under `/assets/`.
const ASSETS: &[Asset] = &[
    web!("console.js", JS),
    web!("common.js", JS),
    web!("calendar.js", JS),
    web!("activity.js", JS),
    web!("nova.js", JS),
    web!("settings.js", JS),
    web!("upload.js", JS),
    web!("entities.js", JS),
    web!("console.css", CSS),
    web!("entities.css", CSS),
    web!("icon.svg", "image/svg+xml"),
    Asset { name: "a2ui.js", content_type: JS, bytes: include_bytes!("../../../infra/console/dist/a2ui.js") },
];

/// The console's routes, for any state that can give the [`Credentials`].
pub fn routes<S>() -> Router<S>
where
    Arc<Credentials>: FromRef<S>,
    S: Clone + Send + Sync + 'static,
{
    Router::new()
        .route("/", get(index))
        .route("/assets/{file}", get(asset))
        .route("/v1/console/session", get(current).post(sign_in).delete(sign_out))
        .layer(axum::middleware::map_response(secured))
}

/// Every console response: the policy, no sniffing, no referrer, and no caching of anything
/// that may name who is signed in.
async fn secured(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(HeaderName::from_static("content-security-policy"), HeaderValue::from_static(CSP));
    headers.insert(HeaderName::from_static("x-content-type-options"), HeaderValue::from_static("nosniff"));
    headers.insert(HeaderName::from_static("referrer-policy"), HeaderValue::from_static("no-referrer"));
    headers.insert(HeaderName::from_static("cross-origin-opener-policy"), HeaderValue::from_static("same-origin"));
    headers.entry(CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    response
}

async fn index() -> Response {
    ([(CONTENT_TYPE, "text/html; charset=utf-8")], INDEX).into_response()
}

async fn asset(Path(file): Path<String>) -> Result<Response, ApiError> {
    let asset = ASSETS
        .iter()
        .find(|a| a.name == file)
        .ok_or_else(|| Error::new(Code::UnknownRoute, "No console asset has this name."))?;
    // Revalidated on every load, so a new binary's assets are never mixed with an old page.
    Ok(([(CONTENT_TYPE, asset.content_type), (CACHE_CONTROL, "no-cache")], asset.bytes).into_response())
}

/// How an operator signs in: `{"credential": "hop_…"}`, or `{"id_token": "…"}` (a Google ID
/// token, when the deployment accepts them).
#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum SignIn {
    Credential(String),
    IdToken(String),
}

/// The session cookie for `token`, `Secure` when the request came over TLS (Cloud Run's front
/// end says so in `X-Forwarded-Proto`).
fn session_cookie(headers: &HeaderMap, value: &str, max_age: i64) -> Result<HeaderValue, Error> {
    let tls = headers.get("x-forwarded-proto").is_some_and(|p| p.as_bytes().eq_ignore_ascii_case(b"https"));
    let secure = if tls { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{SESSION_COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
    ))
    .map_err(|_| Error::from_code(Code::Internal))
}

async fn sign_in(
    State(credentials): State<Arc<Credentials>>,
    headers: HeaderMap,
    JsonBody(how): JsonBody<SignIn>,
) -> Result<Response, ApiError> {
    let bearer = match how {
        SignIn::Credential(token) | SignIn::IdToken(token) => format!("Bearer {}", token.trim()),
    };
    let (who, opened) = credentials.sign_in(Some(&bearer)).await?;
    let cookie = session_cookie(&headers, &opened.token, LIFETIME.num_seconds())?;
    let body = json!({
        "operator": who.operator, "workspace": who.workspace, "role": who.role.as_str(),
        "csrf": opened.csrf, "expires_at": harmonia_contracts::time::format(&opened.expires_at),
    });
    Ok((StatusCode::CREATED, [(SET_COOKIE, cookie)], axum::Json(body)).into_response())
}

/// The session the request's cookie holds, its CSRF token checked as for every API call;
/// `unauthenticated` without one.
async fn session_of<'a>(
    credentials: &Credentials,
    parts: &'a Parts,
) -> Result<(&'a str, harmonia_auth::sessions::Session), Error> {
    console_session(credentials, parts).await?.ok_or_else(|| Error::new(Code::Unauthenticated, "Nobody is signed in."))
}

async fn current(State(credentials): State<Arc<Credentials>>, parts: Parts) -> Result<Response, ApiError> {
    let (_, session) = session_of(&credentials, &parts).await?;
    let who = &session.identity;
    let body =
        json!({"operator": who.operator, "workspace": who.workspace, "role": who.role.as_str(), "csrf": session.csrf});
    Ok((StatusCode::OK, axum::Json(body)).into_response())
}

async fn sign_out(State(credentials): State<Arc<Credentials>>, parts: Parts) -> Result<Response, ApiError> {
    let (token, _) = session_of(&credentials, &parts).await?;
    credentials.sign_out(token).await?;
    let cleared = session_cookie(&parts.headers, "", 0)?;
    Ok((StatusCode::OK, [(SET_COOKIE, cleared)], axum::Json(json!({"signed_out": true}))).into_response())
}

#[cfg(test)]
mod tests;
