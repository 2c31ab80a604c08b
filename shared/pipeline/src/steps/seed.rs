//! The seed of a specialist invocation.

use harmonia_agents::InvocationSeed;
use harmonia_agents::io::RoleInput;
use harmonia_contracts::event::StageEvent;

use crate::Env;
use crate::registry::Subscribed;
use crate::step::stage_of;

/// The seed of the specialist invocation the step consuming `event` makes (in its payload's
/// stage).
pub(crate) fn seed<P: Subscribed>(env: &Env, event: &StageEvent<P>, input: RoleInput) -> InvocationSeed {
    InvocationSeed {
        workspace: event.workspace.clone(),
        user: env.pipeline_user.clone(),
        job: event.job.clone(),
        stage: stage_of::<P>(),
        input,
        trace: event.traceparent.clone(),
    }
}
