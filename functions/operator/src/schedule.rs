//! The schedule through the API: what is waiting for its time, and the operator's changes to
//! one post (the same functions as `harmonia schedule`, `reschedule`, `publish-now` and
//! `cancel`, so the rules are the same).

use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use harmonia_client::api::{RescheduleBody, ScheduleList, ScheduleReply};
use harmonia_contracts::domain::ScheduleAction;
use harmonia_contracts::ids::JobId;
use harmonia_http::{Caller, JsonBody, PathId};
use harmonia_pipeline::gates::schedule::{self, Acted};

use crate::OperatorState;
use crate::routes::Answer;

/// The schedule's routes.
pub(crate) fn routes() -> Router<OperatorState> {
    Router::new()
        .route("/v1/schedule", get(list))
        .route("/v1/jobs/{job}/reschedule", post(reschedule))
        .route("/v1/jobs/{job}/publish-now", post(publish_now))
        .route("/v1/jobs/{job}/cancel", post(cancel))
}

async fn list(State(state): State<OperatorState>, Caller(who): Caller) -> Answer<ScheduleList> {
    Ok(Json(ScheduleList { schedule: schedule::upcoming(&state.env, &who.workspace).await? }))
}

async fn reschedule(
    State(state): State<OperatorState>,
    Caller(who): Caller,
    PathId(id): PathId<JobId>,
    JsonBody(body): JsonBody<RescheduleBody>,
) -> Answer<ScheduleReply> {
    act(&state, &who, &id, ScheduleAction::Reschedule { at: body.at }).await
}

async fn publish_now(
    State(state): State<OperatorState>,
    Caller(who): Caller,
    PathId(id): PathId<JobId>,
) -> Answer<ScheduleReply> {
    act(&state, &who, &id, ScheduleAction::PublishNow).await
}

async fn cancel(
    State(state): State<OperatorState>,
    Caller(who): Caller,
    PathId(id): PathId<JobId>,
) -> Answer<ScheduleReply> {
    act(&state, &who, &id, ScheduleAction::Cancel).await
}

async fn act(
    state: &OperatorState,
    who: &harmonia_auth::Identity,
    id: &JobId,
    action: ScheduleAction,
) -> Answer<ScheduleReply> {
    let acted = schedule::act(&state.env, &who.workspace, id, who.operator.clone(), action).await?;
    let unfinished = crate::routes::unfinished(&acted);
    let (Acted::Rescheduled(schedule) | Acted::Released(schedule) | Acted::Cancelled(schedule)) = acted.value;
    let job = harmonia_pipeline::gates::job(&state.env, &who.workspace, id).await?;
    Ok(Json(ScheduleReply { schedule, job, unfinished }))
}
