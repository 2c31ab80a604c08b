use async_trait::async_trait;
use harmonia_agents::io::{CompanyContext, RoleInput, RyanInput};
use harmonia_contracts::domain::{JobStatus, Strategy, Workspace, content_hash};
use harmonia_contracts::event::{AnalysisCompleted, Stage, StageEvent, StrategyProposed};
use harmonia_store::encode;

use super::{load, seed};
use crate::Env;
use crate::records::{ANALYSES, AnalysisRecord, STRATEGIES, StrategyRecord, WORKSPACES, doc_id};
use crate::step::{Completion, Step, StepError, complete};

/// `strategize`: Harmonia routes to Ryan; the strategy then waits for a human.
pub(crate) struct Strategize;

#[async_trait]
impl Step for Strategize {
    type Payload = AnalysisCompleted;
    const STAGE: Stage = Stage::Strategize;

    async fn run(&self, env: &Env, event: &StageEvent<AnalysisCompleted>) -> Result<(), StepError> {
        let ws = &event.workspace;
        let record: AnalysisRecord = load(env, ws, ANALYSES, &doc_id(&event.job)).await?;
        let workspace: Workspace = load(env, ws, WORKSPACES, &doc_id(ws)).await?;
        let (performance, memory) = super::context(env, ws).await?;
        let company = CompanyContext { name: workspace.name, goals: workspace.goals };
        let input = RoleInput::Ryan(RyanInput::new(record.analysis, company, performance, memory));
        let strategy: Strategy =
            env.runtime.run_task(&seed(env, event, Stage::Strategize, input)).await?.state_delta.require("strategy")?;
        let hash = content_hash(&strategy);
        let stored = StrategyRecord { job: event.job.clone(), strategy, content_hash: hash.clone() };
        let next = StageEvent::new(
            ws.clone(),
            event.job.clone(),
            event.pass,
            &event.traceparent,
            StrategyProposed { strategy_hash: hash },
        );
        let completion = Completion {
            writes: vec![(STRATEGIES, doc_id(&event.job), encode(&stored)?)],
            status: JobStatus::AwaitingStrategyApproval,
            pass: event.pass,
            next: vec![env.message(&next)?],
        };
        complete(env, ws, &event.job, Stage::Strategize, event.pass, completion).await
    }
}
