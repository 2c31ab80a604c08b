//! The deterministic offline model: no network, every result `provenance: mock`.
//!
//! It is a real participant, not a canned reply: it reads the task the runtime sends, loads
//! its role's skill and references and calls its data tools through the same function-call
//! loop as Gemini (so traces are real), and derives a schema-valid output from its inputs —
//! Nimi quotes real transcript spans with their times, Ryan builds briefs from those angles,
//! Temi schedules from the snapshot it read, Noni writes platform-native copy citing real
//! evidence ids, Dara assesses all seven dimensions, Maya lays out the catalog it was given,
//! Nova answers from exactly what its one skill's tool returned.

mod engine;
mod roles;
mod sentences;

pub use engine::OfflineModel;
