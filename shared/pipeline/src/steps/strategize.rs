use harmonia_agents::io::{CompanyContext, OperatorRound, RyanInput};
use harmonia_agents::role;
use harmonia_contracts::Code;
use harmonia_contracts::domain::{ApprovalSubject, JobStatus, Strategy, content_hash};
use harmonia_contracts::event::{AnalysisCompleted, StageEvent, StrategyProposed};

use super::read::{context, job_config, load, operator_feedback};
use super::seed::seed;
use crate::Env;
use crate::records::{
    ANALYSES, AnalysisRecord, STRATEGIES, STRATEGY_VERSIONS, StrategyRecord, doc_id, strategy_version_id,
};
use crate::step::{self, Completion, Step, complete, next_event};

/// `strategize`: Harmonia routes to Ryan with the job's workspace configuration version; the
/// strategy then waits for a human. In an operator round Ryan also gets the operator's
/// feedback and the version it is about, and writes the next version.
impl Step for AnalysisCompleted {
    async fn run(env: &Env, event: &StageEvent<AnalysisCompleted>) -> Result<(), step::Error> {
        let ws = &event.workspace;
        let record: AnalysisRecord = load(env, ws, ANALYSES, &doc_id(&event.job)).await?;
        let config = job_config(env, ws, &event.job).await?;
        let (performance, memory) = context(env, ws, config.mode).await?;
        let company = CompanyContext::from(&config);
        let mut ryan = RyanInput::new(record.analysis, company, performance, memory);
        if let Some((feedback, version)) =
            operator_feedback(env, ws, &event.job, ApprovalSubject::Strategy, event.round).await?
        {
            let before = event.round.previous().ok_or_else(|| step::Error::fail(Code::InvalidTransition))?;
            let previous: StrategyRecord =
                load(env, ws, STRATEGY_VERSIONS, &strategy_version_id(&event.job, before)).await?;
            if previous.content_hash != version {
                return Err(step::Error::fail(Code::StaleVersion));
            }
            ryan = ryan.in_round(OperatorRound { round: event.round, feedback, previous: previous.strategy });
        }
        let strategy: Strategy =
            env.runtime.run_task::<role::Ryan>(&seed(env, event, ryan, &config).await?).await?.output;
        let hash = content_hash(&strategy);
        let stored =
            StrategyRecord { job: event.job.clone(), strategy, content_hash: hash.clone(), round: event.round };
        let completion = Completion::new(JobStatus::AwaitingStrategyApproval, event.pass)
            .write(STRATEGIES, doc_id(&event.job), &stored)?
            .write(STRATEGY_VERSIONS, strategy_version_id(&event.job, event.round), &stored)?
            .publish(env, &next_event(event, StrategyProposed { strategy_hash: hash }))?;
        complete(env, event, completion).await
    }
}
