//! Typed contracts shared by every Harmonia function.
//!
//! Layout: [`ids`] (identifier newtypes parsed at the edge), [`error`] (the one error shape,
//! the stable code table and `AgentContractError`), [`roles`] (the eight agent roles),
//! [`trace`] (W3C trace context), [`event`] (the stage-event envelope and its topics),
//! [`tool`] (Nova's tool envelope), [`domain`] (a job's documents from source to verified
//! post), [`time`] (how times are written so that their string order is time order) and
//! [`schema`] (JSON Schema generation, drift check and validation).
//!
//! Every serde type denies unknown fields; the checked-in schemas under `schemas/` are
//! regenerated with `cargo run -p harmonia-contracts --bin harmonia-schemas`.

pub mod domain;
pub mod error;
pub mod event;
pub mod ids;
pub mod roles;
pub mod schema;
pub mod time;
pub mod tool;
pub mod trace;

#[cfg(test)]
mod names;

pub use error::{AgentContractError, Category, Code, Error, ErrorBody};
pub use roles::Role;
