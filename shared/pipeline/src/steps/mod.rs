//! One module per stage, wired to the registry's subscriptions by
//! [`registry::ROUTES`](crate::registry::ROUTES); [`read`] and [`seed`] hold what several
//! steps share.

pub(crate) mod analyze;
mod deadletter;
pub(crate) mod draft;
mod ingest;
pub(crate) mod plan;
pub(crate) mod policy;
pub(crate) mod publish;
mod read;
pub(crate) mod review;
mod seed;
pub(crate) mod strategize;
pub(crate) mod verify;

pub use deadletter::{DeadLetterRecorder, system_workspace};
pub use draft::draft_id as draft_id_of;
pub use ingest::ingest;
pub use plan::select_item;

pub use crate::registry::handlers;
