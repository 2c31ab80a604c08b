//! What a tool call ends in: a [`Found`] result or a [`Fail`]ure, and the one envelope both
//! become.

use harmonia_agents::tools::ToolFailure;
use harmonia_contracts::ids::EvidenceId;
use harmonia_contracts::tool::{Evidence, EvidenceLevel, Provenance, ToolEnvelope};
use harmonia_contracts::{Code, ErrorBody};
use serde_json::{Map, Value};

/// A tool failure on its way into an envelope.
#[derive(Debug)]
pub(crate) struct Fail(pub(crate) ErrorBody);

impl Fail {
    /// A failure with `code` and a message specific to the tool.
    pub(crate) fn code(code: Code, message: &'static str) -> Self {
        Fail(ErrorBody::new(code, message))
    }

    /// The data source could not be read; `transient` decides whether a retry may help.
    pub(crate) fn unavailable(transient: bool) -> Self {
        Fail(
            ErrorBody::new(Code::DependencyUnavailable, "The data source could not be read.").with_retryable(transient),
        )
    }

    /// A `limit` outside 1-10.
    pub(crate) fn out_of_range() -> Self {
        Fail::code(Code::OutOfRange, "The limit must be an integer from 1 to 10.")
    }

    /// Arguments that do not match the tool's declaration.
    pub(crate) fn invalid_arguments() -> Self {
        Fail::code(Code::InvalidRequest, "The arguments do not match the tool's declaration.")
    }

    /// A defect in the tool itself.
    pub(crate) fn internal(message: &'static str) -> Self {
        Fail::code(Code::Internal, message)
    }
}

impl From<harmonia_store::Error> for Fail {
    fn from(e: harmonia_store::Error) -> Self {
        Fail::unavailable(e.retryable())
    }
}

/// A successful call: its data object and the evidence it may be cited by.
#[derive(Debug, Default)]
pub(crate) struct Found {
    pub(crate) data: Map<String, Value>,
    pub(crate) evidence: Vec<Evidence>,
}

impl Found {
    /// A result with these data fields and no evidence yet.
    pub(crate) fn new<const N: usize>(fields: [(&str, Value); N]) -> Self {
        let data = fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        Found { data, evidence: Vec::new() }
    }

    /// Add evidence.
    pub(crate) fn cite(mut self, evidence: impl IntoIterator<Item = Evidence>) -> Self {
        self.evidence.extend(evidence);
        self
    }
}

/// Evidence for one record. An id that cannot be an evidence id (a prefixed record id grown
/// too long) fails the call rather than leaving the record silently uncitable.
pub(crate) fn record(id: &str, provenance: Provenance) -> Result<Evidence, Fail> {
    let evidence_id: EvidenceId =
        id.parse().map_err(|_| Fail::internal("A record id is too long to be cited as evidence."))?;
    Ok(Evidence { evidence_id, level: EvidenceLevel::Record, provenance })
}

/// Evidence for a whole dataset, mock if any item in it is mock.
pub(crate) fn dataset(id: &'static str, any_mock: bool) -> Result<Evidence, Fail> {
    let evidence_id: EvidenceId = id.parse().map_err(|_| Fail::internal("A dataset evidence id is malformed."))?;
    let provenance = if any_mock { Provenance::Mock } else { Provenance::Live };
    Ok(Evidence { evidence_id, level: EvidenceLevel::Dataset, provenance })
}

/// The envelope of a call. A result with duplicate evidence ids is a defect of the tool: it is
/// logged and answered as an `internal` error, never passed on as an invalid envelope.
pub(crate) fn envelope(tool: &'static str, result: Result<Found, Fail>) -> Result<Value, ToolFailure> {
    let envelope = match result {
        Ok(Found { data, evidence }) => match ToolEnvelope::success(data, evidence) {
            Ok(success) => success,
            Err(e) => {
                tracing::error!(tool, code = %e.code, "a tool produced duplicate evidence ids");
                ToolEnvelope::error(ErrorBody::new(Code::Internal, "The tool produced duplicate evidence."))
            }
        },
        Err(Fail(body)) => ToolEnvelope::error(body),
    };
    // Serialising maps of JSON values cannot fail; were it to, the runtime reports the tool
    // as unavailable rather than answering with an invented value.
    serde_json::to_value(envelope).map_err(|_| ToolFailure::Unavailable)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn duplicate_evidence_is_an_internal_error_not_a_broken_envelope() {
        let twice = record("job-job_1", Provenance::Live).expect("evidence");
        let found = Found::new([("count", json!(2))]).cite([twice.clone(), twice]);
        let out = envelope("get_operator_feed", Ok(found)).expect("serialises");
        assert_eq!(out["status"], "error");
        assert_eq!(out["error"]["code"], "internal");
        assert_eq!(out["evidence"], json!([]));
    }

    #[test]
    fn an_uncitable_record_fails_instead_of_vanishing() {
        let long = format!("metric-{}", "a".repeat(128));
        assert_eq!(record(&long, Provenance::Live).map_err(|f| f.0.code).err(), Some(Code::Internal));
        let ok = record("metric-p1", Provenance::Mock).expect("short id");
        assert_eq!((ok.evidence_id.as_str(), ok.level), ("metric-p1", EvidenceLevel::Record));
    }
}
