//! The import routes: a file as the request body, stored all-or-nothing in the caller's
//! workspace (`harmonia_pipeline::imports`).
//!
//! | method and path | body |
//! | --- | --- |
//! | `POST /v1/imports/metrics` | `text/csv`: measured post metrics |
//! | `POST /v1/imports/signals` | `text/csv` or `application/json`: trend signals |
//! | `POST /v1/imports/calendar` | `text/csv`: scheduled posts and blackout dates |
//! | `GET /v1/calendar` | the workspace's imported calendar entries |
//!
//! An import answers `{"import","workspace","stored","message"}`; a bad file is one typed
//! error (`import_*`) naming the line and column, and nothing is stored.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::{get, post};
use axum::{Json, Router};
use harmonia_contracts::{Code, Error};
use harmonia_http::{ApiError, Caller};
use harmonia_pipeline::imports::{self, Format, MAX_IMPORT_BYTES, Summary};
use serde_json::{Value, json};

use crate::OperatorState;

type Reply = Result<(StatusCode, Json<Value>), ApiError>;

/// The import and calendar routes (merged into the operator API's router).
pub(crate) fn routes() -> Router<OperatorState> {
    Router::new()
        .route("/v1/imports/metrics", post(metrics))
        .route("/v1/imports/signals", post(signals))
        .route("/v1/imports/calendar", post(calendar))
        .route("/v1/calendar", get(calendar_entries))
}

async fn metrics(State(state): State<OperatorState>, Caller(who): Caller, headers: HeaderMap, body: Body) -> Reply {
    let bytes = file(&headers, body, &[Format::Csv]).await?.1;
    stored(imports::metrics::import(&*state.env.store, &who.workspace, &bytes).await?)
}

async fn signals(State(state): State<OperatorState>, Caller(who): Caller, headers: HeaderMap, body: Body) -> Reply {
    let (format, bytes) = file(&headers, body, &[Format::Csv, Format::Json]).await?;
    stored(imports::signals::import(&*state.env.store, &who.workspace, &bytes, format).await?)
}

async fn calendar(State(state): State<OperatorState>, Caller(who): Caller, headers: HeaderMap, body: Body) -> Reply {
    let bytes = file(&headers, body, &[Format::Csv]).await?.1;
    stored(imports::calendar::import(&*state.env.store, &who.workspace, &bytes).await?)
}

async fn calendar_entries(State(state): State<OperatorState>, Caller(who): Caller) -> Reply {
    let entries = imports::calendar::entries(&*state.env.store, &who.workspace).await?;
    Ok((StatusCode::OK, Json(json!({ "entries": entries }))))
}

/// The body's format (from `Content-Type`, one of `accepted`) and bytes, at most
/// [`MAX_IMPORT_BYTES`]: a longer body is `import_too_large` without being read further.
async fn file(headers: &HeaderMap, body: Body, accepted: &[Format]) -> Result<(Format, Vec<u8>), Error> {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let format = Format::from_content_type(content_type)?;
    if !accepted.contains(&format) {
        return Err(Error::new(Code::ImportMalformed, "This import takes a text/csv body."));
    }
    let bytes = axum::body::to_bytes(body, MAX_IMPORT_BYTES)
        .await
        .map_err(|_| Error::new(Code::ImportTooLarge, "An import file may be at most 1 MiB (1048576 bytes)."))?;
    Ok((format, bytes.to_vec()))
}

fn stored(summary: Summary) -> Reply {
    Ok((
        StatusCode::OK,
        Json(json!({
            "import": summary.kind, "workspace": summary.workspace, "stored": summary.stored,
            "message": summary.sentence(),
        })),
    ))
}
