//! The import routes: a file as the request body, stored all-or-nothing in the caller's
//! workspace (`harmonia_pipeline::imports`).
//!
//! | method and path | body |
//! | --- | --- |
//! | `POST /v1/imports/metrics` | `text/csv`: measured post metrics |
//! | `POST /v1/imports/signals` | `text/csv` or `application/json`: trend signals |
//! | `POST /v1/imports/calendar` | `text/csv`: scheduled posts and blackout dates |
//! | `GET /v1/calendar?from=&to=` | the approved posts going out in the range (dates or RFC 3339 times; by default a week back and five weeks ahead, at most 92 days), in UTC and the workspace's time zone, with its posting windows and imported entries |
//!
//! An import answers `{"import","workspace","stored","message"}`; a bad file is one typed
//! error (`import_*`) naming the line and column, and nothing is stored.

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, header};
use axum::routing::{get, post};
use axum::{Json, Router};
use harmonia_client::api::{CalendarList, ImportRoute, Imported};
use harmonia_contracts::{Code, Error};
use harmonia_http::Caller;
use harmonia_pipeline::gates::calendar;
use harmonia_pipeline::imports::{self, Format, MAX_IMPORT_BYTES};

use crate::OperatorState;
use crate::routes::Answer;

/// The import and calendar routes (merged into the operator API's router).
pub(crate) fn routes() -> Router<OperatorState> {
    let import = |route: ImportRoute| {
        move |state: State<OperatorState>, caller: Caller, headers: HeaderMap, body: Body| {
            import(state, caller, headers, body, route)
        }
    };
    Router::new()
        .route(ImportRoute::Metrics.path(), post(import(ImportRoute::Metrics)))
        .route(ImportRoute::Signals.path(), post(import(ImportRoute::Signals)))
        .route(ImportRoute::Calendar.path(), post(import(ImportRoute::Calendar)))
        .route("/v1/calendar", get(calendar))
}

/// One import file as `route` takes it: signals as CSV or JSON, the others as CSV.
async fn import(
    State(state): State<OperatorState>,
    Caller(who): Caller,
    headers: HeaderMap,
    body: Body,
    route: ImportRoute,
) -> Answer<Imported> {
    let (store, ws) = (&*state.env.store, &who.workspace);
    let summary = match route {
        ImportRoute::Metrics => {
            imports::metrics::import(store, ws, &file(&headers, body, &[Format::Csv]).await?.1).await?
        }
        ImportRoute::Signals => {
            let (format, bytes) = file(&headers, body, &[Format::Csv, Format::Json]).await?;
            imports::signals::import(store, ws, &bytes, format).await?
        }
        ImportRoute::Calendar => {
            imports::calendar::import(store, ws, &file(&headers, body, &[Format::Csv]).await?.1).await?
        }
    };
    Ok(Json(summary.into()))
}

/// `GET /v1/calendar?from=&to=`: each a date (midnight in the workspace's time zone) or an RFC
/// 3339 time; by default a week back and five weeks ahead.
async fn calendar(
    State(state): State<OperatorState>,
    Caller(who): Caller,
    RawQuery(query): RawQuery,
) -> Answer<CalendarList> {
    let (store, ws) = (&*state.env.store, &who.workspace);
    let config = harmonia_pipeline::workspace::current(store, ws).await?.config;
    let (mut from, mut to) = (None, None);
    for (key, value) in url::form_urlencoded::parse(query.as_deref().unwrap_or_default().as_bytes()) {
        match key.as_ref() {
            "from" => from = Some(calendar::instant(&value, &config)?),
            "to" => to = Some(calendar::instant(&value, &config)?),
            _ => {
                return Err(Error::new(Code::InvalidRequest, "The calendar's query parameters are from and to.").into());
            }
        }
    }
    let (default_from, default_to) = calendar::default_range(state.env.clock.now());
    let from = from.unwrap_or(default_from);
    let to = to.unwrap_or_else(|| from.max(default_from) + (default_to - default_from));
    let posts = calendar::posts(&state.env, ws, &config, from, to).await?;
    Ok(Json(CalendarList {
        time_zone: config.timezone.tz().name().to_owned(),
        from,
        to,
        posts,
        windows: config.posting_windows.clone(),
        entries: imports::calendar::entries(store, ws).await?,
    }))
}

/// The body's format (from `Content-Type`, one of `accepted`) and bytes, at most
/// [`MAX_IMPORT_BYTES`]: a longer body is `import_too_large` without being read further.
async fn file(headers: &HeaderMap, body: Body, accepted: &[Format]) -> Result<(Format, Vec<u8>), Error> {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let format = Format::from_content_type(content_type)?;
    if !accepted.contains(&format) {
        return Err(Error::new(Code::ImportMalformed, "This import takes a text/csv body."));
    }
    let bytes = axum::body::to_bytes(body, MAX_IMPORT_BYTES).await.map_err(|e| {
        Error::new(Code::ImportTooLarge, "An import file may be at most 1 MiB (1048576 bytes).").with_cause(e)
    })?;
    Ok((format, bytes.to_vec()))
}
