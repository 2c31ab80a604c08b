//! The one registry of functions, topics and subscriptions. The local runner, the
//! provisioning command and the Terraform all derive from it.
//!
//! [`Function`] names the deployable functions; [`Route::of`] builds each subscription from
//! its step's types ([`ROUTES`]); [`subscriptions`] names topics and subscriptions, and
//! [`handlers`] pairs each with what serves it.

mod function;
mod routes;
mod subscriptions;

pub use function::Function;
pub use routes::{ROUTES, Route, StageKind, Subscribed, consumers, stage};
pub use subscriptions::{
    MAX_ATTEMPTS, SOURCE_UPLOADS, Subscriber, Timing, dead_letter_subscriptions, dead_letter_topic, handlers,
    subscriptions, topic, topics, upload_subscription,
};
