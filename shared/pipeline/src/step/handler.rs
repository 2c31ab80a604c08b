//! A step, and the bus handler that runs it for each delivery.

use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use harmonia_bus::{Delivery, Handler, Outcome};
use harmonia_contracts::event::{Stage, StageEvent};
use tracing::Instrument as _;

use super::{Error, StageRef, claim, fail_job, marker, record_stall, republish};
use crate::Env;
use crate::registry::{StageKind, Subscribed};

/// The step consuming one payload, implemented on the payload type itself: `impl Step for
/// SourceIngested` is the `analyze` step, and is one async function over the environment and
/// the event.
///
/// The stage a step completes is not declared beside it: it is its payload's consumer, bound
/// once by [`Subscribed`]. So a step cannot complete another stage than the one its topic is
/// routed to, a payload without a consuming stage cannot have a step, and no payload can have
/// two (the compiler refuses a second implementation).
// A native async function: steps are used through generics only, never as trait objects, so
// no boxing macro is needed; the `Send` bound lets the bus handler run them on any worker.
#[diagnostic::on_unimplemented(
    message = "no step consumes `{Self}`",
    label = "no pipeline step is implemented for this payload",
    note = "a route needs a payload that some stage consumes (`Subscribed`) and the step that handles it (`impl Step for ..`)"
)]
pub trait Step: Subscribed {
    /// Do the step; it ends with [`complete`](super::complete).
    fn run(env: &Env, event: &StageEvent<Self>) -> impl Future<Output = Result<(), Error>> + Send;
}

/// The stage that consumes `P`.
pub fn stage_of<P: Subscribed>() -> Stage {
    <P::Consumer as StageKind>::STAGE
}

/// Runs the [`Step`] of payload `P` for each delivery: decode, claim, skip-if-completed, run,
/// settle.
pub struct StageHandler<P> {
    env: Arc<Env>,
    // The handler holds no payload; `fn() -> P` keeps it `Send + Sync` whatever `P` is.
    step: PhantomData<fn() -> P>,
}

impl<P: Step> StageHandler<P> {
    /// A handler running `P`'s step over `env`.
    pub fn new(env: Arc<Env>) -> Self {
        Self { env, step: PhantomData }
    }
}

#[async_trait]
impl<P: Step> Handler for StageHandler<P> {
    async fn handle(&self, delivery: Delivery) -> Outcome {
        let Ok(event) = StageEvent::<P>::decode(&delivery.data) else {
            tracing::warn!(subscription = %delivery.subscription, message_id = %delivery.message_id, "undecodable stage event; leaving it to the dead-letter policy");
            return Outcome::Nack;
        };
        // Exported as the messaging conventions name a consumer's span; its parent is the
        // event's exported `create` span.
        let topic = P::TOPIC;
        let span = tracing::info_span!(
            "process",
            otel.name = %format_args!("process {topic}"),
            otel.kind = "consumer",
            "messaging.operation.type" = "process",
            messaging.operation.name = "process",
            messaging.destination.name = %format_args!("{}{topic}", self.env.topic_prefix),
            messaging.destination.subscription.name = %delivery.subscription,
            harmonia.stage = %stage_of::<P>(),
            job = %event.job,
            pass = event.pass.get(),
            trace_id = %event.traceparent.trace_id(),
        );
        let t = &event.traceparent;
        harmonia_telemetry::continue_trace(&span, &t.trace_id(), &t.span_id(), t.sampled());
        self.handle_event(event).instrument(span).await
    }
}

impl<P: Step> StageHandler<P> {
    async fn handle_event(&self, event: StageEvent<P>) -> Outcome {
        let env = &*self.env;
        let at = StageRef::of(&event);
        super::sweep::in_background(&self.env, at.workspace);
        let token = match claim::acquire(env, &at).await {
            Ok(Some(token)) => token,
            Ok(None) => return Outcome::Nack,
            Err(e) => {
                tracing::warn!(workspace = %at.workspace, job = %at.job, stage = %at.stage, error = %e, "the step's claim could not be taken; the delivery is retried");
                if let Error::Retry(e) = &e {
                    env.faults.note(e);
                }
                return Outcome::Nack;
            }
        };
        // Whether the step completed already is asked once the claim is ours, and only then:
        // completion deletes the claim with the marker's write, so a duplicate that looked
        // before taking the claim could find no marker, then claim a step completed meanwhile.
        // A duplicate of a completed step (rare) pays a claim; every first delivery saves a read.
        if let Some(settled) = settled(env, &at).await {
            release(env, &at, &token).await;
            return settled;
        }
        let result = P::run(env, &event).await;
        // Completing or failing the step deleted its claim; a retry releases it just below.
        claim::settled(env, &at, &token);
        let outcome = match result {
            Ok(()) => return Outcome::Ack,
            Err(Error::Stale) => {
                tracing::info!(workspace = %at.workspace, job = %at.job, stage = %at.stage, pass = at.pass.get(), "the job has moved past this step; its event is acknowledged");
                Outcome::Ack
            }
            Err(Error::Retry(e)) => {
                tracing::warn!(workspace = %at.workspace, job = %at.job, stage = %at.stage, pass = at.pass.get(), code = %e.code, cause = %e.cause_chain(), "stage met a transient failure; it will be retried");
                env.faults.note(&e);
                Outcome::Nack
            }
            Err(Error::Stalled { role, code }) => {
                tracing::warn!(workspace = %at.workspace, job = %at.job, stage = %at.stage, pass = at.pass.get(), role = ?role, code = %code, "stage stalled; it will be retried");
                if record_stall(env, &at, role, code).await.is_err() {
                    tracing::warn!(job = %at.job, stage = %at.stage, "the stall could not be recorded on the job");
                }
                Outcome::Nack
            }
            Err(Error::Fail { role, code, schema_path }) => {
                tracing::warn!(workspace = %at.workspace, job = %at.job, stage = %at.stage, pass = at.pass.get(), role = ?role, code = %code, "stage failed");
                // Recording the failure deletes the claim with it.
                return match fail_job(env, &at, role, code, schema_path).await {
                    Ok(()) => Outcome::Ack,
                    Err(e) => {
                        tracing::warn!(job = %at.job, stage = %at.stage, error = %e, "the job's failure could not be recorded; the delivery is retried");
                        Outcome::Nack
                    }
                };
            }
        };
        // The step stopped without settling: let the next delivery claim it at once.
        release(env, &at, &token).await;
        outcome
    }
}

/// The outcome for a delivery whose step already completed (its recorded events published
/// again), or `None` when it has not.
async fn settled(env: &Env, at: &StageRef<'_>) -> Option<Outcome> {
    match marker(env, at.workspace, at.job, at.stage, at.round, at.pass).await {
        Ok(Some(m)) => Some(match republish(env, &m).await {
            Ok(()) => Outcome::Ack,
            Err(e) => {
                tracing::warn!(job = %at.job, stage = %at.stage, error = %e, "a completed step's events could not be published again; the delivery is retried");
                Outcome::Nack
            }
        }),
        Ok(None) => None,
        Err(e) => {
            tracing::warn!(job = %at.job, stage = %at.stage, error = %e, "the step's marker could not be read; the delivery is retried");
            Some(Outcome::Nack)
        }
    }
}

/// Give up a claim; one that cannot be released lapses with its lease.
async fn release(env: &Env, at: &StageRef<'_>, token: &claim::Token) {
    if claim::release(env, at, token).await.is_err() {
        tracing::warn!(job = %at.job, stage = %at.stage, "a step's claim could not be released; it lapses with its lease");
    }
}
