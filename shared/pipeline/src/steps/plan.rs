use harmonia_agents::io::TemiInput;
use harmonia_agents::role;
use harmonia_contracts::Code;
use harmonia_contracts::domain::{JobStatus, Plan, PlanItem, PlanningSnapshot, UtcWindow, WorkspaceConfig};
use harmonia_contracts::event::{ItemSelected, StageEvent, StrategyApproved};
use harmonia_contracts::ids::{JobId, PlanItemId, WorkspaceId};
use harmonia_contracts::roles::Role;
use harmonia_store::{create_if_absent, encode};

use super::read::{context, job_config, load};
use super::seed::seed;
use crate::records::{
    ANALYSES, AnalysisRecord, JOB_SNAPSHOTS, JobSnapshot, PLANNING_SNAPSHOTS, PLANS, PlanRecord, STRATEGIES,
    StrategyRecord, doc_id,
};
use crate::step::{self, Completion, Step, complete, next_event};
use crate::{Env, planning};

/// The selection rule: among items that depend on nothing, the lowest priority number, then
/// the earliest window start, then the lowest sequence number, then the smallest id.
pub fn select_item(plan: &Plan) -> Option<&PlanItem> {
    plan.items.iter().filter(|i| i.depends_on.is_empty()).min_by(|a, b| {
        (a.priority, a.window.start, a.sequence, &a.id).cmp(&(b.priority, b.window.start, b.sequence, &b.id))
    })
}

/// `plan`: Harmonia routes to Temi over the job's frozen planning snapshot; deterministic code
/// stores the plan and selects one item.
impl Step for StrategyApproved {
    async fn run(env: &Env, event: &StageEvent<StrategyApproved>) -> Result<(), step::Error> {
        let ws = &event.workspace;
        let strategy: StrategyRecord = load(env, ws, STRATEGIES, &doc_id(&event.job)).await?;
        if strategy.content_hash != event.payload.strategy_hash {
            return Err(step::Error::fail(Code::StaleVersion));
        }
        let analysis: AnalysisRecord = load(env, ws, ANALYSES, &doc_id(&event.job)).await?;
        let snapshot = job_snapshot(env, ws, &event.job).await?;
        let input = TemiInput {
            strategy: strategy.strategy,
            strategy_hash: strategy.content_hash,
            evidence: analysis.analysis.moments,
            snapshot_id: snapshot.id.clone(),
        };
        let config = job_config(env, ws, &event.job).await?;
        let plan: Plan = env.runtime.run_task::<role::Temi>(&seed(env, event, input, &config).await?).await?.output;
        within_posting_windows(&snapshot, &plan)?;
        within_channels(&config, &plan)?;
        let selected = select_item(&plan).ok_or_else(|| step::Error::fail(Code::InvalidDocument))?.id.clone();
        let record = PlanRecord { job: event.job.clone(), plan, selected: selected.clone() };
        let completion = Completion::new(JobStatus::Planned, event.pass)
            .write(PLANS, doc_id(&event.job), &record)?
            .publish(env, &next_event(event, ItemSelected { item: selected }))?;
        complete(env, event, completion).await
    }
}

/// The job's planning snapshot: the one it already froze, or one built now by deterministic code
/// from the job's workspace configuration, the imported calendar and the verified posting-window
/// observations, frozen under its content hash, and recorded for the job. A redelivery (or a
/// concurrent duplicate) finds the record and plans from the same snapshot, whatever changed
/// in the calendar since.
async fn job_snapshot(env: &Env, ws: &WorkspaceId, job: &JobId) -> Result<PlanningSnapshot, step::Error> {
    if let Some(doc) = env.store.get(ws, JOB_SNAPSHOTS, &doc_id(job)).await? {
        let recorded = doc.decode::<JobSnapshot>()?.snapshot;
        return load(env, ws, PLANNING_SNAPSHOTS, &doc_id(&recorded)).await;
    }
    let config = job_config(env, ws, job).await?;
    let (performance, _) = context(env, ws, config.mode).await?;
    let calendar = crate::imports::calendar::entries(&*env.store, ws).await?;
    let snapshot = planning::build_snapshot(
        ws,
        &config,
        &calendar,
        &planning::observations(&performance, config.timezone),
        env.clock.now(),
    );
    planning::freeze_snapshot(&*env.store, &snapshot).await?;
    let record = JobSnapshot { job: job.clone(), snapshot: snapshot.id.clone() };
    // First writer wins; a duplicate that lost plans from the winner's snapshot.
    let created = create_if_absent(&*env.store, ws, JOB_SNAPSHOTS, &doc_id(job), encode(&record)?).await?;
    let winner = created.document().decode::<JobSnapshot>()?.snapshot;
    if winner == snapshot.id { Ok(snapshot) } else { load(env, ws, PLANNING_SNAPSHOTS, &doc_id(&winner)).await }
}

/// Deterministic code, not Temi, has the last word on when posts may go out: every item's
/// window must lie inside one of the posting windows the snapshot lists for that UTC day (from
/// the workspace's configuration, in its time zone). A snapshot without windows (none
/// configured for the horizon) constrains nothing.
fn within_posting_windows(snapshot: &PlanningSnapshot, plan: &Plan) -> Result<(), step::Error> {
    if let Some(item) = outside_windows(snapshot, plan) {
        tracing::warn!(item = %item, "a plan item falls outside the posting windows");
        return Err(step::Error::Fail { role: Some(Role::Temi), code: Code::PlanOutsideWindows, schema_path: None });
    }
    Ok(())
}

/// Every item goes to a channel of the job's workspace configuration: a brief may name a
/// platform the workspace has since dropped, but nothing is planned for a channel it lacks.
fn within_channels(config: &WorkspaceConfig, plan: &Plan) -> Result<(), step::Error> {
    match plan.items.iter().find(|i| !config.channels.iter().any(|c| c.platform == i.channel)) {
        Some(item) => {
            tracing::warn!(item = %item.id, "a plan item is for a channel the workspace does not have");
            Err(step::Error::Fail { role: Some(Role::Temi), code: Code::PlanInvalid, schema_path: None })
        }
        None => Ok(()),
    }
}

/// The first item whose window is not inside a posting window of the snapshot, if any.
pub(crate) fn outside_windows<'a>(snapshot: &PlanningSnapshot, plan: &'a Plan) -> Option<&'a PlanItemId> {
    let open: Vec<&UtcWindow> = snapshot.capacity.iter().flat_map(|c| &c.windows).collect();
    if open.is_empty() {
        return None;
    }
    plan.items
        .iter()
        .find(|item| !open.iter().any(|w| w.start <= item.window.start && item.window.end <= w.end))
        .map(|item| &item.id)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn snapshot(windows: serde_json::Value) -> PlanningSnapshot {
        serde_json::from_value(json!({
            "id": "snap-1", "workspace": "ws", "taken_at": "2026-12-01T08:00:00Z",
            "commitments": [], "asset_readiness": [], "posting_windows": [], "calendar": [],
            "blocked_dependencies": [],
            "capacity": [{"day": "2026-12-03", "slots": 1, "windows": windows}],
        }))
        .expect("snapshot")
    }

    fn plan(start: &str, end: &str) -> Plan {
        serde_json::from_value(json!({
            "snapshot": "snap-1", "strategy_hash": "h", "cadence": "one post", "provenance": "mock",
            "items": [{"id": "item-1", "brief": "brief-1", "sequence": 1, "channel": "bluesky", "format": "text",
                       "window": {"start": start, "end": end}, "deadline": "2026-12-03T09:00:00Z",
                       "depends_on": [], "priority": 1}],
        }))
        .expect("plan")
    }

    #[test]
    fn an_item_must_sit_inside_a_posting_window_of_the_snapshot() {
        let open = snapshot(json!([{"start": "2026-12-03T18:00:00Z", "end": "2026-12-03T21:00:00Z"}]));
        let inside = plan("2026-12-03T18:00:00Z", "2026-12-03T19:00:00Z");
        assert_eq!(outside_windows(&open, &inside), None);
        let early = plan("2026-12-03T15:00:00Z", "2026-12-03T16:00:00Z");
        assert_eq!(outside_windows(&open, &early).map(|i| i.as_str()), Some("item-1"));
        let overruns = plan("2026-12-03T20:30:00Z", "2026-12-03T21:30:00Z");
        assert_eq!(outside_windows(&open, &overruns).map(|i| i.as_str()), Some("item-1"));
        // No windows in the snapshot: nothing to hold the plan to.
        assert_eq!(outside_windows(&snapshot(json!([])), &early), None);
    }

    #[test]
    fn an_item_must_go_to_a_channel_of_the_workspace() {
        let example = include_str!("../../../../examples/workspace.toml");
        let mut config = WorkspaceConfig::from_toml(example).expect("example configuration");
        let on_bluesky = plan("2026-12-03T18:00:00Z", "2026-12-03T19:00:00Z");
        assert!(within_channels(&config, &on_bluesky).is_ok());
        config.channels.retain(|c| c.platform != harmonia_contracts::domain::Platform::Bluesky);
        let refused = within_channels(&config, &on_bluesky).expect_err("no bluesky channel");
        assert!(matches!(refused, step::Error::Fail { code: Code::PlanInvalid, role: Some(Role::Temi), .. }));
    }
}
