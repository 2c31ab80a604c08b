use harmonia_agents::io::{CompanyContext, RoleInput, RyanInput};
use harmonia_contracts::domain::{JobStatus, Strategy, content_hash};
use harmonia_contracts::event::{AnalysisCompleted, StageEvent, StrategyProposed};

use super::read::{context, job_config, load};
use super::seed::seed;
use crate::Env;
use crate::records::{ANALYSES, AnalysisRecord, STRATEGIES, StrategyRecord, doc_id};
use crate::step::{self, Completion, Step, complete, next_event};

/// `strategize`: Harmonia routes to Ryan with the job's workspace configuration version; the
/// strategy then waits for a human.
impl Step for AnalysisCompleted {
    async fn run(env: &Env, event: &StageEvent<AnalysisCompleted>) -> Result<(), step::Error> {
        let ws = &event.workspace;
        let record: AnalysisRecord = load(env, ws, ANALYSES, &doc_id(&event.job)).await?;
        let config = job_config(env, ws, &event.job).await?;
        let (performance, memory) = context(env, ws, config.mode).await?;
        let company = CompanyContext::from(&config);
        let input = RoleInput::Ryan(RyanInput::new(record.analysis, company, performance, memory));
        let strategy: Strategy =
            env.runtime.run_task(&seed(env, event, input)).await?.state_delta.require("strategy")?;
        let hash = content_hash(&strategy);
        let stored = StrategyRecord { job: event.job.clone(), strategy, content_hash: hash.clone() };
        let completion = Completion::new(JobStatus::AwaitingStrategyApproval, event.pass)
            .write(STRATEGIES, doc_id(&event.job), &stored)?
            .publish(env.message(&next_event(event, StrategyProposed { strategy_hash: hash }))?);
        complete(env, event, completion).await
    }
}
