//! One module per stage; [`handlers`] wires them to the registry's subscriptions.

mod analyze;
mod deadletter;
mod draft;
mod ingest;
mod plan;
mod policy;
mod publish;
mod review;
mod strategize;
mod verify;

use std::sync::Arc;

use harmonia_agents::InvocationSeed;
use harmonia_agents::io::RoleInput;
use harmonia_bus::{Handler, SubscriptionSpec};
use harmonia_contracts::Code;
use harmonia_contracts::event::{EventPayload, Stage, StageEvent};
use harmonia_contracts::ids::{DocId, WorkspaceId};
use harmonia_store::Collection;
use serde::de::DeserializeOwned;

pub use deadletter::{DeadLetterRecorder, system_workspace};
pub use draft::draft_id as draft_id_of;
pub use ingest::ingest;
pub use plan::select_item;

use crate::Env;
use crate::registry::{Timing, dead_letter_subscriptions, subscriptions};
use crate::step::{StageHandler, StepError};

/// Read a document the step needs; a missing one fails the job with `not_found`.
pub(crate) async fn load<T: DeserializeOwned>(
    env: &Env,
    workspace: &WorkspaceId,
    collection: Collection,
    id: &DocId,
) -> Result<T, StepError> {
    let doc = env.store.get(workspace, collection, id).await?.ok_or_else(|| StepError::fail(Code::NotFound))?;
    Ok(doc.decode()?)
}

/// The context Nimi and Ryan may use beyond the job: verified performance of earlier posts and
/// the workspace's eligible memory facts.
pub(crate) async fn context(
    env: &Env,
    workspace: &WorkspaceId,
) -> Result<(Vec<harmonia_contracts::domain::PostMetrics>, Vec<harmonia_contracts::domain::MemoryFact>), StepError> {
    let query = harmonia_store::Query::all(50);
    let performance = env
        .store
        .query(workspace, crate::records::POST_METRICS, &query)
        .await?
        .iter()
        .filter_map(|d| d.decode().ok())
        .collect();
    let memory = harmonia_agents::research::eligible_memory(&*env.store, workspace, 20).await?;
    Ok((performance, memory))
}

/// The seed of a specialist invocation for this event.
pub(crate) fn seed<P: EventPayload>(
    env: &Env,
    event: &StageEvent<P>,
    stage: Stage,
    input: RoleInput,
) -> InvocationSeed {
    InvocationSeed {
        workspace: event.workspace.clone(),
        user: env.pipeline_user.clone(),
        job: event.job.clone(),
        stage,
        input,
        trace: event.traceparent.clone(),
    }
}

/// Every subscription of the pipeline with the handler that serves it.
pub fn handlers(env: &Arc<Env>, timing: Timing) -> Vec<(SubscriptionSpec, Arc<dyn Handler>)> {
    let mut out: Vec<(SubscriptionSpec, Arc<dyn Handler>)> = Vec::new();
    for (function, spec) in subscriptions(&env.topic_prefix, timing) {
        let topic = spec.topic.as_str().strip_prefix(env.topic_prefix.as_str()).unwrap_or_default().to_owned();
        let handler: Arc<dyn Handler> = match (function, topic.as_str()) {
            ("analyze", _) => Arc::new(StageHandler::new(env.clone(), analyze::Analyze)),
            ("strategize", _) => Arc::new(StageHandler::new(env.clone(), strategize::Strategize)),
            ("plan", _) => Arc::new(StageHandler::new(env.clone(), plan::PlanStep)),
            ("draft", "review.revise") => Arc::new(StageHandler::new(env.clone(), draft::Revise)),
            ("draft", _) => Arc::new(StageHandler::new(env.clone(), draft::FirstDraft)),
            ("review", _) => Arc::new(StageHandler::new(env.clone(), review::ReviewStep)),
            ("policy", _) => Arc::new(StageHandler::new(env.clone(), policy::PolicyStep)),
            ("publish", _) => Arc::new(StageHandler::new(env.clone(), publish::Publish)),
            ("verify", _) => Arc::new(StageHandler::new(env.clone(), verify::Verify)),
            _ => continue,
        };
        out.push((spec, handler));
    }
    for spec in dead_letter_subscriptions(&env.topic_prefix, timing) {
        out.push((spec, Arc::new(DeadLetterRecorder::new(env.clone()))));
    }
    out
}
