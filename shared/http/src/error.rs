//! One error type for every HTTP response: the safe body only, with the status its code
//! maps to.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use harmonia_contracts::{Code, Error};

/// The HTTP status of an error code (see [`Code::http_status`]).
pub fn status_of(code: Code) -> StatusCode {
    // Every status `http_status` returns is a valid one; a 500 here would mean the table grew
    // a status outside 100-999, which its own tests rule out.
    StatusCode::from_u16(code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// An error on its way out as an HTTP response: `{"error":{code,category,message,retryable}}`
/// with [`status_of`] its code. Internals never reach the body: the message is Harmonia's own
/// safe text.
#[derive(Debug)]
pub struct ApiError(pub Error);

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        Self(e)
    }
}

impl From<Code> for ApiError {
    fn from(code: Code) -> Self {
        Self(Error::from_code(code))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = status_of(self.0.code);
        // What went wrong on this side is logged with its cause, in the request's span (so with
        // its trace); the body carries only the code and Harmonia's own sentence.
        if status.is_server_error() {
            tracing::warn!(code = %self.0.code, cause = %self.0.cause_chain(), "the request failed");
        }
        (status, Json(serde_json::json!({ "error": self.0.body() }))).into_response()
    }
}
