//! Nova's six read-only tools. Each returns exactly the tool envelope
//! (`{"status","data","error","evidence"}`) — built through [`ToolEnvelope`], so an impossible
//! state cannot be produced — with stable errors: `invalid_query`, `invalid_id`, `not_found`,
//! `authorization`, `insufficient_history`, `dependency_unavailable` (the only retryable one,
//! and only when the failure is transient). Reads have a deadline (20 s for the public trend
//! tools, 30 s for workspace tools) and one internal retry of a transient failure; every
//! workspace read is scoped to the caller's workspace.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{Datelike, Timelike};
use harmonia_agents::model::FunctionDeclaration;
use harmonia_agents::tools::{Tool, ToolContext, ToolFailure};
use harmonia_contracts::domain::{Job, JobStatus, PostMetrics, Publication, TrendSignal, Workspace};
use harmonia_contracts::ids::{JobId, WorkspaceId};
use harmonia_contracts::tool::{Evidence, EvidenceLevel, Provenance, ToolEnvelope};
use harmonia_contracts::{Code, ErrorBody};
use harmonia_pipeline::records::{JOBS, POST_METRICS, PUBLICATIONS, WORKSPACES, doc_id};
use harmonia_store::{Query, Store};
use serde_json::{Map, Value, json};

use crate::data::{TREND_SIGNALS, public};

/// Deadline of the public trend tools.
pub const TREND_TIMEOUT: Duration = Duration::from_secs(20);
/// Deadline of the workspace tools.
pub const WORKSPACE_TIMEOUT: Duration = Duration::from_secs(30);
/// Measured posts `suggest_posting_windows` needs.
pub const MIN_HISTORY: usize = 5;

/// A tool failure on its way into an envelope.
#[derive(Debug)]
struct Fail(ErrorBody);

impl Fail {
    fn code(code: Code, message: &'static str) -> Self {
        Fail(ErrorBody::new(code, message))
    }
    fn unavailable(transient: bool) -> Self {
        Fail(
            ErrorBody::new(Code::DependencyUnavailable, "The data source could not be read.").with_retryable(transient),
        )
    }
}

impl From<harmonia_store::Error> for Fail {
    fn from(e: harmonia_store::Error) -> Self {
        Fail::unavailable(e.retryable())
    }
}

/// Run `read` under `deadline`, retrying once if it failed transiently.
async fn read<T, F, Fut>(deadline: Duration, mut read: F) -> Result<T, Fail>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Fail>>,
{
    let mut last = Fail::unavailable(true);
    for _ in 0..2 {
        match tokio::time::timeout(deadline, read()).await {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(f)) if !f.0.retryable => return Err(f),
            Ok(Err(f)) => last = f,
            Err(_) => last = Fail::unavailable(true),
        }
    }
    Err(last)
}

fn evidence(id: &str, level: EvidenceLevel, provenance: Provenance) -> Option<Evidence> {
    Some(Evidence { evidence_id: id.parse().ok()?, level, provenance })
}

fn envelope(result: Result<(Map<String, Value>, Vec<Evidence>), Fail>) -> Value {
    let env = match result {
        Ok((data, evidence)) => ToolEnvelope::success(data, evidence).unwrap_or_else(|_| {
            ToolEnvelope::error(ErrorBody::new(Code::Internal, "The tool produced duplicate evidence."))
        }),
        Err(Fail(body)) => ToolEnvelope::error(body),
    };
    serde_json::to_value(env).unwrap_or(Value::Null)
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

async fn workspace(store: &dyn Store, ws: &WorkspaceId) -> Result<Workspace, Fail> {
    match store.get(ws, WORKSPACES, &doc_id(ws)).await? {
        Some(doc) => doc.decode().map_err(|_| Fail::unavailable(false)),
        None => Err(Fail::code(Code::Authorization, "The caller is not allowed to read this workspace.")),
    }
}

fn limit(args: &Value) -> usize {
    // Out-of-range limits are clamped to 1-10; the trend tools declare no limit error.
    usize::try_from(args.get("limit").and_then(Value::as_i64).unwrap_or(5).clamp(1, 10)).unwrap_or(5)
}

async fn signals(store: &dyn Store) -> Result<Vec<TrendSignal>, Fail> {
    let q = Query::all(1000).order_by("score", harmonia_store::Direction::Descending)?;
    Ok(store.query(&public(), TREND_SIGNALS, &q).await?.iter().filter_map(|d| d.decode().ok()).collect())
}

fn signal_result(found: Vec<TrendSignal>, total: usize) -> Result<(Map<String, Value>, Vec<Evidence>), Fail> {
    let mut ev: Vec<Evidence> =
        found.iter().filter_map(|s| evidence(s.id.as_str(), EvidenceLevel::Record, s.provenance)).collect();
    let dataset_mock = found.iter().any(|s| s.provenance == Provenance::Mock);
    if !found.is_empty() {
        ev.extend(evidence(
            "dataset-trend-signals",
            EvidenceLevel::Dataset,
            if dataset_mock { Provenance::Mock } else { Provenance::Live },
        ));
    }
    let items: Vec<Value> = found
        .iter()
        .map(|s| {
            json!({"evidence_id": s.id, "topic": s.topic, "summary": s.summary, "source": s.source, "url": s.url,
                        "score": s.score, "observed_at": s.observed_at, "provenance": s.provenance})
        })
        .collect();
    Ok((object(json!({"signals": items, "count": items.len(), "dataset_size": total})), ev))
}

/// The kind of each tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `fetch_trend_signals(limit)`.
    FetchTrends,
    /// `search_trend_signals(query, limit)`.
    SearchTrends,
    /// `get_engagement_insights()`.
    Engagement,
    /// `get_operator_feed()`.
    Feed,
    /// `get_job_status(job_id)`.
    JobStatus,
    /// `suggest_posting_windows()`.
    Windows,
}

/// One of Nova's tools.
pub struct NovaTool(pub Kind);

/// All six.
pub fn all() -> Vec<Arc<dyn Tool>> {
    [Kind::FetchTrends, Kind::SearchTrends, Kind::Engagement, Kind::Feed, Kind::JobStatus, Kind::Windows]
        .into_iter()
        .map(|k| Arc::new(NovaTool(k)) as Arc<dyn Tool>)
        .collect()
}

fn decl(name: &str, description: &str, parameters: Value) -> FunctionDeclaration {
    FunctionDeclaration { name: name.into(), description: description.into(), parameters }
}

fn rate(m: &PostMetrics) -> f64 {
    if m.impressions == 0 {
        0.0
    } else {
        (m.reactions + m.comments + m.shares + m.clicks) as f64 / m.impressions as f64
    }
}

async fn metrics(store: &dyn Store, ws: &WorkspaceId) -> Result<Vec<PostMetrics>, Fail> {
    Ok(store.query(ws, POST_METRICS, &Query::all(1000)).await?.iter().filter_map(|d| d.decode().ok()).collect())
}

fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

impl NovaTool {
    async fn run(
        &self,
        store: &dyn Store,
        ws: &WorkspaceId,
        args: &Value,
    ) -> Result<(Map<String, Value>, Vec<Evidence>), Fail> {
        match self.0 {
            Kind::FetchTrends => {
                let n = limit(args);
                let all = read(TREND_TIMEOUT, || signals(store)).await?;
                let total = all.len();
                signal_result(all.into_iter().take(n).collect(), total)
            }
            Kind::SearchTrends => {
                let query = args.get("query").and_then(Value::as_str).map(str::trim).unwrap_or_default().to_lowercase();
                if query.is_empty() || query.chars().count() > 200 {
                    return Err(Fail::code(
                        Code::InvalidQuery,
                        "The query must be non-empty text of at most 200 characters.",
                    ));
                }
                let n = limit(args);
                let all = read(TREND_TIMEOUT, || signals(store)).await?;
                let total = all.len();
                let terms: Vec<&str> = query.split_whitespace().collect();
                let found = all
                    .into_iter()
                    .filter(|s| {
                        let hay = format!("{} {}", s.topic, s.summary).to_lowercase();
                        terms.iter().any(|t| hay.contains(t))
                    })
                    .take(n)
                    .collect();
                signal_result(found, total)
            }
            Kind::Engagement => {
                read(WORKSPACE_TIMEOUT, || workspace(store, ws)).await?;
                let mut posts = read(WORKSPACE_TIMEOUT, || metrics(store, ws)).await?;
                posts.sort_by(|a, b| rate(b).total_cmp(&rate(a)));
                let mut ev: Vec<Evidence> = posts
                    .iter()
                    .take(10)
                    .filter_map(|m| evidence(&format!("metric-{}", m.post), EvidenceLevel::Record, m.provenance))
                    .collect();
                let mut by_platform: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
                for m in &posts {
                    by_platform.entry(m.platform.as_str()).or_default().push(rate(m));
                }
                let takeaways: Vec<Value> = by_platform
                    .iter()
                    .map(|(p, rates)| json!({"platform": p, "posts": rates.len(), "mean_engagement_rate": round(rates.iter().sum::<f64>() / rates.len() as f64)}))
                    .collect();
                if !posts.is_empty() {
                    let mock = posts.iter().any(|m| m.provenance == Provenance::Mock);
                    ev.extend(evidence(
                        "dataset-engagement",
                        EvidenceLevel::Dataset,
                        if mock { Provenance::Mock } else { Provenance::Live },
                    ));
                }
                let items: Vec<Value> = posts
                    .iter()
                    .take(10)
                    .map(|m| json!({"evidence_id": format!("metric-{}", m.post), "platform": m.platform, "published_at": m.published_at,
                                    "impressions": m.impressions, "engagement_rate": round(rate(m)), "provenance": m.provenance}))
                    .collect();
                Ok((object(json!({"posts": items, "count": posts.len(), "takeaways": takeaways})), ev))
            }
            Kind::Feed => {
                let w = read(WORKSPACE_TIMEOUT, || workspace(store, ws)).await?;
                let jobs: Vec<Job> = read(WORKSPACE_TIMEOUT, || async {
                    Ok(store.query(ws, JOBS, &Query::all(1000)).await?.iter().filter_map(|d| d.decode().ok()).collect())
                })
                .await?;
                let publications: Vec<Publication> = read(WORKSPACE_TIMEOUT, || async {
                    Ok(store
                        .query(ws, PUBLICATIONS, &Query::all(1000))
                        .await?
                        .iter()
                        .filter_map(|d| d.decode().ok())
                        .collect())
                })
                .await?;
                let mut ev = Vec::new();
                let pending: Vec<Value> = jobs
                    .iter()
                    .filter(|j| matches!(j.status, JobStatus::AwaitingStrategyApproval | JobStatus::AwaitingDraftApproval))
                    .map(|j| {
                        ev.extend(evidence(&format!("job-{}", j.id), EvidenceLevel::Record, Provenance::Live));
                        json!({"evidence_id": format!("job-{}", j.id), "job": j.id, "status": j.status, "waiting_since": j.updated_at})
                    })
                    .collect();
                let mut health: BTreeMap<String, usize> = BTreeMap::new();
                for j in &jobs {
                    let s = serde_json::to_value(j.status)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default();
                    *health.entry(s).or_default() += 1;
                }
                if !jobs.is_empty() {
                    ev.extend(evidence("dataset-jobs", EvidenceLevel::Dataset, Provenance::Live));
                }
                let recent: Vec<Value> = publications
                    .iter()
                    .filter_map(|p| p.verified_post().map(|post| (p, post)))
                    .map(|(p, post)| {
                        ev.extend(evidence(&format!("pub-{post}"), EvidenceLevel::Record, Provenance::Live));
                        json!({"evidence_id": format!("pub-{post}"), "post": post, "platform": p.platform, "job": p.job})
                    })
                    .collect();
                Ok((
                    object(
                        json!({"pending": pending, "job_health": health, "goals": w.goals, "recent_posts": recent, "count": jobs.len()}),
                    ),
                    ev,
                ))
            }
            Kind::JobStatus => {
                let raw = args.get("job_id").and_then(Value::as_str).unwrap_or_default();
                let id: JobId = raw.parse().map_err(|_| Fail::code(Code::InvalidId, "The job id is malformed."))?;
                read(WORKSPACE_TIMEOUT, || workspace(store, ws)).await?;
                let doc = read(WORKSPACE_TIMEOUT, || async { Ok(store.get(ws, JOBS, &doc_id(&id)).await?) }).await?;
                // Another workspace's job is indistinguishable from a missing one.
                let job: Job = doc
                    .ok_or_else(|| Fail::code(Code::NotFound, "No job with that id exists in this workspace."))?
                    .decode()
                    .map_err(|_| Fail::unavailable(false))?;
                let ev =
                    evidence(&format!("job-{}", job.id), EvidenceLevel::Record, Provenance::Live).into_iter().collect();
                let summary = json!({
                    "evidence_id": format!("job-{}", job.id), "job": job.id, "status": job.status, "pass": job.pass,
                    "created_at": job.created_at, "updated_at": job.updated_at,
                    "failure": job.failure.map(|f| json!({"stage": f.stage, "code": f.code, "retryable": f.retryable})),
                });
                Ok((object(json!({"job": summary, "count": 1})), ev))
            }
            Kind::Windows => {
                read(WORKSPACE_TIMEOUT, || workspace(store, ws)).await?;
                let posts = read(WORKSPACE_TIMEOUT, || metrics(store, ws)).await?;
                if posts.len() < MIN_HISTORY {
                    return Err(Fail::code(
                        Code::InsufficientHistory,
                        "There are fewer than 5 measured posts to learn posting windows from.",
                    ));
                }
                let mut slots: BTreeMap<(String, u32, u32), Vec<f64>> = BTreeMap::new();
                for m in &posts {
                    let t = m.published_at;
                    slots
                        .entry((m.platform.as_str().to_owned(), t.weekday().num_days_from_monday(), t.hour()))
                        .or_default()
                        .push(rate(m));
                }
                let mut ranked: Vec<_> = slots
                    .into_iter()
                    .map(|((platform, weekday, hour), rates)| {
                        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
                        (platform, weekday, hour, rates.len(), mean)
                    })
                    .collect();
                ranked.sort_by(|a, b| b.4.total_cmp(&a.4).then(b.3.cmp(&a.3)));
                let windows: Vec<Value> = ranked
                    .iter()
                    .take(3)
                    .map(|(p, d, h, n, mean)| json!({"platform": p, "weekday": d, "window": format!("{h:02}:00-{:02}:00 UTC", (h + 1) % 24),
                                                     "basis": {"measured_posts": n, "mean_engagement_rate": round(*mean)}}))
                    .collect();
                let mock = posts.iter().any(|m| m.provenance == Provenance::Mock);
                let ev = evidence(
                    "dataset-engagement",
                    EvidenceLevel::Dataset,
                    if mock { Provenance::Mock } else { Provenance::Live },
                )
                .into_iter()
                .collect();
                Ok((
                    object(
                        json!({"windows": windows, "count": windows.len(), "basis": {"measured_posts": posts.len(), "method": "mean engagement rate by platform, UTC weekday and hour"}}),
                    ),
                    ev,
                ))
            }
        }
    }
}

#[async_trait]
impl Tool for NovaTool {
    fn declaration(&self) -> FunctionDeclaration {
        let limit = json!({"type": "integer", "minimum": 1, "maximum": 10});
        match self.0 {
            Kind::FetchTrends => decl(
                "fetch_trend_signals",
                "Public trend signals, strongest first.",
                json!({"type":"object","properties":{"limit": limit},"additionalProperties":false}),
            ),
            Kind::SearchTrends => decl(
                "search_trend_signals",
                "Public trend signals matching a query.",
                json!({"type":"object","properties":{"query":{"type":"string","minLength":1,"maxLength":200},"limit": limit},"required":["query"],"additionalProperties":false}),
            ),
            Kind::Engagement => decl(
                "get_engagement_insights",
                "Measured posts of this workspace and takeaways.",
                json!({"type":"object","properties":{},"additionalProperties":false}),
            ),
            Kind::Feed => decl(
                "get_operator_feed",
                "Pending items, job health, goals and recent posts of this workspace.",
                json!({"type":"object","properties":{},"additionalProperties":false}),
            ),
            Kind::JobStatus => decl(
                "get_job_status",
                "A redacted status summary of one job of this workspace.",
                json!({"type":"object","properties":{"job_id":{"type":"string"}},"required":["job_id"],"additionalProperties":false}),
            ),
            Kind::Windows => decl(
                "suggest_posting_windows",
                "UTC posting windows computed from measured history, with the basis.",
                json!({"type":"object","properties":{},"additionalProperties":false}),
            ),
        }
    }

    async fn call(&self, ctx: &ToolContext<'_>, args: &Value) -> Result<Value, ToolFailure> {
        Ok(envelope(self.run(ctx.store, ctx.workspace, args).await))
    }
}
