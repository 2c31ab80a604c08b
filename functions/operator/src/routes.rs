use axum::extract::{DefaultBodyLimit, RawQuery, State};
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use harmonia_client::api::{
    ActivityPage, DecisionBody, DecisionKind, DecisionReply, EditBody, EditReply, JobList, JobReply, Me, RetryReply,
    WorkspaceActivity,
};
use harmonia_contracts::domain::Decision;
use harmonia_contracts::ids::JobId;
use harmonia_contracts::{Code, Error};
use harmonia_http::{ApiError, Caller, JsonBody, PathId, Trace};
use harmonia_pipeline::gates::rounds::{self, ChangesRequest, EditRequest};
use harmonia_pipeline::gates::{self, DecisionRequest};

use crate::{MAX_BODY_BYTES, OperatorState, detail, operators, view};

/// A handler's answer: its typed body, or the shared error shape.
pub(crate) type Answer<T> = Result<Json<T>, ApiError>;

/// The operator API router, with the console at `/` (see `harmonia_console`); anything it does
/// not serve is a JSON 404 or 405.
pub fn app(state: OperatorState) -> Router {
    app_with(state, Router::new())
}

/// [`app`] with `extra` routes beside it, under the same JSON 404 and 405: where the console's
/// `POST /v1/ask` is answered (Nova in the same process for `harmonia serve`, or
/// `crate::nova::routes` forwarding to the Nova function, in the `cloud` build).
pub fn app_with(state: OperatorState, extra: Router) -> Router {
    let api = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/v1/me", get(me))
        .route("/v1/jobs", get(list))
        .route("/v1/jobs/{job}", get(show))
        .route("/v1/jobs/{job}/view", get(job_view))
        .route("/v1/jobs/{job}/detail", get(detail::show))
        .route("/v1/jobs/{job}/events", get(crate::events::events))
        .route("/v1/jobs/{job}/decisions", post(decide))
        .route("/v1/jobs/{job}/edits", post(edit))
        .route("/v1/jobs/{job}/retry", post(retry))
        .route("/v1/activity", get(activity))
        .route("/v1/workspace/activity", get(workspace_activity))
        .route("/v1/sources", post(harmonia_ingest::submit))
        .route("/v1/workspace", get(crate::workspace::show).put(crate::workspace::put))
        .route("/v1/operators", get(operators::list).post(operators::add))
        .route("/v1/operators/{name}", delete(operators::revoke))
        .merge(crate::schedule::routes())
        .merge(crate::imports::routes())
        .merge(crate::engagement::routes())
        .merge(harmonia_console::routes())
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state);
    // The fallbacks go on last: a wrong method is answered only for routes already there.
    harmonia_http::json_fallbacks(api.merge(extra))
}

/// `GET /v1/me`: who the credential is (`harmonia login` checks a credential with it).
async fn me(Caller(who): Caller) -> Answer<Me> {
    Ok(Json(who))
}

/// The workspace's jobs, newest first, and every status a job can have (`statuses`, in the
/// lifecycle's order), so a client filters by the server's names rather than a copy of them.
async fn list(State(state): State<OperatorState>, Caller(who): Caller) -> Answer<JobList> {
    use strum::IntoEnumIterator;
    let jobs = gates::jobs(&state.env, &who.workspace, 200).await?;
    let statuses = harmonia_contracts::domain::JobStatus::iter().map(|s| s.as_str().to_owned()).collect();
    Ok(Json(JobList { jobs, statuses }))
}

async fn show(State(state): State<OperatorState>, Caller(who): Caller, PathId(id): PathId<JobId>) -> Answer<JobReply> {
    let job = gates::job(&state.env, &who.workspace, &id).await?;
    let awaiting_version = gates::awaiting(&state.env, &who.workspace, &job).await?.map(|(_, version)| version);
    Ok(Json(JobReply { job, awaiting_version }))
}

/// `POST /v1/jobs/{job}/retry`: run the step that failed the job again, as the caller
/// (`harmonia retry`); 409 `invalid_transition`, with the reason, when it cannot be retried.
async fn retry(
    State(state): State<OperatorState>,
    Caller(who): Caller,
    PathId(id): PathId<JobId>,
) -> Answer<RetryReply> {
    let (job, retry) = harmonia_pipeline::retry::retry(&state.env, &who.workspace, &id, who.operator.clone()).await?;
    Ok(Json(RetryReply { job, retry }))
}

async fn job_view(
    State(state): State<OperatorState>,
    Caller(who): Caller,
    Trace(trace): Trace,
    PathId(id): PathId<JobId>,
) -> Answer<serde_json::Value> {
    Ok(Json(view::job_view(&state, &who, &id, trace).await?))
}

/// `GET /v1/activity?job=ID[&limit=1-200][&page=N]`: the job's activity records, oldest first,
/// a page at a time; `next_page` is present while more remain.
async fn activity(
    State(state): State<OperatorState>,
    Caller(who): Caller,
    RawQuery(query): RawQuery,
) -> Answer<ActivityPage> {
    let mut job = None;
    let mut paging = Paging::DEFAULT;
    for pair in query.as_deref().unwrap_or_default().split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let bad = || Error::new(Code::InvalidRequest, "query parameters are job, limit (1-200) and page");
        match k {
            "job" => job = Some(v.parse::<JobId>()?),
            "limit" | "page" if paging.read(k, v) => {}
            _ => return Err(bad().into()),
        }
    }
    let job = job.ok_or_else(|| Error::new(Code::InvalidRequest, "the job parameter is required"))?;
    gates::job(&state.env, &who.workspace, &job).await?;
    // Every record of the job, in the order the invocations started (as `harmonia activity`).
    let records = harmonia_pipeline::detail::activity(&state.env, &who.workspace, &job).await?;
    let (activity, next_page) = paging.of(&records);
    Ok(Json(ActivityPage { activity, next_page }))
}

/// One page of a listing: `limit` records (1-200, 50 unless asked) from page `page` (from 0,
/// below 1000).
#[derive(Clone, Copy)]
struct Paging {
    limit: u32,
    page: u32,
}

impl Paging {
    const DEFAULT: Self = Self { limit: 50, page: 0 };

    /// Take `key=value` (`limit` or `page`); false for another key or a value out of range.
    fn read(&mut self, key: &str, value: &str) -> bool {
        let valid = match key {
            "limit" => value.parse().ok().filter(|l| (1..=200).contains(l)).map(|l| self.limit = l),
            "page" => value.parse().ok().filter(|p| *p < 1000).map(|p| self.page = p),
            _ => None,
        };
        valid.is_some()
    }

    /// This page of `records`, and the next page's number while more remain.
    fn of<T: Clone>(self, records: &[T]) -> (Vec<T>, Option<u32>) {
        let start = usize::try_from(self.page * self.limit).unwrap_or(usize::MAX);
        let shown: Vec<T> = records.iter().skip(start).take(self.limit as usize).cloned().collect();
        let more = records.len() > start + shown.len();
        (shown, more.then_some(self.page + 1))
    }
}

/// `GET /v1/workspace/activity[?agent=ROLE][&stage=STAGE][&outcome=success|failure][&limit=1-200][&page=N]`:
/// the workspace's latest records, newest first, a page at a time, with each day's figures.
async fn workspace_activity(
    State(state): State<OperatorState>,
    Caller(who): Caller,
    RawQuery(query): RawQuery,
) -> Answer<WorkspaceActivity> {
    let mut filter = harmonia_pipeline::activity::Filter::default();
    let mut paging = Paging::DEFAULT;
    let bad = || {
        Error::new(
            Code::InvalidRequest,
            "The query parameters are agent (a role), stage, outcome (success or failure), limit (1-200) and page.",
        )
    };
    for (k, v) in url::form_urlencoded::parse(query.as_deref().unwrap_or_default().as_bytes()) {
        let quoted = serde_json::Value::String(v.to_string());
        match k.as_ref() {
            "agent" => filter.agent = Some(serde_json::from_value(quoted).map_err(|_| bad())?),
            "stage" => filter.stage = Some(serde_json::from_value(quoted).map_err(|_| bad())?),
            "outcome" => {
                filter.succeeded = Some(match v.as_ref() {
                    "success" => true,
                    "failure" => false,
                    _ => return Err(bad().into()),
                })
            }
            "limit" | "page" if paging.read(&k, &v) => {}
            _ => return Err(bad().into()),
        }
    }
    let recent = harmonia_pipeline::activity::recent(&state.env, &who.workspace, filter).await?;
    let (activity, next_page) = paging.of(&recent.records);
    Ok(Json(WorkspaceActivity {
        activity,
        next_page,
        total: recent.records.len(),
        days: recent.days,
        capped: recent.capped,
        time_zone: recent.time_zone,
        agents: <harmonia_contracts::Role as strum::IntoEnumIterator>::iter().collect(),
        stages: harmonia_contracts::event::Stage::ALL.to_vec(),
    }))
}

async fn decide(
    State(state): State<OperatorState>,
    Caller(who): Caller,
    Trace(trace): Trace,
    PathId(id): PathId<JobId>,
    JsonBody(request): JsonBody<DecisionBody>,
) -> Answer<DecisionReply> {
    // Each decision takes only its own field, so a misplaced one is refused, not ignored.
    let decision = match (request.decision, request.reason, request.feedback) {
        (DecisionKind::Approve, None, None) => Decision::Approved,
        // The limits are checked by `gates::decisions` and `gates::rounds`, for the CLI and the API alike.
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
            let recorded = rounds::request_changes(&state.env, &who.workspace, request).await?;
            let job = gates::job(&state.env, &who.workspace, &id).await?;
            let unfinished = unfinished(&recorded);
            return Ok(Json(DecisionReply { approval: recorded.value, job, unfinished }));
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
    let recorded = gates::decide(
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
    let job = gates::job(&state.env, &who.workspace, &id).await?;
    let unfinished = unfinished(&recorded);
    Ok(Json(DecisionReply { approval: recorded.value, job, unfinished }))
}

/// What a stored decision left undone, logged here and told to the caller: the decision
/// stands either way, so the answer is a success that says what is left.
pub(crate) fn unfinished<T>(recorded: &gates::Recorded<T>) -> Option<harmonia_contracts::ErrorBody> {
    let e = recorded.unfinished.as_ref()?;
    tracing::warn!(code = e.code.as_str(), error = %e.cause_chain(), "a decision is recorded; what it released did not all start");
    Some(e.body())
}

/// `POST /v1/jobs/{job}/edits`: the operator writes the next draft version. 201 with the
/// decision record and the draft once every policy rule passes; `policy_violation` (naming
/// each broken rule) and nothing stored otherwise.
async fn edit(
    State(state): State<OperatorState>,
    Caller(who): Caller,
    PathId(id): PathId<JobId>,
    JsonBody(request): JsonBody<EditBody>,
) -> Result<(StatusCode, Json<EditReply>), ApiError> {
    let request = EditRequest {
        job: id.clone(),
        operator: who.operator.clone(),
        subject_hash: request.version,
        body: request.body,
        post: request.post,
    };
    let edited = rounds::edit(&state.env, &who.workspace, request).await?;
    let job = gates::job(&state.env, &who.workspace, &id).await?;
    Ok((StatusCode::CREATED, Json(EditReply { approval: edited.approval, draft: edited.draft, job })))
}
