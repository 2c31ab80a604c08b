//! The completion protocol every stage follows, and the bus handler that runs a stage.
//!
//! [`Step`] is the step consuming one payload (implemented on the payload, its stage the one
//! the registry binds the payload to); [`claim`] keeps duplicate deliveries from
//! running a step concurrently; [`complete`] writes a step's outputs, the job's status and the
//! stage-completed marker in one transaction (deleting the claim) and publishes; [`handler`]
//! runs a step for each delivery.

pub mod claim;
pub mod complete;
mod error;
pub mod faults;
pub mod handler;
mod next;
pub mod sweep;
pub mod watch;

pub use claim::acquire;
pub use complete::{Completion, StageRef, complete, fail_job, marker, record_stall, republish};
pub use error::Error;
pub use faults::Faults;
pub use handler::{StageHandler, Step, stage_of};
pub use next::{next_event, next_event_in};
