//! The one registry of functions, topics and subscriptions. The local runner, the
//! provisioning command and the Terraform all derive from it.
//!
//! [`Function`] names the deployable functions; [`Route::of`] builds each subscription from
//! its step's types ([`ROUTES`]); [`subscriptions`] names topics and subscriptions, and
//! [`handlers`] pairs each with what serves it.
//!
//! # Wiring the compiler refuses
//!
//! A step is implemented on the payload it consumes and takes its stage from the registry's
//! binding of that payload, so a step cannot complete another stage than its topic's. What
//! remains to get wrong does not compile (each block below is a doctest that must fail with
//! its error code):
//!
//! A route for `policy.passed`, the human gate before publishing, which no stage consumes, so
//! no step can handle it ("no step consumes `PolicyPassed`"):
//!
//! ```compile_fail,E0277
//! use harmonia_contracts::event::PolicyPassed;
//! use harmonia_pipeline::registry::Route;
//!
//! let _route = Route::of::<PolicyPassed>();
//! ```
//!
//! Completing a step for `strategy.proposed`, which waits for a human: no stage consumes it, so
//! there is no stage for the completion (or its marker) to name:
//!
//! ```compile_fail,E0277
//! use harmonia_contracts::domain::JobStatus;
//! use harmonia_contracts::event::{StageEvent, StrategyProposed};
//! use harmonia_pipeline::Env;
//! use harmonia_pipeline::step::{self, Completion};
//!
//! fn approve(env: &Env, event: &StageEvent<StrategyProposed>) {
//!     let _completing = step::complete(env, event, Completion::new(JobStatus::StrategyApproved, event.pass));
//! }
//! ```
//!
//! A route written by hand that sends `source.ingested` to the draft stage: a route's topic
//! and stage come only from [`Route::of`]:
//!
//! ```compile_fail,E0451
//! use harmonia_contracts::event::{EventPayload, ItemSelected, SourceIngested};
//! use harmonia_pipeline::registry::Route;
//!
//! let _route = Route { topic: SourceIngested::TOPIC, ..Route::of::<ItemSelected>() };
//! ```
//!
//! Nor can a route built that way be re-pointed: its topic is read-only.
//!
//! ```compile_fail,E0616
//! use harmonia_contracts::event::{EventPayload, ItemSelected, SourceIngested};
//! use harmonia_pipeline::registry::Route;
//!
//! let mut route = Route::of::<ItemSelected>();
//! route.topic = SourceIngested::TOPIC;
//! ```
//!
//! The analyze stage's completion publishing `draft.approved`, the operator's approval of a
//! draft: a completion publishes only the events its own stage emits ("no pipeline stage's step
//! emits `DraftApproved`"):
//!
//! ```compile_fail,E0277
//! use harmonia_contracts::domain::JobStatus;
//! use harmonia_contracts::event::{DraftApproved, SourceIngested, StageEvent};
//! use harmonia_pipeline::Env;
//! use harmonia_pipeline::step::{self, Completion, next_event};
//!
//! fn analyze(env: &Env, event: &StageEvent<SourceIngested>) -> Result<(), step::Error> {
//!     let approved = next_event(event, DraftApproved { draft: "d-1".parse().expect("id"), content_hash: "h".into() });
//!     let completion = Completion::new(JobStatus::Analyzed, event.pass).publish(env, &approved)?;
//!     let _completing = step::complete(env, event, completion);
//!     Ok(())
//! }
//! ```
//!
//! Nor another stage's own event: analyze publishing `draft.written`, which the draft stage
//! emits (a completion publishing it is the draft stage's, and completing the analyze step
//! takes only the analyze stage's):
//!
//! ```compile_fail,E0308
//! use harmonia_contracts::domain::JobStatus;
//! use harmonia_contracts::event::{DraftWritten, SourceIngested, StageEvent};
//! use harmonia_pipeline::Env;
//! use harmonia_pipeline::step::{self, Completion, next_event};
//!
//! fn analyze(env: &Env, event: &StageEvent<SourceIngested>) -> Result<(), step::Error> {
//!     let written = next_event(event, DraftWritten { draft: "d-1".parse().expect("id"), content_hash: "h".into() });
//!     let completion = Completion::new(JobStatus::Analyzed, event.pass).publish(env, &written)?;
//!     let _completing = step::complete(env, event, completion);
//!     Ok(())
//! }
//! ```
//!
//! The same lines with a payload a stage consumes, with the analyze stage publishing its own
//! event, and reading a route through its accessors, compile (so each block above fails for
//! the reason it names, not for a typo; stable rustdoc does not compare the error codes):
//!
//! ```
//! use harmonia_contracts::domain::JobStatus;
//! use harmonia_contracts::event::{
//!     AnalysisCompleted, DraftApproved, DraftWritten, EventPayload, ItemSelected, SourceIngested, Stage, StageEvent,
//! };
//! use harmonia_pipeline::Env;
//! use harmonia_pipeline::registry::Route;
//! use harmonia_pipeline::step::{self, Completion, next_event};
//!
//! let route = Route::of::<ItemSelected>();
//! assert_eq!(route.stage(), Stage::Draft);
//! assert_ne!(route.topic(), SourceIngested::TOPIC);
//!
//! fn draft(env: &Env, event: &StageEvent<ItemSelected>) -> Result<(), step::Error> {
//!     let written = next_event(event, DraftWritten { draft: "d-1".parse().expect("id"), content_hash: "h".into() });
//!     let completion = Completion::new(JobStatus::Drafted, event.pass).publish(env, &written)?;
//!     let _completing = step::complete(env, event, completion);
//!     Ok(())
//! }
//!
//! fn analyze(env: &Env, event: &StageEvent<SourceIngested>) -> Result<(), step::Error> {
//!     let _approved = next_event(event, DraftApproved { draft: "d-1".parse().expect("id"), content_hash: "h".into() });
//!     let analyzed = next_event(event, AnalysisCompleted { moments: 3 });
//!     let completion = Completion::new(JobStatus::Analyzed, event.pass).publish(env, &analyzed)?;
//!     let _completing = step::complete(env, event, completion);
//!     Ok(())
//! }
//! ```

mod function;
mod routes;
mod subscriptions;

pub use function::Function;
pub use routes::{Emitted, ROUTES, Route, StageKind, Subscribed, consumers, stage};
pub use subscriptions::{
    MAX_STEP_LEASE, SOURCE_UPLOADS, Subscriber, Timing, dead_letter_subscriptions, dead_letter_topic, handlers,
    subscriptions, topic, topics, upload_subscription,
};
