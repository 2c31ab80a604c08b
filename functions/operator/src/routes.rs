use axum::extract::{DefaultBodyLimit, RawQuery, State};
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use harmonia_contracts::domain::{ApprovalSubject, Decision};
use harmonia_contracts::ids::JobId;
use harmonia_contracts::{Code, Error};
use harmonia_http::{ApiError, Caller, JsonBody, PathId, Trace};
use harmonia_pipeline::operator::{self, DecisionRequest};
use harmonia_pipeline::rounds::{self, ChangesRequest, EditRequest};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{MAX_BODY_BYTES, OperatorState, detail, operators, view};

type Reply = Result<(StatusCode, Json<Value>), ApiError>;

/// The operator API router, with the console at `/` (see `harmonia_console`); anything it does
/// not serve is a JSON 404 or 405.
pub fn app(state: OperatorState) -> Router {
    app_with(state, Router::new())
}

/// [`app`] with `extra` routes beside it, under the same JSON 404 and 405: where the console's
/// `POST /v1/ask` is answered (Nova in the same process for `harmonia serve`, or
/// [`crate::nova::routes`] forwarding to the Nova function).
pub fn app_with(state: OperatorState, extra: Router) -> Router {
    let api = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/v1/jobs", get(list))
        .route("/v1/jobs/{job}", get(show))
        .route("/v1/jobs/{job}/view", get(job_view))
        .route("/v1/jobs/{job}/detail", get(detail::show))
        .route("/v1/jobs/{job}/decisions", post(decide))
        .route("/v1/jobs/{job}/edits", post(edit))
        .route("/v1/jobs/{job}/retry", post(retry))
        .route("/v1/activity", get(activity))
        .route("/v1/sources", post(harmonia_ingest::submit))
        .route("/v1/workspace", get(crate::workspace::show).put(crate::workspace::put))
        .route("/v1/operators", get(operators::list).post(operators::add))
        .route("/v1/operators/{name}", delete(operators::revoke))
        .merge(crate::schedule::routes())
        .merge(crate::imports::routes())
        .merge(harmonia_console::routes())
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state);
    // The fallbacks go on last: a wrong method is answered only for routes already there.
    harmonia_http::json_fallbacks(api.merge(extra))
}

/// The workspace's jobs, newest first, and every status a job can have (`statuses`, in the
/// lifecycle's order), so a client filters by the server's names rather than a copy of them.
async fn list(State(state): State<OperatorState>, Caller(who): Caller) -> Reply {
    use strum::IntoEnumIterator;
    let jobs = operator::jobs(&state.env, &who.workspace, 200).await?;
    let statuses: Vec<&'static str> = harmonia_contracts::domain::JobStatus::iter().map(Into::into).collect();
    Ok((StatusCode::OK, Json(json!({ "jobs": jobs, "statuses": statuses }))))
}

async fn show(State(state): State<OperatorState>, Caller(who): Caller, PathId(id): PathId<JobId>) -> Reply {
    let job = operator::job(&state.env, &who.workspace, &id).await?;
    let version = operator::awaiting(&state.env, &who.workspace, &job).await?.map(|(_, version)| version);
    Ok((StatusCode::OK, Json(json!({ "job": job, "awaiting_version": version }))))
}

/// `POST /v1/jobs/{job}/retry`: run the step that failed the job again, as the caller
/// (`harmonia retry`); 409 `invalid_transition`, with the reason, when it cannot be retried.
async fn retry(State(state): State<OperatorState>, Caller(who): Caller, PathId(id): PathId<JobId>) -> Reply {
    let (job, retry) = harmonia_pipeline::retry::retry(&state.env, &who.workspace, &id, who.operator.clone()).await?;
    Ok((StatusCode::OK, Json(json!({ "job": job, "retry": retry }))))
}

async fn job_view(
    State(state): State<OperatorState>,
    Caller(who): Caller,
    Trace(trace): Trace,
    PathId(id): PathId<JobId>,
) -> Reply {
    let body = view::job_view(&state, &who, &id, trace).await?;
    Ok((StatusCode::OK, Json(body)))
}

/// `GET /v1/activity?job=ID[&limit=1-200][&page=N]`: the job's activity records, oldest first,
/// a page at a time; `next_page` is present while more remain.
async fn activity(State(state): State<OperatorState>, Caller(who): Caller, RawQuery(query): RawQuery) -> Reply {
    let mut job = None;
    let (mut limit, mut page) = (50u32, 0u32);
    for pair in query.as_deref().unwrap_or_default().split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let bad = || Error::new(Code::InvalidRequest, "query parameters are job, limit (1-200) and page");
        match k {
            "job" => job = Some(v.parse::<JobId>()?),
            "limit" => limit = v.parse().ok().filter(|l| (1..=200).contains(l)).ok_or_else(bad)?,
            "page" => page = v.parse().ok().filter(|p| *p < 1000).ok_or_else(bad)?,
            _ => return Err(bad().into()),
        }
    }
    let job = job.ok_or_else(|| Error::new(Code::InvalidRequest, "the job parameter is required"))?;
    operator::job(&state.env, &who.workspace, &job).await?;
    // Every record of the job (a scan misses none), in the order the invocations started.
    let query = harmonia_store::Query::all(harmonia_store::MAX_QUERY_LIMIT)
        .filter("job", job.to_string())
        .map_err(Error::from)?;
    let mut docs = harmonia_store::scan(&*state.env.store, &who.workspace, harmonia_pipeline::records::ACTIVITY, query)
        .await
        .map_err(Error::from)?;
    docs.sort_by(|a, b| {
        let started =
            |d: &harmonia_store::Document| d.data.get("started_at").and_then(Value::as_str).map(str::to_owned);
        started(a).cmp(&started(b)).then_with(|| a.id.cmp(&b.id))
    });
    let start = usize::try_from(page * limit).unwrap_or(usize::MAX);
    let records: Vec<Value> =
        docs.iter().skip(start).take(limit as usize).map(|d| Value::Object(d.data.clone())).collect();
    let more = docs.len() > start + records.len();
    Ok((StatusCode::OK, Json(json!({ "activity": records, "next_page": more.then_some(page + 1) }))))
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum DecisionKind {
    Approve,
    Reject,
    RequestChanges,
}

/// The body of `POST /v1/jobs/{job}/decisions`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    subject: ApprovalSubject,
    decision: DecisionKind,
    version: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    feedback: Option<String>,
}

async fn decide(
    State(state): State<OperatorState>,
    Caller(who): Caller,
    Trace(trace): Trace,
    PathId(id): PathId<JobId>,
    JsonBody(request): JsonBody<DecisionBody>,
) -> Reply {
    // Each decision takes only its own field, so a misplaced one is refused, not ignored.
    let decision = match (request.decision, request.reason, request.feedback) {
        (DecisionKind::Approve, None, None) => Decision::Approved,
        // The limits are checked by `operator` and `rounds`, for the CLI and the API alike.
        (DecisionKind::Reject, Some(reason), None) => Decision::Rejected { reason },
        (DecisionKind::RequestChanges, None, Some(feedback)) => {
            let request = ChangesRequest {
                job: id.clone(),
                operator: who.operator.clone(),
                subject: request.subject,
                subject_hash: request.version,
                feedback,
                trace: Some(trace),
            };
            let approval = rounds::request_changes(&state.env, &who.workspace, request).await?;
            let job = operator::job(&state.env, &who.workspace, &id).await?;
            return Ok((StatusCode::OK, Json(json!({ "approval": approval, "job": job }))));
        }
        (DecisionKind::Approve, _, _) => {
            return Err(Error::new(Code::InvalidRequest, "An approval takes no reason and no feedback.").into());
        }
        (DecisionKind::Reject, _, _) => {
            return Err(Error::new(
                Code::InvalidRequest,
                "A rejection takes a reason of 1 to 500 characters, and no feedback.",
            )
            .into());
        }
        (DecisionKind::RequestChanges, _, _) => {
            return Err(Error::new(
                Code::InvalidRequest,
                "A request for changes takes feedback of 1 to 2,000 characters, and no reason.",
            )
            .into());
        }
    };
    let approval = operator::decide(
        &state.env,
        &who.workspace,
        DecisionRequest {
            job: id.clone(),
            operator: who.operator.clone(),
            subject: request.subject,
            decision,
            subject_hash: request.version,
            trace: Some(trace),
        },
    )
    .await?;
    let job = operator::job(&state.env, &who.workspace, &id).await?;
    Ok((StatusCode::OK, Json(json!({ "approval": approval, "job": job }))))
}

/// The body of `POST /v1/jobs/{job}/edits`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditBody {
    /// The exact draft version edited.
    version: String,
    /// The new text, exactly as it is to be posted.
    body: String,
}

/// `POST /v1/jobs/{job}/edits`: the operator writes the next draft version. 201 with the
/// decision record and the draft once every policy rule passes; `policy_violation` (naming
/// each broken rule) and nothing stored otherwise.
async fn edit(
    State(state): State<OperatorState>,
    Caller(who): Caller,
    PathId(id): PathId<JobId>,
    JsonBody(request): JsonBody<EditBody>,
) -> Reply {
    let request = EditRequest {
        job: id.clone(),
        operator: who.operator.clone(),
        subject_hash: request.version,
        body: request.body,
    };
    let edited = rounds::edit(&state.env, &who.workspace, request).await?;
    let job = operator::job(&state.env, &who.workspace, &id).await?;
    Ok((StatusCode::CREATED, Json(json!({ "approval": edited.approval, "draft": edited.draft, "job": job }))))
}
