//! The `dispatch` function: Cloud Scheduler calls `POST /dispatch` every minute with an OIDC
//! token of its own service account (Cloud Run IAM lets only that account invoke it), and each
//! call is one tick of the dispatcher, [`harmonia_pipeline::gates::schedule::tick`]: every scheduled
//! post that is due is handed to publishing by one `draft.approved` event. Ticks that overlap
//! (a slow one, a retried one, two instances) are safe: each decision is a transaction on the
//! post's own schedule, and publishing claims before it calls the connector. The same call takes
//! the engagement snapshots that are due ([`harmonia_pipeline::engagement::tick`]) and runs
//! the job watch, which re-drives jobs that stopped moving
//! ([`harmonia_pipeline::step::watch`]).

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::routing::{get, post};
use harmonia_host::Function;
use harmonia_http::ApiError;
use harmonia_pipeline::Env;
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> std::process::ExitCode {
    harmonia_host::run(Function::Dispatch, Vec::new(), |env, _config| Ok(app(env))).await
}

/// `GET /healthz` and `POST /dispatch`; anything else is a JSON 404 or 405.
fn app(env: Arc<Env>) -> Router {
    harmonia_http::json_fallbacks(
        Router::new().route("/healthz", get(|| async { "ok" })).route("/dispatch", post(dispatch)).with_state(env),
    )
}

/// One tick: what it released, published again, repaired, and could not handle (those are
/// retried by the next tick, a minute later); the engagement snapshots it took and could not
/// take (retried likewise), and the remembered facts that changed; then, at most once a step
/// lease, the job watch
/// ([`harmonia_pipeline::step::watch::check`]): the jobs it found stuck and re-drove.
async fn dispatch(State(env): State<Arc<Env>>) -> Result<Json<Value>, ApiError> {
    let done = harmonia_pipeline::gates::schedule::tick(&env).await?;
    let measured = harmonia_pipeline::engagement::tick(&env).await?;
    let watched = harmonia_pipeline::step::watch::check(&env).await?;
    Ok(Json(json!({
        "released": done.released.len(),
        "redispatched": done.redispatched.len(),
        "repaired": done.repaired,
        "failed": done.failed,
        "snapshots_taken": measured.taken.len(),
        "snapshots_failed": measured.failed,
        "facts_changed": measured.facts_changed,
        "trends_read": measured.trends.signals,
        "watched": watched.ran,
        "stuck": watched.stuck,
        "redriven": watched.redriven,
    })))
}
