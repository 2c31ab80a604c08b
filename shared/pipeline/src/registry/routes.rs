//! Routes built from the steps' types: a route's topic is its step's payload topic and its
//! function is its step's stage, so neither can be named wrongly.
//!
//! Which stage consumes which payload is declared once, by [`Subscribed`]; a [`Step`] names
//! its payload and its stage, and the compiler refuses a step whose payload is bound to
//! another stage (`tests/ui/route_to_wrong_topic.rs`).

use std::sync::Arc;

use harmonia_bus::Handler;
use harmonia_contracts::event::{
    AnalysisCompleted, DraftApproved, DraftWritten, EventPayload, ItemSelected, PostPublished, ReviewPassed,
    RevisionRequested, SourceIngested, Stage, StrategyApproved,
};

use super::Function;
use crate::Env;
use crate::step::{StageHandler, Step};
use crate::steps::{analyze, draft, plan, policy, publish, review, strategize, verify};

/// A pipeline stage as a type, so that the stage a step completes and the topics it may
/// consume are checked by the compiler.
pub trait StageKind: Send + Sync + 'static {
    /// The stage.
    const STAGE: Stage;
    /// Whether the stage calls a model (its subscriptions get the longer ack deadline).
    const CALLS_MODEL: bool;
}

/// The stage types, one per stage that consumes a topic.
pub mod stage {
    use super::{Stage, StageKind};

    macro_rules! stages {
        ($( $(#[$doc:meta])* $name:ident, $calls_model:literal; )*) => {
            $(
                $(#[$doc])*
                #[derive(Clone, Copy, Debug)]
                pub struct $name;

                impl StageKind for $name {
                    const STAGE: Stage = Stage::$name;
                    const CALLS_MODEL: bool = $calls_model;
                }
            )*
        };
    }

    stages! {
        /// `analyze`.
        Analyze, true;
        /// `strategize`.
        Strategize, true;
        /// `plan`.
        Plan, true;
        /// `draft`.
        Draft, true;
        /// `review`.
        Review, true;
        /// `policy`.
        Policy, false;
        /// `publish`.
        Publish, false;
        /// `verify`.
        Verify, false;
    }
}

/// A payload a pipeline stage subscribes to, bound to that stage. Payloads without an
/// implementation (`strategy.proposed`, `policy.passed`, `post.verified`) wait for a human
/// or end the job: nothing subscribes to them.
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

/// Which function consumes which topic, and the handler that serves it.
#[derive(Clone, Copy)]
pub struct Route {
    /// The consuming function.
    pub function: Function,
    /// The stage it completes.
    pub stage: Stage,
    /// The topic it subscribes to.
    pub topic: &'static str,
    /// Whether it calls a model (longer ack deadline).
    pub calls_model: bool,
    handler: fn(Arc<Env>) -> Arc<dyn Handler>,
}

impl Route {
    /// The route of step `S`: its payload's topic, its stage's function.
    pub const fn of<S: Step>() -> Route {
        Route {
            function: Function::of(<S::Stage as StageKind>::STAGE),
            stage: <S::Stage as StageKind>::STAGE,
            topic: <S::Payload as EventPayload>::TOPIC,
            calls_model: <S::Stage as StageKind>::CALLS_MODEL,
            handler: handler::<S>,
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

fn handler<S: Step>(env: Arc<Env>) -> Arc<dyn Handler> {
    Arc::new(StageHandler::new(env, S::default()))
}

/// Every subscription of the pipeline (besides the dead-letter recorder's).
pub const ROUTES: &[Route] = &[
    Route::of::<analyze::Analyze>(),
    Route::of::<strategize::Strategize>(),
    Route::of::<plan::PlanStep>(),
    Route::of::<draft::FirstDraft>(),
    Route::of::<draft::Revise>(),
    Route::of::<review::ReviewStep>(),
    Route::of::<policy::PolicyStep>(),
    Route::of::<publish::Publish>(),
    Route::of::<verify::Verify>(),
];

/// The stages consuming `topic` (unprefixed), from the routes.
pub fn consumers(topic: &str) -> impl Iterator<Item = Stage> + '_ {
    ROUTES.iter().filter(move |r| r.topic == topic).map(|r| r.stage)
}
