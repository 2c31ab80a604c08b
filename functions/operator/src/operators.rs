//! `/v1/operators`: the workspace's operator credentials, for its admins only (any other
//! caller is 403 `forbidden`). Everything is scoped to the admin's own workspace: another
//! workspace's operators are neither listed nor found.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use harmonia_auth::operators;
use harmonia_client::api::{NewCredential, NewOperator, OperatorList, Revoked};
use harmonia_contracts::ids::OperatorId;
use harmonia_http::{Admin, ApiError, JsonBody, PathId};

use crate::OperatorState;
use crate::routes::Answer;

/// `POST /v1/operators {"name","role"?}` → 201 with the credential, shown this once.
pub(crate) async fn add(
    State(state): State<OperatorState>,
    Admin(who): Admin,
    JsonBody(body): JsonBody<NewOperator>,
) -> Result<(StatusCode, Json<NewCredential>), ApiError> {
    let issued = operators::add(&*state.env.store, &who.workspace, &body.name, body.role, &who.operator).await?;
    Ok((StatusCode::CREATED, Json(issued)))
}

/// `GET /v1/operators` → every operator of the workspace, by name, without digests.
pub(crate) async fn list(State(state): State<OperatorState>, Admin(who): Admin) -> Answer<OperatorList> {
    Ok(Json(OperatorList { operators: operators::list(&*state.env.store, &who.workspace).await? }))
}

/// `DELETE /v1/operators/{name}` → the revoked operator; its credential stops working on the
/// next request to any function.
pub(crate) async fn revoke(
    State(state): State<OperatorState>,
    Admin(who): Admin,
    PathId(name): PathId<OperatorId>,
) -> Answer<Revoked> {
    let operator = operators::revoke(&*state.env.store, &who.workspace, &name, &who.operator).await?;
    Ok(Json(Revoked { operator }))
}
