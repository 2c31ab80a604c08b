//! The tool envelope of `spec/tool-contracts.md`.
//!
//! Every Nova tool call returns exactly `{"status","data","error","evidence"}`. The Rust type
//! makes impossible states unrepresentable: a success carries a data object and evidence and
//! no error; an error carries exactly one [`ErrorBody`], null data and no evidence. Parsing
//! (serde or [`ToolEnvelope::parse`]) refuses anything else, including unknown fields.

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::error::{Code, Error, ErrorBody};
use crate::ids::EvidenceId;

/// Where a result came from. Mock results can never be publication evidence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Provenance {
    /// A real backend, a real model, or a verified record.
    Live,
    /// The offline model or a simulated dependency.
    Mock,
    /// Written by a human operator (an edited draft version).
    Operator,
}

impl Provenance {
    /// Its name (the same as its serde name).
    pub fn as_str(self) -> &'static str {
        match self {
            Provenance::Live => "live",
            Provenance::Mock => "mock",
            Provenance::Operator => "operator",
        }
    }
}

/// Whether evidence backs one record (a story, a post) or only an aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceLevel {
    /// One record: may back a claim about that record.
    Record,
    /// A whole dataset: may back only aggregate claims.
    Dataset,
}

/// One citable evidence entry returned by a tool.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// The id an answer must cite exactly.
    #[serde(rename = "evidenceId")]
    pub evidence_id: EvidenceId,
    /// Record or dataset level.
    pub level: EvidenceLevel,
    /// Live or mock.
    pub provenance: Provenance,
}

/// The two statuses of a tool call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// The call succeeded.
    Success,
    /// The call failed with one typed error.
    Error,
}

/// A tool call's result; see the module docs for its invariants.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolEnvelope {
    /// A successful call.
    Success {
        /// The result object.
        data: Map<String, Value>,
        /// Evidence entries with unique ids.
        evidence: Vec<Evidence>,
    },
    /// A failed call with its one error.
    Error(ErrorBody),
}

impl ToolEnvelope {
    /// A success; refuses duplicate evidence ids.
    pub fn success(data: Map<String, Value>, evidence: Vec<Evidence>) -> Result<Self, Error> {
        check_unique(&evidence)?;
        Ok(Self::Success { data, evidence })
    }

    /// A failure.
    pub fn error(error: ErrorBody) -> Self {
        Self::Error(error)
    }

    /// The status.
    pub fn status(&self) -> ToolStatus {
        match self {
            Self::Success { .. } => ToolStatus::Success,
            Self::Error(_) => ToolStatus::Error,
        }
    }

    /// Evidence entries (always empty for an error).
    pub fn evidence(&self) -> &[Evidence] {
        match self {
            Self::Success { evidence, .. } => evidence,
            Self::Error(_) => &[],
        }
    }

    /// Parse from JSON text, refusing impossible states with `invalid_envelope`.
    pub fn parse(text: &str) -> Result<Self, Error> {
        serde_json::from_str(text).map_err(|_| Error::from_code(Code::InvalidEnvelope))
    }

    /// Parse from a JSON value, refusing impossible states with `invalid_envelope`.
    pub fn from_value(value: Value) -> Result<Self, Error> {
        serde_json::from_value(value).map_err(|_| Error::from_code(Code::InvalidEnvelope))
    }
}

fn check_unique(evidence: &[Evidence]) -> Result<(), Error> {
    let mut seen = HashSet::new();
    if evidence.iter().all(|e| seen.insert(&e.evidence_id)) {
        Ok(())
    } else {
        Err(Error::new(Code::InvalidEnvelope, "evidence ids must be unique within one envelope"))
    }
}

#[derive(Serialize)]
struct WireOut<'a> {
    status: ToolStatus,
    data: Option<&'a Map<String, Value>>,
    error: Option<&'a ErrorBody>,
    evidence: &'a [Evidence],
}

impl Serialize for ToolEnvelope {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Success { data, evidence } => {
                WireOut { status: ToolStatus::Success, data: Some(data), error: None, evidence }
            }
            Self::Error(error) => WireOut { status: ToolStatus::Error, data: None, error: Some(error), evidence: &[] },
        }
        .serialize(s)
    }
}

/// All four keys are required (`Option::deserialize` makes a missing key an error).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireIn {
    status: ToolStatus,
    #[serde(deserialize_with = "Option::deserialize")]
    data: Option<Value>,
    #[serde(deserialize_with = "Option::deserialize")]
    error: Option<ErrorBody>,
    evidence: Vec<Evidence>,
}

impl<'de> Deserialize<'de> for ToolEnvelope {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let wire = WireIn::deserialize(d)?;
        match (wire.status, wire.data, wire.error) {
            (ToolStatus::Success, Some(Value::Object(data)), None) => {
                Self::success(data, wire.evidence).map_err(|e| D::Error::custom(e.message))
            }
            (ToolStatus::Success, _, _) => {
                Err(D::Error::custom("a success requires an object `data` and a null `error`"))
            }
            (ToolStatus::Error, None, Some(error)) if wire.evidence.is_empty() => Ok(Self::Error(error)),
            (ToolStatus::Error, _, _) => {
                Err(D::Error::custom("an error requires one `error`, a null `data` and empty `evidence`"))
            }
        }
    }
}

impl JsonSchema for ToolEnvelope {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ToolEnvelope".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let evidence = generator.subschema_for::<Evidence>();
        let error = generator.subschema_for::<ErrorBody>();
        schemars::json_schema!({
            "description": "A Nova tool result: success (data, evidence, null error) or error (one error, null data, no evidence).",
            "oneOf": [
                {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["status", "data", "error", "evidence"],
                    "properties": {
                        "status": {"const": "success"},
                        "data": {"type": "object"},
                        "error": {"type": "null"},
                        "evidence": {"type": "array", "items": evidence, "uniqueItems": true}
                    }
                },
                {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["status", "data", "error", "evidence"],
                    "properties": {
                        "status": {"const": "error"},
                        "data": {"type": "null"},
                        "error": error,
                        "evidence": {"type": "array", "maxItems": 0}
                    }
                }
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(id: &str, level: EvidenceLevel) -> Evidence {
        Evidence { evidence_id: id.parse().expect("id"), level, provenance: Provenance::Mock }
    }

    #[test]
    fn success_and_error_round_trip_with_exactly_four_keys() {
        let ok = ToolEnvelope::success(Map::new(), vec![ev("ev-1", EvidenceLevel::Record)]).expect("ok");
        let text = serde_json::to_value(&ok).expect("ser");
        assert_eq!(
            text,
            json!({"status":"success","data":{},"error":null,"evidence":[{"evidenceId":"ev-1","level":"record","provenance":"mock"}]})
        );
        assert_eq!(ToolEnvelope::from_value(text).ok(), Some(ok));

        let err = ToolEnvelope::error(ErrorBody::new(Code::NotFound, "No such job."));
        let text = serde_json::to_value(&err).expect("ser");
        assert_eq!(
            text,
            json!({"status":"error","data":null,"error":{"code":"not_found","category":"not_found","message":"No such job.","retryable":false},"evidence":[]})
        );
        assert_eq!(ToolEnvelope::from_value(text).ok(), Some(err));
    }

    #[test]
    fn impossible_states_are_refused_with_a_typed_error() {
        let error = json!({"code":"not_found","category":"not_found","message":"x","retryable":false});
        let cases = [
            json!({"status":"success","data":{},"error":error,"evidence":[]}),
            json!({"status":"success","data":null,"error":null,"evidence":[]}),
            json!({"status":"success","data":[1],"error":null,"evidence":[]}),
            json!({"status":"success","error":null,"evidence":[]}),
            json!({"status":"success","data":{},"evidence":[]}),
            json!({"status":"success","data":{},"error":null,"evidence":[],"extra":1}),
            json!({"status":"error","data":{},"error":error,"evidence":[]}),
            json!({"status":"error","data":null,"error":null,"evidence":[]}),
            json!({"status":"error","data":null,"error":error,"evidence":[{"evidenceId":"e","level":"record","provenance":"live"}]}),
            json!({"status":"maybe","data":{},"error":null,"evidence":[]}),
            json!({"status":"success","data":{},"error":null,"evidence":[
                {"evidenceId":"e","level":"record","provenance":"live"},
                {"evidenceId":"e","level":"dataset","provenance":"live"}]}),
        ];
        for case in cases {
            let err = ToolEnvelope::from_value(case.clone()).expect_err(&case.to_string());
            assert_eq!(err.code, Code::InvalidEnvelope, "{case}");
        }
    }
}
