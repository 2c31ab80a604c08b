//! `GET /v1/jobs/{job}/detail`: everything stored about one job of the caller's workspace, in
//! the plain structured form `harmonia show --json` prints ([`harmonia_pipeline::detail::JobDetail`]).
//! A job of another workspace is `not_found`, like an unknown one.

use axum::Json;
use axum::extract::State;
use harmonia_contracts::ids::JobId;
use harmonia_http::{ApiError, Caller, PathId};
use harmonia_pipeline::detail::{self, JobDetail};

use crate::OperatorState;

/// The job's detail, scoped to the caller's workspace.
pub(crate) async fn show(
    State(state): State<OperatorState>,
    Caller(who): Caller,
    PathId(id): PathId<JobId>,
) -> Result<Json<JobDetail>, ApiError> {
    Ok(Json(detail::job(&state.env, &who.workspace, &id).await?))
}
