//! Routes built from the steps' types: a step is implemented on the payload it consumes, and
//! a route's topic is that payload's topic and its function the stage the payload is bound
//! to, so neither can be named wrongly.
//!
//! Which stage consumes which payload is declared once, by [`Subscribed`]; a step takes its
//! stage from there, and the compiler refuses a route for a payload that has no step
//! (`tests/ui/route_without_a_step.rs`).

use std::sync::Arc;

use harmonia_bus::Handler;
use harmonia_contracts::event::{
    AnalysisCompleted, DraftApproved, DraftWritten, EventPayload, ItemSelected, PolicyPassed, PostPublished,
    PostVerified, ReviewPassed, RevisionRequested, SourceIngested, Stage, StrategyApproved, StrategyProposed,
};

use super::Function;
use crate::Env;
use crate::step::{StageHandler, Step};

/// A pipeline stage as a type, so that the stage a step completes and the topics it may
/// consume are checked by the compiler.
pub trait StageKind: Send + Sync + 'static {
    /// The stage.
    const STAGE: Stage;
    /// Whether the stage calls a model (its subscriptions get the longer ack deadline).
    const CALLS_MODEL: bool;
}

/// The stage types, one per stage that consumes a topic, made from the one declaration of the
/// stages ([`harmonia_contracts::with_stages!`]).
pub mod stage {
    use super::{Stage, StageKind};

    macro_rules! markers {
        ($( $(#[$doc:meta])* $name:ident : $how:ident $($model:ident)?; )*) => {
            $( markers!(@one $(#[$doc])* $name : $how $($model)?); )*
        };
        (@one $(#[$doc:meta])* $name:ident : pushed $($model:ident)?) => {
            $(#[$doc])*
            #[derive(Clone, Copy, Debug)]
            pub struct $name;

            impl StageKind for $name {
                const STAGE: Stage = Stage::$name;
                const CALLS_MODEL: bool = markers!(@model $($model)?);
            }
        };
        // A stage no event reaches (ingest, the operator's gate) has no type here.
        (@one $(#[$doc:meta])* $name:ident : $how:ident) => {};
        (@model model) => { true };
        (@model) => { false };
    }

    harmonia_contracts::with_stages!(markers);
}

/// A payload a pipeline stage subscribes to, bound to that stage: the stage its [`Step`]
/// completes. Payloads without an implementation (`strategy.proposed`, `policy.passed`,
/// `post.verified`) wait for a human or end the job: nothing subscribes to them.
#[diagnostic::on_unimplemented(
    message = "no stage consumes `{Self}`",
    label = "no pipeline stage subscribes to this payload's topic",
    note = "which stage consumes which payload is declared once, by `Subscribed` in `registry/routes.rs`"
)]
pub trait Subscribed: EventPayload {
    /// The stage that consumes it.
    type Consumer: StageKind;
}

macro_rules! subscribed {
    ($( $payload:ty => $stage:ident; )*) => {
        $( impl Subscribed for $payload { type Consumer = stage::$stage; } )*
    };
}

subscribed! {
    SourceIngested => Analyze;
    AnalysisCompleted => Strategize;
    StrategyApproved => Plan;
    ItemSelected => Draft;
    RevisionRequested => Draft;
    DraftWritten => Review;
    ReviewPassed => Policy;
    DraftApproved => Publish;
    PostPublished => Verify;
}

/// A payload a pipeline stage emits when its step completes, bound to that stage (and checked
/// against the stage the payload names, [`EventPayload::STAGE`]). A step's completion publishes
/// only the payloads its own stage emits; those the operator's decisions or ingest publish
/// (`strategy.approved`, `draft.approved`, `source.ingested`) no step can.
#[diagnostic::on_unimplemented(
    message = "no pipeline stage's step emits `{Self}`",
    label = "a step's completion cannot publish this payload",
    note = "which stage emits which payload is declared once, by `Emitted` in `registry/routes.rs`"
)]
pub trait Emitted: EventPayload {
    /// The stage that emits it.
    type Emitter: StageKind;
}

macro_rules! emitted {
    ($( $payload:ty => $stage:ident; )*) => {
        $(
            impl Emitted for $payload { type Emitter = stage::$stage; }
            const _: () = assert!(
                <$payload as EventPayload>::STAGE as u8 == Stage::$stage as u8,
                "a payload's emitter is the stage it names"
            );
        )*
    };
}

emitted! {
    AnalysisCompleted => Analyze;
    StrategyProposed => Strategize;
    ItemSelected => Plan;
    DraftWritten => Draft;
    RevisionRequested => Review;
    ReviewPassed => Review;
    PolicyPassed => Policy;
    PostPublished => Publish;
    PostVerified => Verify;
}

/// Which function consumes which topic, and the handler that serves it.
#[derive(Clone, Copy)]
pub struct Route {
    function: Function,
    stage: Stage,
    topic: &'static str,
    calls_model: bool,
    handler: fn(Arc<Env>) -> Arc<dyn Handler>,
}

impl Route {
    /// The consuming function.
    pub const fn function(&self) -> Function {
        self.function
    }

    /// The stage it completes.
    pub const fn stage(&self) -> Stage {
        self.stage
    }

    /// The topic it subscribes to.
    pub const fn topic(&self) -> &'static str {
        self.topic
    }

    /// Whether it calls a model (longer ack deadline).
    pub const fn calls_model(&self) -> bool {
        self.calls_model
    }

    /// The route of `P`'s step: `P`'s topic, and the function of the stage `P` is bound to.
    pub const fn of<P: Step>() -> Route {
        let stage = <P::Consumer as StageKind>::STAGE;
        Route {
            function: Function::of(stage),
            stage,
            topic: P::TOPIC,
            calls_model: <P::Consumer as StageKind>::CALLS_MODEL,
            handler: handler::<P>,
        }
    }

    /// The handler running this route's step over `env`.
    pub fn handler(&self, env: Arc<Env>) -> Arc<dyn Handler> {
        (self.handler)(env)
    }
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route")
            .field("function", &self.function)
            .field("stage", &self.stage)
            .field("topic", &self.topic)
            .field("calls_model", &self.calls_model)
            .finish_non_exhaustive()
    }
}

fn handler<P: Step>(env: Arc<Env>) -> Arc<dyn Handler> {
    Arc::new(StageHandler::<P>::new(env))
}

/// Every subscription of the pipeline (besides the dead-letter recorder's): one per payload
/// with a step (the steps are under `steps/`, one module per stage).
pub const ROUTES: &[Route] = &[
    Route::of::<SourceIngested>(),
    Route::of::<AnalysisCompleted>(),
    Route::of::<StrategyApproved>(),
    Route::of::<ItemSelected>(),
    Route::of::<RevisionRequested>(),
    Route::of::<DraftWritten>(),
    Route::of::<ReviewPassed>(),
    Route::of::<DraftApproved>(),
    Route::of::<PostPublished>(),
];

/// The stages consuming `topic` (unprefixed), from the routes.
pub fn consumers(topic: &str) -> impl Iterator<Item = Stage> + '_ {
    ROUTES.iter().filter(move |r| r.topic == topic).map(|r| r.stage)
}
