//! The seed of a specialist invocation.

use harmonia_agents::InvocationSeed;
use harmonia_agents::io::RoleInput;
use harmonia_contracts::event::StageEvent;

use crate::Env;
use crate::step::{Step, stage_of};

/// The seed of the specialist invocation step `S` makes for `event`.
pub(crate) fn seed<S: Step>(env: &Env, event: &StageEvent<S::Payload>, input: RoleInput) -> InvocationSeed {
    InvocationSeed {
        workspace: event.workspace.clone(),
        user: env.pipeline_user.clone(),
        job: event.job.clone(),
        stage: stage_of::<S>(),
        input,
        trace: event.traceparent.clone(),
    }
}
