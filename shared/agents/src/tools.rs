//! Data tools a role may call, and Temi's six read-only planning tools.
//!
//! A tool declares its name and argument schema and answers a JSON object. Tools are read-only
//! by construction: they receive a [`ToolContext`] holding a store reference and use only its
//! reads. Temi's tools read the request's immutable planning snapshot and refuse any other
//! snapshot id, which the runtime turns into `snapshot_mismatch`.

use async_trait::async_trait;
use harmonia_contracts::domain::PlanningSnapshot;
use harmonia_contracts::ids::{SnapshotId, WorkspaceId};
use harmonia_store::{Collection, Store};
use serde_json::{Value, json};

use crate::model::FunctionDeclaration;

/// Where planning snapshots are stored (immutable once written).
pub const PLANNING_SNAPSHOTS: Collection = Collection::new("planning_snapshots");

/// What a tool may see of the invocation.
pub struct ToolContext<'a> {
    /// The caller's workspace; every read is scoped to it.
    pub workspace: &'a WorkspaceId,
    /// Read access to state.
    pub store: &'a dyn Store,
    /// The request's planning snapshot (Temi only).
    pub snapshot: Option<&'a SnapshotId>,
}

/// Why a tool call failed.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ToolFailure {
    /// The call named a snapshot other than the request's.
    #[error("snapshot mismatch")]
    SnapshotMismatch,
    /// The arguments do not match the declaration.
    #[error("invalid arguments")]
    InvalidArguments,
    /// The data could not be read.
    #[error("dependency unavailable")]
    Unavailable,
}

/// A read-only tool.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name and argument schema.
    fn declaration(&self) -> FunctionDeclaration;
    /// Run it.
    async fn call(&self, ctx: &ToolContext<'_>, args: &Value) -> Result<Value, ToolFailure>;
}

/// The six planning views Temi may read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotView {
    /// Commitments already made.
    Commitments,
    /// Capacity by day.
    Capacity,
    /// Asset readiness.
    AssetReadiness,
    /// Verified posting-window observations.
    PostingWindows,
    /// Calendar projection state.
    Calendar,
    /// Blocked dependencies.
    BlockedDependencies,
}

/// Every data tool's name, as its implementation declares it and as the roles' allow-lists
/// ([`crate::roles`]) and the skills' `allowed-tools` name it: one constant each, so an
/// allow-list cannot name a tool that is not there.
pub mod names {
    /// Temi: the planning snapshot's commitments.
    pub const GET_COMMITMENTS: &str = "get_commitments";
    /// Temi: capacity.
    pub const GET_CAPACITY: &str = "get_capacity";
    /// Temi: asset readiness.
    pub const GET_ASSET_READINESS: &str = "get_asset_readiness";
    /// Temi: verified posting-window observations.
    pub const GET_POSTING_WINDOW_OBSERVATIONS: &str = "get_posting_window_observations";
    /// Temi: the calendar projection.
    pub const GET_CALENDAR_PROJECTION: &str = "get_calendar_projection";
    /// Temi: blocked dependencies.
    pub const GET_BLOCKED_DEPENDENCIES: &str = "get_blocked_dependencies";
    /// Noni: the workspace's verified publications.
    pub const SEARCH_VERIFIED_PUBLICATIONS: &str = "search_verified_publications";
    /// Nimi and Noni: the grounded web search (the runtime's own child invocation).
    pub const GOOGLE_SEARCH: &str = "google_search";
    /// Nova: the latest public trend signals.
    pub const FETCH_TREND_SIGNALS: &str = "fetch_trend_signals";
    /// Nova: trend signals matching a query.
    pub const SEARCH_TREND_SIGNALS: &str = "search_trend_signals";
    /// Nova: measured engagement of earlier posts.
    pub const GET_ENGAGEMENT_INSIGHTS: &str = "get_engagement_insights";
    /// Nova: what waits for the operator.
    pub const GET_OPERATOR_FEED: &str = "get_operator_feed";
    /// Nova: one job's status.
    pub const GET_JOB_STATUS: &str = "get_job_status";
    /// Nova: posting windows to consider.
    pub const SUGGEST_POSTING_WINDOWS: &str = "suggest_posting_windows";
}

impl SnapshotView {
    /// All six.
    pub const ALL: [SnapshotView; 6] = [
        SnapshotView::Commitments,
        SnapshotView::Capacity,
        SnapshotView::AssetReadiness,
        SnapshotView::PostingWindows,
        SnapshotView::Calendar,
        SnapshotView::BlockedDependencies,
    ];

    /// Tool name.
    pub fn tool_name(self) -> &'static str {
        match self {
            SnapshotView::Commitments => names::GET_COMMITMENTS,
            SnapshotView::Capacity => names::GET_CAPACITY,
            SnapshotView::AssetReadiness => names::GET_ASSET_READINESS,
            SnapshotView::PostingWindows => names::GET_POSTING_WINDOW_OBSERVATIONS,
            SnapshotView::Calendar => names::GET_CALENDAR_PROJECTION,
            SnapshotView::BlockedDependencies => names::GET_BLOCKED_DEPENDENCIES,
        }
    }

    fn project(self, s: &PlanningSnapshot) -> Value {
        let items = match self {
            SnapshotView::Commitments => serde_json::to_value(&s.commitments),
            SnapshotView::Capacity => serde_json::to_value(&s.capacity),
            SnapshotView::AssetReadiness => serde_json::to_value(&s.asset_readiness),
            SnapshotView::PostingWindows => serde_json::to_value(&s.posting_windows),
            SnapshotView::Calendar => serde_json::to_value(&s.calendar),
            SnapshotView::BlockedDependencies => serde_json::to_value(&s.blocked_dependencies),
        }
        .unwrap_or(Value::Null);
        json!({ "snapshot_id": s.id, "taken_at": s.taken_at, "items": items })
    }
}

/// A store failure a tool answers as `dependency_unavailable`: the model sees only that, and
/// the cause is logged (a store error's text names no document content).
pub(crate) fn unavailable(e: harmonia_store::Error) -> ToolFailure {
    tracing::warn!(error = %e, code = e.code().as_str(), "a data tool could not read the store");
    ToolFailure::Unavailable
}

/// One of Temi's read-only snapshot tools.
pub struct SnapshotTool(pub SnapshotView);

#[async_trait]
impl Tool for SnapshotTool {
    fn declaration(&self) -> FunctionDeclaration {
        FunctionDeclaration {
            name: self.0.tool_name().to_owned(),
            description: format!(
                "Read-only: the {} of the request's immutable planning snapshot. The snapshot_id must be the request's.",
                self.0.tool_name().trim_start_matches("get_").replace('_', " ")
            ),
            parameters: json!({
                "type": "object",
                "properties": {"snapshot_id": {"type": "string"}},
                "required": ["snapshot_id"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, ctx: &ToolContext<'_>, args: &Value) -> Result<Value, ToolFailure> {
        let asked = args.get("snapshot_id").and_then(Value::as_str).ok_or(ToolFailure::InvalidArguments)?;
        let expected = ctx.snapshot.ok_or(ToolFailure::SnapshotMismatch)?;
        if asked != expected.as_str() {
            return Err(ToolFailure::SnapshotMismatch);
        }
        let id = expected.as_str().parse().map_err(|_| ToolFailure::InvalidArguments)?;
        let doc = ctx
            .store
            .get(ctx.workspace, PLANNING_SNAPSHOTS, &id)
            .await
            .map_err(unavailable)?
            .ok_or(ToolFailure::Unavailable)?;
        let snapshot: PlanningSnapshot = doc.decode().map_err(unavailable)?;
        if &snapshot.id != expected {
            return Err(ToolFailure::SnapshotMismatch);
        }
        Ok(self.0.project(&snapshot))
    }
}
