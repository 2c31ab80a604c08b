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
pub fn json_fallbacks<S>(router: Router<S>) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    router.fallback(unknown_route).method_not_allowed_fallback(method_not_allowed)
}
