//! What came back from the platforms, read-only:
//!
//! | method and path | answer |
//! | --- | --- |
//! | `GET /v1/jobs/{job}/metrics` | the engagement snapshots of the job's post, earliest first (`harmonia metrics JOB`) |
//! | `GET /v1/workspace/memory` | the workspace's remembered facts, newest first, with their evidence and whether each is offered to specialists now (`harmonia memory`) |

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use harmonia_client::api::{JobMetrics, MemoryList};
use harmonia_contracts::ids::JobId;
use harmonia_http::{Caller, PathId};
use harmonia_pipeline::engagement::{self, of_job as engagement_of};

use crate::OperatorState;
use crate::routes::Answer;

/// The engagement routes (merged into the operator API's router).
pub(crate) fn routes() -> Router<OperatorState> {
    Router::new().route("/v1/jobs/{job}/metrics", get(metrics)).route("/v1/workspace/memory", get(memory))
}

/// `GET /v1/jobs/{job}/metrics`: another workspace's job, or none, is `not_found`.
async fn metrics(
    State(state): State<OperatorState>,
    Caller(who): Caller,
    PathId(job): PathId<JobId>,
) -> Answer<JobMetrics> {
    Ok(Json(engagement_of(&state.env, &who.workspace, &job).await?))
}

/// `GET /v1/workspace/memory`.
async fn memory(State(state): State<OperatorState>, Caller(who): Caller) -> Answer<MemoryList> {
    let facts = engagement::memory::list(&state.env, &who.workspace, state.env.clock.now()).await?;
    Ok(Json(MemoryList { facts }))
}
