use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{EvidenceId, FactId};
use crate::tool::Provenance;

/// An exact evidence moment: a quote that is an exact span of one utterance of the transcript
/// (the speaker's continuous speech, which may cross cues: [`super::Speech`]), with the time
/// range of the cues it touches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Moment {
    /// The id claims cite.
    pub evidence_id: EvidenceId,
    /// Exact transcript text.
    #[schemars(length(min = 1, max = 1000))]
    pub quote: String,
    /// Start of the first cue the quote touches, ms.
    pub start_ms: u64,
    /// End of the last cue it touches, ms.
    pub end_ms: u64,
}

impl Moment {
    /// The longest quote, in characters (the schema's bound).
    pub const MAX_QUOTE_CHARS: usize = 1000;
}

/// The four kinds of qualified angle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AngleKind {
    /// Grounded in what the source itself says or shows.
    Source,
    /// Grounded in request-bound public context.
    Context,
    /// Grounded in verified performance of earlier posts.
    Performance,
    /// Grounded in eligible memory-bank facts.
    Memory,
}

/// A qualified angle on the source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Angle {
    /// Which kind of grounding it has.
    pub kind: AngleKind,
    /// Short name.
    #[schemars(length(min = 1, max = 200))]
    pub title: String,
    /// Why it is worth telling.
    #[schemars(length(min = 1, max = 1000))]
    pub rationale: String,
    /// Evidence moments (or verified records) it rests on.
    #[schemars(length(min = 1, max = 20))]
    pub evidence: Vec<EvidenceId>,
    /// Memory facts used, for `memory` angles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20))]
    pub facts: Vec<FactId>,
}

/// Nimi's accepted analysis of one source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Analysis {
    /// Exact evidence moments.
    #[schemars(length(min = 1, max = 50))]
    pub moments: Vec<Moment>,
    /// Qualified angles.
    #[schemars(length(min = 1, max = 20))]
    pub angles: Vec<Angle>,
    /// Live or mock.
    pub provenance: Provenance,
}
