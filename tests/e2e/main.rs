//! Cross-crate end-to-end tests: one binary, one module per area. The areas that need what
//! `infra/test.sh` provides (the Firestore, Pub/Sub and Cloud Storage emulators, the AT
//! Protocol PDS, Chromium, or the `harmonia` and function binaries it builds first, which a
//! test cannot build while `cargo test` holds the build directory) compile with the feature
//! `e2e`, which that script turns on; a plain `cargo test` runs the rest in this process alone.

#[cfg(feature = "e2e")]
mod channels;
#[cfg(feature = "e2e")]
mod cli;
#[cfg(feature = "e2e")]
mod cloud;
#[cfg(feature = "e2e")]
mod console;
#[cfg(feature = "e2e")]
mod engagement;
#[cfg(feature = "e2e")]
mod events;
#[cfg(feature = "e2e")]
mod models;
#[cfg(feature = "e2e")]
mod operator_loop;
mod pipeline;
#[cfg(feature = "e2e")]
mod repairs;
#[cfg(feature = "e2e")]
mod said;
#[cfg(feature = "e2e")]
mod startup;
#[cfg(feature = "e2e")]
mod telemetry;
mod terraform;
