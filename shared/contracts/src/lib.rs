//! Typed contracts shared by every Harmonia function.
//!
//! Layout: [`ids`] (identifier newtypes parsed at the edge), [`error`] (the one error shape,
//! the stable code table and `AgentContractError`), [`roles`] (the eight agent roles),
//! [`trace`] (W3C trace context), [`event`] (the stage-event envelope and its topics),
//! [`tool`] (Nova's tool envelope), [`domain`] (a job's documents from source to verified
//! post), [`time`] (how times are written so that their string order is time order),
//! [`untrusted`] (the instruction detector, the crate `harmonia-detector`, re-exported: the scored
//! detector of instruction-like text in sources and drafts) and
//! [`schema`] (JSON Schema generation, drift check and validation), and [`body`] (bounded
//! reading of a body received from outside).
//!
//! Every serde type denies unknown fields; the checked-in schemas under `schemas/` are
//! regenerated with `cargo run -p harmonia-contracts --bin harmonia-schemas`.

/// Implements `JsonSchema` for `$name` as the fixed `$schema` (a `schemars::json_schema!`
/// object), named after the type: for the types whose serde form is written by hand (parsed
/// text, a bounded number), which no derive can describe. Defined before the modules so that
/// every one of them can use it.
macro_rules! fixed_schema {
    ($name:ident, $schema:tt) => {
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!($schema)
            }
        }
    };
}

pub mod body;
pub mod domain;
pub mod error;
pub mod event;
pub mod ids;
pub mod roles;
pub mod schema;
pub mod storage;
pub mod time;
pub mod tool;
pub mod trace;
/// The instruction detector, `harmonia-detector`: the source validation here marks what it
/// flags, and every crate that reads untrusted text reaches it through this name.
pub use harmonia_detector as untrusted;

#[cfg(test)]
mod names;

pub use error::{AgentContractError, Category, Code, Error, ErrorBody};
pub use roles::Role;
