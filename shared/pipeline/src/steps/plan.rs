use harmonia_agents::io::{RoleInput, TemiInput};
use harmonia_contracts::Code;
use harmonia_contracts::domain::{JobStatus, Plan, PlanItem, PlanningSnapshot};
use harmonia_contracts::event::{ItemSelected, StageEvent, StrategyApproved};
use harmonia_store::{Direction, Query};

use super::read::load;
use super::seed::seed;
use crate::Env;
use crate::records::{
    ANALYSES, AnalysisRecord, PLANNING_SNAPSHOTS, PLANS, PlanRecord, STRATEGIES, StrategyRecord, doc_id,
};
use crate::step::{self, Completion, Step, complete, next_event};

/// The selection rule: among items that depend on nothing, the lowest priority number, then
/// the earliest window start, then the lowest sequence number, then the smallest id.
pub fn select_item(plan: &Plan) -> Option<&PlanItem> {
    plan.items.iter().filter(|i| i.depends_on.is_empty()).min_by(|a, b| {
        (a.priority, a.window.start, a.sequence, &a.id).cmp(&(b.priority, b.window.start, b.sequence, &b.id))
    })
}

/// `plan`: Harmonia routes to Temi over the workspace's newest immutable planning snapshot;
/// deterministic code stores the plan and selects one item.
impl Step for StrategyApproved {
    async fn run(env: &Env, event: &StageEvent<StrategyApproved>) -> Result<(), step::Error> {
        let ws = &event.workspace;
        let strategy: StrategyRecord = load(env, ws, STRATEGIES, &doc_id(&event.job)).await?;
        if strategy.content_hash != event.payload.strategy_hash {
            return Err(step::Error::fail(Code::StaleVersion));
        }
        let analysis: AnalysisRecord = load(env, ws, ANALYSES, &doc_id(&event.job)).await?;
        let newest = Query::all(1).order_by("taken_at", Direction::Descending)?;
        let snapshot: PlanningSnapshot = env
            .store
            .query(ws, PLANNING_SNAPSHOTS, &newest)
            .await?
            .first()
            .ok_or_else(|| step::Error::fail(Code::NotFound))?
            .decode()?;
        let input = RoleInput::Temi(TemiInput {
            strategy: strategy.strategy,
            strategy_hash: strategy.content_hash,
            evidence: analysis.analysis.moments,
            snapshot_id: snapshot.id,
        });
        let plan: Plan = env.runtime.run_task(&seed(env, event, input)).await?.state_delta.require("plan")?;
        let selected = select_item(&plan).ok_or_else(|| step::Error::fail(Code::InvalidDocument))?.id.clone();
        let record = PlanRecord { job: event.job.clone(), plan, selected: selected.clone() };
        let completion = Completion::new(JobStatus::Planned, event.pass)
            .write(PLANS, doc_id(&event.job), &record)?
            .publish(env.message(&next_event(event, ItemSelected { item: selected }))?);
        complete(env, event, completion).await
    }
}
