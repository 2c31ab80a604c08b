use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Timestamp;
use crate::Role;
use crate::ids::{EvidenceId, JobId};
use crate::tool::Provenance;

/// One accepted result of a grounded web search, persisted with the output of the invocation
/// that asked for it (Nimi's analysis, Noni's draft), so that policy can resolve and check a
/// `web-*` evidence id against what the search actually returned.
///
/// A result is one https page of the search's grounding metadata together with the spans of
/// the grounded answer that the metadata says it supports — and nothing else: a page no span
/// rests on is not evidence. The id is derived from the page and those spans
/// ([`ResearchEvidence::id_for`]), so the same result found twice is one record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResearchEvidence {
    /// `web-` and 16 hex digits.
    pub evidence_id: EvidenceId,
    /// The job the search served.
    pub job: JobId,
    /// The role whose invocation ran it (`nimi` or `noni`).
    pub role: Role,
    /// The query, built by deterministic code from the request's own fields (the source's
    /// title, the brief's angle, key message or audience), never free model text.
    #[schemars(length(min = 1, max = 200))]
    pub query: String,
    /// The page (https).
    #[schemars(length(min = 9, max = 2048))]
    pub uri: String,
    /// Its title, as the search reported it.
    #[schemars(length(max = 300))]
    pub title: String,
    /// The spans of the grounded answer this page supports, exactly as they appear in it.
    #[schemars(length(min = 1, max = 20))]
    pub supported: Vec<String>,
    /// Live (a real search) or mock (the offline model).
    pub provenance: Provenance,
    /// When the search ran.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub retrieved_at: Timestamp,
}

impl ResearchEvidence {
    /// The evidence id of `uri` supporting `supported`: the same page with the same spans is
    /// always the same id.
    pub fn id_for(uri: &str, supported: &[String]) -> EvidenceId {
        use sha2::Digest as _;
        let mut hash = sha2::Sha256::new();
        hash.update(uri.as_bytes());
        for span in supported {
            // A separator no span contains keeps ["ab"] and ["a", "b"] apart.
            hash.update([0u8]);
            hash.update(span.as_bytes());
        }
        EvidenceId::stable(&format!("web-{}", &hex::encode(hash.finalize())[..16]))
    }

    /// What the evidence says, for the grounding rules: its supported spans, one per line.
    pub fn text(&self) -> String {
        self.supported.join("\n")
    }
}
