//! `GET /v1/workspace` and `PUT /v1/workspace`: the caller's workspace configuration.
//!
//! `GET` answers the current version and, as `file`, the same configuration as TOML.
//!
//! `PUT` takes the configuration file itself (`Content-Type: application/toml`) or the same keys
//! as JSON (`application/json`). It configures a new workspace (201, version 1) or stores the
//! next version (200); a body equal to the current version stores nothing and answers
//! `"changed": false`. An invalid file is `invalid_workspace_config` naming the field path, and
//! nothing is stored. These are the same library functions the CLI calls
//! (`harmonia_pipeline::workspace`).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode, header};
use harmonia_client::api::{WorkspaceReply, WorkspaceStored};
use harmonia_contracts::domain::WorkspaceConfig;
use harmonia_contracts::{Code, Error};
use harmonia_http::{Admin, ApiError, Caller};
use harmonia_pipeline::workspace::{self, Updated};
use serde_json::Value;

use crate::OperatorState;
use crate::routes::Answer;

/// The current configuration version, and the same configuration as a TOML file (`file`) for
/// an admin to edit and `PUT` back.
pub(crate) async fn show(State(state): State<OperatorState>, Caller(who): Caller) -> Answer<WorkspaceReply> {
    let workspace = workspace::current(&*state.env.store, &who.workspace).await?;
    let file = workspace.config.to_toml()?;
    Ok(Json(WorkspaceReply { workspace, file }))
}

/// Configure the workspace, or store its next version.
pub(crate) async fn put(
    State(state): State<OperatorState>,
    Admin(who): Admin,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<WorkspaceStored>), ApiError> {
    let body = body.map_err(|r| {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            Error::from_code(Code::PayloadTooLarge)
        } else {
            Error::new(Code::InvalidRequest, "the request body could not be read")
        }
    })?;
    let config = parse(&headers, &body)?;
    let store = &*state.env.store;
    let (status, version, changed) = match workspace::update(store, &who.workspace, config.clone(), &who.operator).await
    {
        Ok(Updated::Changed(v)) => (StatusCode::OK, v, true),
        Ok(Updated::Unchanged(v)) => (StatusCode::OK, v, false),
        Err(e) if e.code == Code::WorkspaceNotConfigured => {
            (StatusCode::CREATED, workspace::init(store, &who.workspace, config, &who.operator).await?, true)
        }
        Err(e) => return Err(e.into()),
    };
    Ok((status, Json(WorkspaceStored { workspace: version, changed })))
}

/// The body as a configuration, by its content type.
fn parse(headers: &HeaderMap, body: &[u8]) -> Result<WorkspaceConfig, Error> {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let essence = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    match essence.as_str() {
        "application/toml" => {
            let text = std::str::from_utf8(body).map_err(|_| {
                Error::new(Code::InvalidWorkspaceConfig, "The workspace configuration is not UTF-8 text.")
            })?;
            WorkspaceConfig::from_toml(text)
        }
        "application/json" => {
            let value: Value = serde_json::from_slice(body)
                .map_err(|e| Error::new(Code::InvalidRequest, "the body is not valid JSON").with_cause(e))?;
            WorkspaceConfig::from_value(&value)
        }
        _ => Err(Error::new(
            Code::InvalidRequest,
            "send the configuration file as Content-Type: application/toml, or the same keys as application/json",
        )),
    }
}
