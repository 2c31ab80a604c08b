//! `/v1/operators`: the workspace's operator credentials, for its admins only (any other
//! caller is 403 `forbidden`). Everything is scoped to the admin's own workspace: another
//! workspace's operators are neither listed nor found.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use harmonia_auth::{Role, operators};
use harmonia_contracts::ids::OperatorId;
use harmonia_http::{Admin, ApiError, JsonBody, PathId};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::OperatorState;

type Reply = Result<(StatusCode, Json<Value>), ApiError>;

/// The body of `POST /v1/operators`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewOperator {
    name: OperatorId,
    /// `operator` unless given, as with `harmonia operator add` without `--admin`.
    #[serde(default = "default_role")]
    role: Role,
}

fn default_role() -> Role {
    Role::Operator
}

/// `POST /v1/operators {"name","role"?}` → 201 with the credential, shown this once.
pub(crate) async fn add(
    State(state): State<OperatorState>,
    Admin(who): Admin,
    JsonBody(body): JsonBody<NewOperator>,
) -> Reply {
    let issued = operators::add(&*state.env.store, &who.workspace, &body.name, body.role, &who.operator).await?;
    Ok((StatusCode::CREATED, Json(json!(issued))))
}

/// `GET /v1/operators` → every operator of the workspace, by name, without digests.
pub(crate) async fn list(State(state): State<OperatorState>, Admin(who): Admin) -> Reply {
    let listed = operators::list(&*state.env.store, &who.workspace).await?;
    Ok((StatusCode::OK, Json(json!({ "operators": listed }))))
}

/// `DELETE /v1/operators/{name}` → the revoked operator; its credential stops working on the
/// next request to any function.
pub(crate) async fn revoke(
    State(state): State<OperatorState>,
    Admin(who): Admin,
    PathId(name): PathId<OperatorId>,
) -> Reply {
    let revoked = operators::revoke(&*state.env.store, &who.workspace, &name, &who.operator).await?;
    Ok((StatusCode::OK, Json(json!({ "operator": revoked }))))
}
