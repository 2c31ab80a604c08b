//! Cross-crate end-to-end tests: one binary, one module per area.

mod events;
mod pipeline;
