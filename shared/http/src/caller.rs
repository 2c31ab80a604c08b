//! The authenticated caller, as an extractor.

use std::sync::Arc;

use axum::extract::{FromRef, FromRequestParts};
use axum::http::Method;
use axum::http::header::{AUTHORIZATION, HOST, ORIGIN};
use axum::http::request::Parts;
use harmonia_auth::{Credentials, Identity, Role};
use harmonia_contracts::{Code, Error};

use crate::ApiError;

/// The cookie that holds a console session's token.
pub const SESSION_COOKIE: &str = "harmonia_session";

/// The header a console session's state-changing request carries its CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The identity behind the request: its `Authorization: Bearer <credential>` header (an
/// operator credential checked against its record in the store, or a Google ID token), or,
/// without that header, the console session in its [`SESSION_COOKIE`]. A session's request
/// that can change state (any method but GET, HEAD and OPTIONS) must carry the session's CSRF
/// token in [`CSRF_HEADER`], or it is refused 403 `csrf_rejected`. Any state that can give the
/// [`Credentials`] (`Arc<Credentials>: FromRef<S>`) can use it; a refusal answers 401 (or 403
/// for a valid token of an unmapped principal) in the shared error shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller(pub Identity);

/// The value of the cookie `name` in the request's `Cookie` headers, if any.
pub fn cookie<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    parts
        .headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
}

/// The console session the request's [`SESSION_COOKIE`] holds, with its token; `None` without
/// the cookie. A request that can change state (any method but GET, HEAD and OPTIONS) must
/// carry the session's CSRF token in [`CSRF_HEADER`] and come from the console's own page (an
/// `Origin` naming the host the request was sent to), or it is refused with `csrf_rejected`.
pub async fn console_session<'a>(
    credentials: &Credentials,
    parts: &'a Parts,
) -> Result<Option<(&'a str, harmonia_auth::sessions::Session)>, Error> {
    let Some(token) = cookie(parts, SESSION_COOKIE) else { return Ok(None) };
    let session = credentials.session(token).await?;
    let safe = matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS);
    let csrf = parts.headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
    if !safe && !csrf.is_some_and(|given| session.csrf_matches(given)) {
        return Err(Error::from_code(Code::CsrfRejected));
    }
    if !safe && !same_origin(parts) {
        return Err(Error::new(
            Code::CsrfRejected,
            "The request does not come from the console's own page: its Origin is missing or another site's.",
        ));
    }
    Ok(Some((token, session)))
}

/// Whether the request's `Origin` names the host it was sent to: its `Host`, or, when the
/// operator API forwards a console request to another function, the [`FORWARDED_HOST`] it
/// names. A browser sets `Origin` on every state-changing request, and a page cannot forge it.
fn same_origin(parts: &Parts) -> bool {
    let text = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
    let authority = text(ORIGIN.as_str()).and_then(|o| o.split_once("://")).map(|(_, authority)| authority);
    let host = text(FORWARDED_HOST).or_else(|| text(HOST.as_str()));
    matches!((authority, host), (Some(a), Some(h)) if a.eq_ignore_ascii_case(h))
}

/// The header in which the operator API names the host a console request it forwards was sent
/// to, so that the function it forwards to checks the request's `Origin` against that host.
pub const FORWARDED_HOST: &str = "x-forwarded-host";

impl<S> FromRequestParts<S> for Caller
where
    Arc<Credentials>: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let credentials = Arc::<Credentials>::from_ref(state);
        let header = match parts.headers.get(AUTHORIZATION) {
            None => None,
            Some(value) => Some(value.to_str().map_err(|e| {
                Error::new(Code::Unauthenticated, "the Authorization header is not text").with_cause(e)
            })?),
        };
        if header.is_none()
            && let Some((_, session)) = console_session(&credentials, parts).await?
        {
            return Ok(Self(session.identity));
        }
        Ok(Self(credentials.authenticate(header).await?))
    }
}

/// An admin of the caller's workspace: a [`Caller`] whose role is [`Role::Admin`]. An operator
/// is answered 403 `forbidden`; an unauthenticated request 401, as for [`Caller`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admin(pub Identity);

impl<S> FromRequestParts<S> for Admin
where
    Arc<Credentials>: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Caller(who) = Caller::from_request_parts(parts, state).await?;
        match who.role {
            Role::Admin => Ok(Self(who)),
            Role::Operator => Err(Error::from_code(Code::Forbidden).into()),
        }
    }
}
