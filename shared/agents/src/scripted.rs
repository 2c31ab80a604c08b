//! A model that replays a queue of prepared responses, for tests: malformed JSON, off-schema
//! outputs, invented evidence, wrong routing, disallowed tool calls, authority claims.

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;
use harmonia_contracts::domain::TokenUsage;
use harmonia_contracts::tool::Provenance;
use serde_json::Value;

use crate::model::{self, Model, ModelRequest, ModelResponse, Part};

/// Replays responses in order; records every request it saw.
#[derive(Debug, Default)]
pub struct ScriptedModel {
    queue: Mutex<VecDeque<Result<ModelResponse, model::Error>>>,
    seen: Mutex<Vec<ModelRequest>>,
}

impl ScriptedModel {
    /// An empty script.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queue a final text answer.
    pub fn text(self, text: impl Into<String>) -> Self {
        self.part(Part::Text(text.into()))
    }

    /// Queue a final JSON answer.
    pub fn json(self, value: Value) -> Self {
        self.text(value.to_string())
    }

    /// Queue one function call.
    pub fn call(self, name: &str, args: Value) -> Self {
        self.part(Part::FunctionCall { name: name.to_owned(), args })
    }

    /// Queue a grounded text answer with `(uri, title)` sources, each supporting the whole
    /// text (for the search child).
    pub fn grounded(self, text: &str, sources: &[(&str, &str)]) -> Self {
        let grounding = crate::model::Grounding {
            chunks: sources
                .iter()
                .map(|(uri, title)| crate::model::GroundingChunk { uri: (*uri).to_owned(), title: (*title).to_owned() })
                .collect(),
            supports: vec![crate::model::GroundingSupport {
                part: 0,
                start: 0,
                end: text.len(),
                text: Some(text.to_owned()),
                chunks: (0..sources.len()).collect(),
            }],
            queries: Vec::new(),
        };
        self.grounding(text, grounding)
    }

    /// Queue a text answer with exactly this grounding metadata (well-formed or not).
    pub fn grounding(self, text: &str, grounding: crate::model::Grounding) -> Self {
        if let Ok(mut q) = self.queue.lock() {
            q.push_back(Ok(ModelResponse {
                parts: vec![Part::Text(text.to_owned())],
                usage: TokenUsage { input_tokens: 10, output_tokens: 5 },
                grounding: Some(grounding),
            }));
        }
        self
    }

    /// Queue a failure.
    pub fn fail(self, error: model::Error) -> Self {
        if let Ok(mut q) = self.queue.lock() {
            q.push_back(Err(error));
        }
        self
    }

    fn part(self, part: Part) -> Self {
        if let Ok(mut q) = self.queue.lock() {
            q.push_back(Ok(ModelResponse {
                parts: vec![part],
                usage: TokenUsage { input_tokens: 10, output_tokens: 5 },
                grounding: None,
            }));
        }
        self
    }

    /// Requests seen so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

#[async_trait]
impl Model for ScriptedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    fn provenance(&self) -> Provenance {
        Provenance::Mock
    }

    fn provider(&self) -> &'static str {
        "harmonia.scripted"
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, model::Error> {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(request.clone());
        }
        self.queue.lock().map_err(|_| model::Error::Exhausted)?.pop_front().unwrap_or(Err(model::Error::Exhausted))
    }
}
