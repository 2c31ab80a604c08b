//! `ask`: one question to Nova in the caller's workspace, answered only after the runtime's
//! validator accepted it, with the trace of what Nova loaded and called.

use harmonia_agents::io::{Answer, NovaInput};
use harmonia_agents::runtime::Step;
use harmonia_agents::skills::LoadEvent;
use harmonia_agents::{InvocationSeed, Runtime, role, runtime};
use harmonia_auth::Identity;
use harmonia_contracts::event::Stage;
use harmonia_contracts::ids::JobId;
use harmonia_contracts::trace::TraceParent;
use harmonia_contracts::{Code, Error};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Longest question, in characters.
pub const MAX_QUESTION_CHARS: usize = 2000;

/// One tool call as it happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Tool name.
    pub name: String,
    /// The exact envelope it returned.
    pub envelope: Value,
}

/// A validated answer with its trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Asked {
    /// The answer.
    pub answer: Answer,
    /// The one skill loaded.
    pub skill: Option<String>,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Evidence ids the answer cites.
    pub evidence_ids: Vec<String>,
}

/// Ask Nova a question in the caller's workspace.
pub async fn ask(runtime: &Runtime, who: &Identity, question: &str, trace: TraceParent) -> Result<Asked, Error> {
    let seed = seed(who, checked(question)?, trace);
    let invocation = runtime.invoke::<role::Nova>(&seed).await.map_err(refusal)?;
    let answer: Answer = invocation.output;
    Ok(Asked {
        skill: loaded_skill(&invocation.steps),
        tool_calls: tool_calls(&invocation.steps),
        evidence_ids: cited(&answer),
        answer,
    })
}

/// The trimmed question, 1-2000 characters; anything else is `invalid_request`.
pub fn checked(question: &str) -> Result<&str, Error> {
    let question = question.trim();
    if question.is_empty() || question.chars().count() > MAX_QUESTION_CHARS {
        return Err(Error::new(Code::InvalidRequest, "the question must be 1-2000 characters"));
    }
    Ok(question)
}

/// The invocation seed: Nova's only input is the question; each question is its own task.
fn seed(who: &Identity, question: &str, trace: TraceParent) -> InvocationSeed<NovaInput> {
    InvocationSeed {
        workspace: who.workspace.clone(),
        user: who.operator.clone(),
        job: JobId::generate(),
        stage: Stage::Operator,
        input: NovaInput { question: question.to_owned() },
        trace,
        budget: None,
    }
}

/// Why the runtime refused: the contract's code, or the state store's.
fn refusal(e: runtime::Error) -> Error {
    match e {
        runtime::Error::Contract(c) => Error::from_code(c.code),
        runtime::Error::Store(s) => Error::from(s),
    }
}

/// The skill Nova loaded (the runtime allows exactly one).
fn loaded_skill(steps: &[Step]) -> Option<String> {
    steps.iter().find_map(|s| match &s.event {
        LoadEvent::Skill(name) => Some(name.clone()),
        _ => None,
    })
}

/// Every data-tool call with the envelope it returned.
fn tool_calls(steps: &[Step]) -> Vec<ToolCall> {
    steps
        .iter()
        .filter_map(|s| match (&s.event, &s.result) {
            (LoadEvent::DataTool(name), Some(envelope)) => {
                Some(ToolCall { name: name.clone(), envelope: envelope.clone() })
            }
            _ => None,
        })
        .collect()
}

/// The distinct evidence ids the answer's claims cite, sorted.
fn cited(answer: &Answer) -> Vec<String> {
    let mut ids: Vec<String> = answer.claims.iter().flat_map(|c| c.evidence.iter().map(ToString::to_string)).collect();
    ids.sort();
    ids.dedup();
    ids
}
