//! The stage steps of Harmonia's pipeline (DESIGN.md §2), shared by the all-in-one `harmonia`
//! runner and the per-stage Cloud Run functions.
//!
//! Every step reads authoritative state, does its one thing, and writes its result together
//! with a stage-completed marker (holding the exact next events) in one transaction, then
//! publishes the next events. A redelivered event whose marker exists re-publishes the
//! recorded events and acks: the model and connectors are never called twice for a completed
//! step. A contract failure becomes the job's typed failure; a transient one is retried by
//! the bus; an undecodable message is nacked until the dead-letter policy takes it, and the
//! dead-letter recorder stores it.
//!
//! Layout: [`registry`] (the functions, routes built from the steps' types, topics and
//! subscriptions), [`records`] (collections and the stored records), [`env`] (backends a step
//! uses), [`step`] (the step trait, its claim, the completion protocol and the bus handler),
//! [`steps`] (one module per stage), [`gates`] (the human gates: what a gate waits for,
//! approve and reject, the operator rounds of request changes and edit, the schedule of an
//! approved post), [`retry`] (an operator's retry of the step that failed a job), [`detail`]
//! (everything stored about one job, the operator's read view),
//! [`policy`] (the rules are `harmonia-policy`'s; the connectors `harmonia-connectors`), [`formats`] (JSON, WebVTT, SRT sources), [`imports`] (metrics,
//! trend signals and calendar files), [`planning`] (snapshots built from configuration and
//! calendar, frozen once), [`workspace`] (configuration versions: init, update, the current one
//! and a job's); `trace` makes a job's
//! exported spans one tree (each event is created in an exported span the consuming stage
//! continues).

pub mod activity;
pub mod clock;
pub mod detail;
pub mod engagement;
pub mod env;
pub mod flags;
pub mod formats;
pub mod gates;
pub mod imports;
pub mod planning;
pub mod policy;
pub mod progress;
pub mod records;
pub mod registry;
pub mod retry;
pub mod step;
pub mod steps;
mod trace;
pub mod workspace;

pub use env::Env;
