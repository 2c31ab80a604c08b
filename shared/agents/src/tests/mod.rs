//! Runtime tests over a real SQLite store and the repository's skills.

mod eligibility;
mod fixture;
mod gemini_stub;
mod offline_run;
mod openai_stub;
mod rejections;
mod repairs;
mod research;
mod semantics;

use fixture::Fixture;
