//! The event that follows the one a step handles.

use harmonia_bus::OutboundMessage;
use harmonia_contracts::event::{EventPayload, Pass, StageEvent};

use super::Error;
use crate::Env;

/// The bus message of the event following `event` with `payload`: same workspace and job, in
/// `pass`, continuing `event`'s trace.
pub fn next_message<P: EventPayload, Q: EventPayload>(
    env: &Env,
    event: &StageEvent<P>,
    pass: Pass,
    payload: Q,
) -> Result<OutboundMessage, Error> {
    env.message(&StageEvent::new(event.workspace.clone(), event.job.clone(), pass, &event.traceparent, payload))
}
