//! The agent runtime of Harmonia (DESIGN.md §4, `spec/agent-platform.md`).
//!
//! Deterministic code builds an [`InvocationSeed`] from authoritative state; the [`Runtime`]
//! opens a session keyed by workspace, user and job (stored through the storage interface),
//! runs the model loop — model → calls to allow-listed tools → results → final output —
//! validates the output against the role's JSON Schema and the deterministic checks, and
//! hands it back parsed into the role's output type ([`role::Role`]: `run_task::<Nimi>` returns
//! an `Analysis`), the session's event carrying it as a `state_delta` under the role's output
//! key. The session is deleted
//! after success and after failure; every invocation leaves one metadata-only activity record.
//! Failures are [`harmonia_contracts::AgentContractError`]s whose messages never contain model
//! text.
//!
//! Layout: [`model`] (the backend interface), [`gemini`] (Vertex AI and the Gemini API),
//! [`openai`] (OpenAI-compatible chat completions), [`wire`] (what HTTP providers share:
//! bounded bodies, typed failures, retries), [`offline`]
//! (deterministic, `provenance: mock`), [`scripted`] (replays responses for tests),
//! [`io`] (each role's typed input projection and output), [`a2ui`] (Maya's layouts as A2UI
//! v0.9 messages of Harmonia's catalog), [`role`] (the eight roles as types: input, output,
//! contract and validator), [`roles`] (their contracts as data), [`skills`] (skill folders and load-sequence rules), [`tools`] (read-only data tools),
//! [`research`] (verified-publication search, grounded web search), [`eligibility`] (the one
//! rule for verified performance and eligible memory),
//! [`validate`] (deterministic output checks), [`session`] and [`runtime`].

pub mod a2ui;
pub mod eligibility;
pub mod gemini;
pub mod io;
pub mod model;
pub mod offline;
pub mod openai;
pub mod research;
pub mod role;
pub mod roles;
pub mod runtime;
pub mod scripted;
pub mod session;
pub mod skills;
pub mod tools;
pub mod validate;
pub mod wire;

pub use role::Role;
pub use runtime::{Invocation, InvocationSeed, Runtime};

#[cfg(test)]
mod tests;
