//! The operator API: the only way human decisions enter Harmonia.
//!
//! Every request carries `Authorization: Bearer <credential>`; the credential names the
//! operator and the workspace, and every read and decision is scoped to that workspace (a job
//! of another workspace is simply `not_found`). Routes:
//!
//! | method and path | what |
//! | --- | --- |
//! | `GET /healthz` | liveness (no credential) |
//! | `GET /v1/jobs` | the workspace's jobs, newest first |
//! | `GET /v1/jobs/{job}` | one job and the version awaiting a decision, if any |
//! | `GET /v1/jobs/{job}/view` | the job view: Maya's A2UI layout over typed references, hydrated from storage |
//! | `GET /v1/activity?job=ID&limit=N&page=P` | the job's activity records (metadata only), paginated |
//! | `POST /v1/jobs/{job}/decisions` | `{"subject":"strategy"|"draft","decision":"approve"|"reject","version":HASH,"reason"?}` |
//! | `POST /v1/sources` | `{"format":"json"|"webvtt"|"srt","content":TEXT,"title"?,"language"?}` → the new job; with an `Idempotency-Key` header a retry returns the same job |
//!
//! Bodies are at most [`MAX_BODY_BYTES`]; errors are `{"error":{code,category,message,retryable}}`
//! with the status [`status_of`] gives the code's category.

mod routes;
mod view;

use std::sync::Arc;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use harmonia_contracts::{Code, Error};
use harmonia_pipeline::Env;

pub use harmonia_auth::{Credentials, Identity};
pub use routes::{app, ingest_app};

/// Largest request body: a 4 MiB source, JSON-escaped, with its envelope.
pub const MAX_BODY_BYTES: usize = 9 * 1024 * 1024;

/// What the routes share.
#[derive(Clone)]
pub struct OperatorState {
    /// The backends.
    pub env: Arc<Env>,
    /// Who may call.
    pub credentials: Arc<Credentials>,
}

/// The HTTP status of an error code (see [`Code::http_status`]).
pub fn status_of(code: Code) -> StatusCode {
    StatusCode::from_u16(code.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// An error as an HTTP response: the safe body only.
pub struct ApiError(pub Error);

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        Self(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = status_of(self.0.code);
        (status, Json(serde_json::json!({ "error": self.0.body() }))).into_response()
    }
}

#[cfg(test)]
mod tests;
