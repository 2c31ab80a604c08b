//! The schedule through the API: what is waiting for its time, and the operator's changes to
//! one post (the same functions as `harmonia schedule`, `reschedule`, `publish-now` and
//! `cancel`, so the rules are the same).

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use harmonia_contracts::domain::{ScheduleAction, Timestamp};
use harmonia_contracts::ids::JobId;
use harmonia_http::{ApiError, Caller, JsonBody, PathId};
use harmonia_pipeline::schedule::{self, Acted};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::OperatorState;

type Reply = Result<(StatusCode, Json<Value>), ApiError>;

/// The schedule's routes.
pub(crate) fn routes() -> Router<OperatorState> {
    Router::new()
        .route("/v1/schedule", get(list))
        .route("/v1/jobs/{job}/reschedule", post(reschedule))
        .route("/v1/jobs/{job}/publish-now", post(publish_now))
        .route("/v1/jobs/{job}/cancel", post(cancel))
}

async fn list(State(state): State<OperatorState>, Caller(who): Caller) -> Reply {
    let upcoming = schedule::upcoming(&state.env, &who.workspace).await?;
    Ok((StatusCode::OK, Json(json!({ "schedule": upcoming }))))
}

/// The body of `POST /v1/jobs/{job}/reschedule`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RescheduleBody {
    /// The new time (RFC 3339).
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    at: Timestamp,
}

async fn reschedule(
    State(state): State<OperatorState>,
    Caller(who): Caller,
    PathId(id): PathId<JobId>,
    JsonBody(body): JsonBody<RescheduleBody>,
) -> Reply {
    act(&state, &who, &id, ScheduleAction::Reschedule { at: body.at }).await
}

async fn publish_now(State(state): State<OperatorState>, Caller(who): Caller, PathId(id): PathId<JobId>) -> Reply {
    act(&state, &who, &id, ScheduleAction::PublishNow).await
}

async fn cancel(State(state): State<OperatorState>, Caller(who): Caller, PathId(id): PathId<JobId>) -> Reply {
    act(&state, &who, &id, ScheduleAction::Cancel).await
}

async fn act(state: &OperatorState, who: &harmonia_auth::Identity, id: &JobId, action: ScheduleAction) -> Reply {
    let acted = schedule::act(&state.env, &who.workspace, id, who.operator.clone(), action).await?;
    let (Acted::Rescheduled(s) | Acted::Released(s) | Acted::Cancelled(s)) = acted;
    let job = harmonia_pipeline::operator::job(&state.env, &who.workspace, id).await?;
    Ok((StatusCode::OK, Json(json!({ "schedule": s, "job": job }))))
}
