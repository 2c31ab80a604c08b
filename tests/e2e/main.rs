//! Cross-crate end-to-end tests: one binary, one module per area.

mod channels;
mod cli;
mod cloud;
mod console;
mod events;
mod models;
mod operator_loop;
mod pipeline;
mod repairs;
mod said;
mod startup;
mod telemetry;
mod terraform;
