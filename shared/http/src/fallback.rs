//! JSON answers for requests no route takes.

use axum::Router;
use harmonia_contracts::Code;

use crate::ApiError;

async fn unknown_route() -> ApiError {
    ApiError::from(Code::UnknownRoute)
}

async fn method_not_allowed() -> ApiError {
    ApiError::from(Code::MethodNotAllowed)
}

/// `router` with `unknown_route` (404) for paths it does not serve and `method_not_allowed`
/// (405) for methods a served path does not accept, both in the shared error shape. Call it
/// after every route is added: the 405 answer attaches to the routes present at the call.
/// Every answer of the router, these included, carries `X-Content-Type-Options: nosniff` and
/// (unless its route set one) `Cache-Control: no-store`.
pub fn json_fallbacks<S>(router: Router<S>) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    router
        .fallback(unknown_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::map_response(defended))
}

/// Every answer: never sniffed as another content type, and never cached (answers name the
/// caller's jobs and workspace) unless its route says how (the console's assets).
async fn defended(mut response: axum::response::Response) -> axum::response::Response {
    use axum::http::header::{CACHE_CONTROL, HeaderValue, X_CONTENT_TYPE_OPTIONS};
    let headers = response.headers_mut();
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.entry(CACHE_CONTROL).or_insert(HeaderValue::from_static("no-store"));
    response
}
