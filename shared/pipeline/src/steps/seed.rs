//! The seed of a specialist invocation.

use harmonia_agents::InvocationSeed;
use harmonia_agents::runtime::TokenBudget;
use harmonia_contracts::domain::{ActivityRecord, WorkspaceConfig};
use harmonia_contracts::event::StageEvent;
use harmonia_contracts::ids::{JobId, WorkspaceId};
use harmonia_store::{MAX_QUERY_LIMIT, Query, decode_each, scan};

use crate::Env;
use crate::registry::Subscribed;
use crate::step::{self, stage_of};

/// The seed of the specialist invocation the step consuming `event` makes (in its payload's
/// stage), under the job's configuration `config` (its token budget, if it has one).
pub(crate) async fn seed<P: Subscribed, I>(
    env: &Env,
    event: &StageEvent<P>,
    input: I,
    config: &WorkspaceConfig,
) -> Result<InvocationSeed<I>, step::Error> {
    let budget = match config.model.max_tokens_per_job {
        None => None,
        Some(_) => budget(env, &event.workspace, &event.job).await?,
    };
    // (The job's configuration decides whether it runs under a budget; the current one, how
    // large: see `budget_limit`.)
    Ok(InvocationSeed {
        workspace: event.workspace.clone(),
        user: env.pipeline_user.clone(),
        job: event.job.clone(),
        stage: stage_of::<P>(),
        input,
        trace: event.traceparent.clone(),
        budget,
    })
}

/// The budget of a job whose configuration set one: the limit the workspace's current
/// configuration sets (so an operator raises it, or lifts it, for jobs already under one), and
/// the tokens every model call of the job has taken so far (its activity records, failed
/// invocations and grounded searches included: the provider counted them).
async fn budget(env: &Env, workspace: &WorkspaceId, job: &JobId) -> Result<Option<TokenBudget>, step::Error> {
    let Some(limit) = current_limit(&*env.store, workspace).await? else { return Ok(None) };
    let query = Query::all(MAX_QUERY_LIMIT).filter("job", job.to_string())?;
    let docs = scan(&*env.store, workspace, crate::records::ACTIVITY, query).await?;
    let records: Vec<ActivityRecord> = decode_each(crate::records::ACTIVITY, &docs);
    let mut budget = TokenBudget::new(limit);
    records.iter().for_each(|r| budget.count(r));
    Ok(Some(budget))
}

/// The limit the workspace's current configuration sets, if any.
async fn current_limit(
    store: &dyn harmonia_store::Store,
    workspace: &WorkspaceId,
) -> Result<Option<u64>, harmonia_contracts::Error> {
    Ok(crate::workspace::current(store, workspace).await?.config.model.max_tokens_per_job)
}

/// The token budget `job` runs under, if any: a job whose own configuration version sets
/// `[model] max_tokens_per_job` runs under the limit the workspace's current configuration
/// sets (raised, or lifted, by a later version); a job created without one has none.
pub async fn budget_limit(
    store: &dyn harmonia_store::Store,
    workspace: &WorkspaceId,
    job: &harmonia_contracts::domain::Job,
) -> Result<Option<u64>, harmonia_contracts::Error> {
    let own = crate::workspace::version_of_job(store, job).await?.config.model.max_tokens_per_job;
    match own {
        None => Ok(None),
        Some(_) => current_limit(store, workspace).await,
    }
}
