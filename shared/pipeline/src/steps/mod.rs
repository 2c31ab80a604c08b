//! One module per stage, each implementing [`Step`](crate::step::Step) on the payload(s) its
//! stage consumes; [`registry::ROUTES`](crate::registry::ROUTES) routes each such payload to
//! its step. [`read`] and [`seed`] hold what several steps share.

mod analyze;
mod deadletter;
mod draft;
mod ingest;
mod plan;
pub(crate) mod policy;
mod publish;
pub(crate) mod read;
mod review;
mod seed;
pub use seed::budget_limit;
mod strategize;
mod thread;
mod upload;
mod verify;

pub use deadletter::{DeadLetterRecorder, system_workspace};
pub use draft::{current_draft_id, draft_id as draft_id_of, every_draft_id};
pub use ingest::ingest;
pub use plan::select_item;
pub use upload::{IngestFailure, ObjectNotice, UploadIngest};

pub use crate::registry::handlers;
