use harmonia_agents::io::{RoleInput, TemiInput};
use harmonia_contracts::Code;
use harmonia_contracts::domain::{JobStatus, Plan, PlanItem};
use harmonia_contracts::event::{ItemSelected, StageEvent, StrategyApproved};
use harmonia_contracts::ids::{JobId, SnapshotId, WorkspaceId};
use harmonia_store::{create_immutable, encode};

use super::read::{context, job_config, load};
use super::seed::seed;
use crate::records::{
    ANALYSES, AnalysisRecord, JOB_SNAPSHOTS, JobSnapshot, PLANS, PlanRecord, STRATEGIES, StrategyRecord, doc_id,
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
        let input = RoleInput::Temi(TemiInput {
            strategy: strategy.strategy,
            strategy_hash: strategy.content_hash,
            evidence: analysis.analysis.moments,
            snapshot_id: snapshot,
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

/// The job's planning snapshot: the one it already froze, or one built now by deterministic code
/// from the job's workspace configuration, the imported calendar and the verified posting-window
/// observations, frozen under its content hash, and recorded for the job. A redelivery (or a
/// concurrent duplicate) finds the record and plans from the same snapshot, whatever changed
/// in the calendar since.
async fn job_snapshot(env: &Env, ws: &WorkspaceId, job: &JobId) -> Result<SnapshotId, step::Error> {
    if let Some(doc) = env.store.get(ws, JOB_SNAPSHOTS, &doc_id(job)).await? {
        return Ok(doc.decode::<JobSnapshot>()?.snapshot);
    }
    let config = job_config(env, ws, job).await?;
    let (performance, _) = context(env, ws, config.mode).await?;
    let calendar = crate::imports::calendar::entries(&*env.store, ws).await?;
    let snapshot =
        planning::build_snapshot(ws, &config, &calendar, &planning::observations(&performance), chrono::Utc::now());
    planning::freeze_snapshot(&*env.store, &snapshot).await?;
    let record = JobSnapshot { job: job.clone(), snapshot: snapshot.id };
    // First writer wins; a duplicate that lost reads the winner's snapshot.
    let stored = create_immutable(&*env.store, ws, JOB_SNAPSHOTS, &doc_id(job), encode(&record)?).await;
    match stored {
        Ok(created) => Ok(created.document().decode::<JobSnapshot>()?.snapshot),
        Err(harmonia_store::Error::ImmutableConflict) => {
            let doc = env.store.get(ws, JOB_SNAPSHOTS, &doc_id(job)).await?.ok_or(step::Error::Retry)?;
            Ok(doc.decode::<JobSnapshot>()?.snapshot)
        }
        Err(e) => Err(e.into()),
    }
}
