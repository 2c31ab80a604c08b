//! The offline model's conversation loop: read the task, load skills, call tools, answer.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use harmonia_contracts::Role;
use harmonia_contracts::domain::TokenUsage;
use harmonia_contracts::tool::Provenance;
use serde_json::{Value, json};

use super::roles;
use crate::model::{self, Model, ModelRequest, ModelResponse, Part, Speaker};

/// The offline model.
#[derive(Clone, Copy, Debug, Default)]
pub struct OfflineModel;

/// What the conversation so far tells the offline model.
pub(crate) struct Conversation<'a> {
    /// The runtime's task object (`{"task", "input"}`).
    pub(crate) task: Arc<Value>,
    /// Function responses received, in order: (name, response).
    pub(crate) results: Vec<(&'a str, &'a Value)>,
}

impl<'a> Conversation<'a> {
    fn read(request: &'a ModelRequest) -> Result<Self, model::Error> {
        let first = request.turns.first().ok_or(model::Error::Refused("empty conversation"))?;
        let task = first
            .parts
            .iter()
            .find_map(|p| if let Part::Text(t) = p { parsed(t) } else { None })
            .ok_or(model::Error::Refused("no task"))?;
        let results = request
            .turns
            .iter()
            .filter(|t| t.speaker == Speaker::User)
            .flat_map(|t| &t.parts)
            .filter_map(|p| match p {
                Part::FunctionResponse { name, response } => Some((name.as_str(), response)),
                _ => None,
            })
            .collect();
        Ok(Self { task, results })
    }

    /// The role input.
    pub(crate) fn input(&self) -> &Value {
        &self.task["input"]
    }

    /// How many function responses have come back.
    pub(crate) fn done(&self) -> usize {
        self.results.len()
    }

    /// The last response of tool `name`.
    pub(crate) fn result(&self, name: &str) -> Option<&Value> {
        self.results.iter().rev().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }
}

/// `text` parsed as JSON. Every turn of a conversation repeats its first message, the task
/// with its whole input (a transcript, a plan): the last few parsed are kept (those of at most
/// `KEPT_BYTES`: a long source's is parsed each turn rather than held), and a text equal to
/// one of them is not parsed again.
fn parsed(text: &str) -> Option<Arc<Value>> {
    const KEPT: usize = 8;
    const KEPT_BYTES: usize = 256 * 1024;
    if text.len() > KEPT_BYTES {
        return serde_json::from_str::<Value>(text).ok().map(Arc::new);
    }
    static RECENT: Mutex<VecDeque<(String, Arc<Value>)>> = Mutex::new(VecDeque::new());
    if let Ok(recent) = RECENT.lock()
        && let Some((_, value)) = recent.iter().find(|(seen, _)| seen == text)
    {
        return Some(value.clone());
    }
    let value = Arc::new(serde_json::from_str::<Value>(text).ok()?);
    if let Ok(mut recent) = RECENT.lock() {
        if recent.len() == KEPT {
            recent.pop_front();
        }
        recent.push_back((text.to_owned(), value.clone()));
    }
    Some(value)
}

/// The next step: a function call, or the final output.
pub(crate) enum Step {
    Call(&'static str, Value),
    Final(Value),
}

/// Calls to make first (in order), then the final output.
pub(crate) fn script(
    calls: Vec<(&'static str, Value)>,
    conversation: &Conversation<'_>,
    finish: impl FnOnce() -> Result<Value, model::Error>,
) -> Result<Step, model::Error> {
    match calls.into_iter().nth(conversation.done()) {
        Some((name, args)) => Ok(Step::Call(name, args)),
        None => finish().map(Step::Final),
    }
}

/// The calls that load `skill` and then each of its `references`, in order.
pub(crate) fn load_skill(skill: &str, references: &[&str]) -> Vec<(&'static str, Value)> {
    let references =
        references.iter().map(|reference| ("load_reference", json!({ "skill": skill, "reference": reference })));
    std::iter::once(("load_skill", json!({ "name": skill }))).chain(references).collect()
}

/// A mock grounded answer: one sentence saying no search ran, resting on one reserved-domain
/// page (clearly not a real one), with grounding metadata that validates like a real
/// search's.
fn grounded(request: &ModelRequest) -> ModelResponse {
    let query: String = request
        .turns
        .iter()
        .flat_map(|t| &t.parts)
        .filter_map(|p| if let Part::Text(t) = p { Some(t.as_str()) } else { None })
        .collect();
    let slug: String = query.to_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let answer = format!("Offline mode: no web search ran for \"{query}\".");
    ModelResponse {
        usage: TokenUsage { input_tokens: tokens(&query), output_tokens: 12 },
        grounding: Some(crate::model::Grounding {
            chunks: vec![crate::model::GroundingChunk {
                uri: format!("https://search.example.invalid/{slug}"),
                title: "Mock search result".into(),
            }],
            supports: vec![crate::model::GroundingSupport {
                part: 0,
                start: 0,
                end: answer.len(),
                text: Some(answer.clone()),
                chunks: vec![0],
            }],
            queries: vec![query],
        }),
        parts: vec![Part::Text(answer)],
    }
}

/// About four bytes a token, as a rough estimate of what a real model would bill.
fn tokens(text: &str) -> u32 {
    bytes_to_tokens(text.len())
}

fn bytes_to_tokens(bytes: usize) -> u32 {
    u32::try_from(bytes / 4 + 1).unwrap_or(u32::MAX)
}

/// [`tokens`] of `value` as JSON text, measured without writing the text out.
fn value_tokens(value: &Value) -> u32 {
    bytes_to_tokens(json_len(value))
}

/// The length in bytes of `value` written as compact JSON (as `serde_json::to_string` writes
/// it), computed by walking it: the model counts every earlier turn on every call, and a loaded
/// skill's text is long.
fn json_len(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => number_len(n),
        Value::String(s) => string_len(s),
        Value::Array(items) => 2 + items.len().saturating_sub(1) + items.iter().map(json_len).sum::<usize>(),
        Value::Object(map) => {
            // `"key":value` for each entry, commas between them.
            2 + map.len().saturating_sub(1) + map.iter().map(|(k, v)| string_len(k) + 1 + json_len(v)).sum::<usize>()
        }
    }
}

/// The length of `n` as serde_json writes it.
fn number_len(n: &serde_json::Number) -> usize {
    /// Counts the bytes written to it.
    struct Length(usize);
    impl std::io::Write for Length {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut length = Length(0);
    // Writing to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut length, n);
    length.0
}

/// The length of `s` as a JSON string: its quotes, its bytes, and what escaping adds. JSON
/// escapes `"`, the backslash and the control characters below U+0020: `\b`, `\f`, `\n`, `\r` and `\t`
/// take two bytes, the others six (`\u00XX`). The bytes are read 32 at a time, without a branch
/// per byte, so the compiler does them in vector registers.
fn string_len(s: &str) -> usize {
    /// What escaping adds to `byte`: 1, 5 or nothing.
    fn extra(byte: u8) -> u8 {
        let control = u8::from(byte < 0x20);
        let short = u8::from(byte == 0x08)
            | u8::from(byte == 0x0c)
            | u8::from(byte == b'\n')
            | u8::from(byte == b'\r')
            | u8::from(byte == b'\t');
        let quoted = u8::from(byte == b'"') | u8::from(byte == b'\\');
        // A short escape is a control character too: 5 - 4.
        control * 5 - short * 4 + quoted
    }
    let bytes = s.as_bytes();
    let mut chunks = bytes.chunks_exact(32);
    let mut escaped = 0;
    for chunk in &mut chunks {
        // At most 5 × 32 = 160: the sum fits a byte.
        escaped += usize::from(chunk.iter().fold(0u8, |sum, b| sum + extra(*b)));
    }
    escaped += chunks.remainder().iter().map(|b| usize::from(extra(*b))).sum::<usize>();
    bytes.len() + 2 + escaped
}

#[async_trait]
impl Model for OfflineModel {
    fn name(&self) -> &str {
        "offline"
    }

    fn provenance(&self) -> Provenance {
        Provenance::Mock
    }

    fn provider(&self) -> &'static str {
        "harmonia.offline"
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, model::Error> {
        if request.grounded_search {
            return Ok(grounded(request));
        }
        let conversation = Conversation::read(request)?;
        let step = match request.role {
            Role::Harmonia => roles::harmonia(&conversation),
            Role::Nimi => roles::nimi(&conversation),
            Role::Ryan => roles::ryan(&conversation),
            Role::Temi => roles::temi(&conversation),
            Role::Noni => roles::noni(&conversation),
            Role::Dara => roles::dara(&conversation),
            Role::Maya => roles::maya(&conversation),
            Role::Nova => roles::nova(&conversation),
        }?;
        let input_tokens = request
            .turns
            .iter()
            .flat_map(|t| &t.parts)
            .map(|p| match p {
                Part::Text(t) => tokens(t),
                Part::FunctionCall { args, .. } => value_tokens(args),
                Part::FunctionResponse { response, .. } => value_tokens(response),
            })
            .sum::<u32>()
            .saturating_add(tokens(&request.system_instruction));
        let part = match step {
            Step::Call(name, args) => Part::FunctionCall { name: name.to_owned(), args },
            Step::Final(value) => Part::Text(value.to_string()),
        };
        let output_tokens = match &part {
            Part::Text(t) => tokens(t),
            Part::FunctionCall { args, .. } => value_tokens(args),
            Part::FunctionResponse { .. } => 0,
        };
        Ok(ModelResponse { parts: vec![part], usage: TokenUsage { input_tokens, output_tokens }, grounding: None })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::json_len;

    fn any_json() -> impl Strategy<Value = Value> {
        // Every character class escaping treats differently, many times over.
        let text = prop_oneof![
            "\\PC*",
            "[\\x00-\\x1f\"\\\\a-z\\x7f é→😀]{0,40}",
            proptest::collection::vec(any::<char>(), 0..24).prop_map(|c| c.into_iter().collect::<String>()),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            text.clone().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map(text.clone(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_measured_length_is_the_length_of_the_written_json(value in any_json()) {
            let written = serde_json::to_string(&value).expect("a value writes");
            prop_assert_eq!(json_len(&value), written.len(), "{}", written);
        }
    }

    #[test]
    fn every_byte_that_json_escapes_is_counted_wherever_it_falls_in_a_word() {
        for byte in 0u8..0x80 {
            for at in 0..17 {
                let mut text = "x".repeat(17);
                text.replace_range(at..=at, std::str::from_utf8(&[byte]).expect("ascii"));
                let value = Value::String(text);
                let written = serde_json::to_string(&value).expect("a value writes");
                assert_eq!(json_len(&value), written.len(), "byte {byte:#04x} at {at}");
            }
        }
    }
}
