//! The one registry of functions, topics and subscriptions. The local runner, the
//! provisioning command and the Terraform all derive from it.
//!
//! [`Function`] names the deployable functions; [`route`] builds each subscription from its
//! step's types; [`subscriptions`] names topics and subscriptions and pairs each with its
//! handler.

mod function;
pub mod route;
pub mod subscriptions;

pub use function::Function;
pub use route::{ROUTES, Route, StageKind, Subscribed, consumers, stage};
pub use subscriptions::{
    MAX_ATTEMPTS, Subscriber, Timing, dead_letter_subscriptions, dead_letter_topic, handlers, subscriptions, topic,
    topics,
};
