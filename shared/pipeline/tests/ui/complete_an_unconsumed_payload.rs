// Completing a step for `strategy.proposed`, which waits for a human: no stage consumes it,
// so there is no stage for the completion (or its marker) to name.

use harmonia_contracts::domain::JobStatus;
use harmonia_contracts::event::{StageEvent, StrategyProposed};
use harmonia_pipeline::Env;
use harmonia_pipeline::step::{self, Completion};

fn approve(env: &Env, event: &StageEvent<StrategyProposed>) {
    let _completing = step::complete(env, event, Completion::new(JobStatus::StrategyApproved, event.pass));
}

fn main() {}
