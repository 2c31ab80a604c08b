use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Timestamp;
use crate::event::Pass;
use crate::ids::DraftId;
use crate::tool::Provenance;

/// The seven Dara dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    /// Is every statement traceable to cited evidence?
    Grounding,
    /// Are the claims accurate, proportionate and cited?
    Claims,
    /// Does the piece have a clear shape?
    Structure,
    /// Is it easy to read and understand?
    Clarity,
    /// Does it fit the brief, the voice and the audience?
    BriefVoiceAudienceFit,
    /// Does it work on its platform, with a usable call to action?
    PlatformCtaUsability,
    /// Is it safe and inclusive?
    SafetyInclusion,
}

one_to_five!(
    /// A 1–5 score.
    Score,
    "score"
);

/// One dimension's assessment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Assessment {
    /// 1 (poor) to 5 (excellent).
    pub score: Score,
    /// Why.
    #[schemars(length(min = 1, max = 600))]
    pub rationale: String,
}

/// Exactly the seven assessments: one field per dimension, so none can be missing or doubled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Assessments {
    /// Grounding.
    pub grounding: Assessment,
    /// Claims.
    pub claims: Assessment,
    /// Structure.
    pub structure: Assessment,
    /// Clarity.
    pub clarity: Assessment,
    /// Brief, voice and audience fit.
    pub brief_voice_audience_fit: Assessment,
    /// Platform and CTA usability.
    pub platform_cta_usability: Assessment,
    /// Safety and inclusion.
    pub safety_inclusion: Assessment,
}

/// Issue severity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Polish.
    Low,
    /// Should fix.
    Medium,
    /// Must fix before publishing.
    High,
}

/// One bounded correction issue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewIssue {
    /// Dimension it belongs to.
    pub dimension: Dimension,
    /// Severity.
    pub severity: Severity,
    /// What is wrong.
    #[schemars(length(min = 1, max = 500))]
    pub problem: String,
    /// What would fix it (direction, not rewritten copy).
    #[schemars(length(min = 1, max = 500))]
    pub fix: String,
}

/// Dara's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Good to go to policy.
    Pass,
    /// Needs the single revision (or a human, after pass 2).
    Revise,
}

/// Dara's complete review of one draft.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Review {
    /// The draft reviewed.
    pub draft: DraftId,
    /// Its pass.
    pub pass: Pass,
    /// Verdict.
    pub verdict: Verdict,
    /// The seven assessments.
    pub assessments: Assessments,
    /// Bounded correction issues.
    #[schemars(length(max = 8))]
    pub issues: Vec<ReviewIssue>,
    /// Live or mock.
    pub provenance: Provenance,
}

impl Review {
    /// Whether any high-severity issue is open.
    pub fn has_high_severity(&self) -> bool {
        self.issues.iter().any(|i| i.severity == Severity::High)
    }
}

/// A deterministic policy rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum PolicyRule {
    /// The platform's length limit.
    PlatformLength,
    /// The platform's link-count limit.
    LinkCount,
    /// Every claim cites evidence that resolves.
    EvidenceResolves,
    /// Mock evidence is refused in production mode.
    NoMockEvidenceInProduction,
    /// No banned phrase.
    BannedPhrase,
    /// Links only to allow-listed hosts; no IP address, user info or disguised host.
    LinkAllowList,
    /// No open high-severity Dara issue.
    NoOpenHighSeverityIssue,
    /// The draft's platform is a channel of the workspace, and that channel's connector is the
    /// one this deployment publishes through.
    ChannelConfigured,
    /// Every figure (number, percentage, amount, measure, date, time) of the body appears in the
    /// evidence the draft cites with the same value, magnitude, unit, sign, negation and range,
    /// read where the evidence was said.
    FiguresGrounded,
    /// Every quotation of the body is an exact span of the evidence the draft cites.
    QuotesExact,
    /// No quote the draft rests on (a cited moment, a quotation of the body) begins or ends
    /// where it cuts a figure off its magnitude, unit, sign, negation or range, or inside its
    /// number.
    QuoteContext,
    /// Every link of the body is the workspace's call-to-action link or appears in the evidence
    /// the draft cites.
    LinkGrounded,
    /// The body holds no markup: no HTML element, event-handler attribute or `javascript:`
    /// address.
    NoMarkup,
    /// No line of the body reads as an order to the system (the instruction detector).
    NoInstructionText,
    /// Nothing mock (cited evidence or the draft) goes out through a connector other than the
    /// sandbox, in any workspace mode.
    NoMockEvidenceToLiveConnector,
}

impl PolicyRule {
    /// The snake_case name (the same as its serde name).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One failed rule, with safe detail (never the draft text).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyViolation {
    /// The rule.
    pub rule: PolicyRule,
    /// Safe detail, e.g. "312 of 280 weighted characters".
    #[schemars(length(min = 1, max = 300))]
    pub detail: String,
}

/// Passed or blocked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PolicyOutcome {
    /// Every rule held.
    Passed,
    /// At least one rule failed.
    Blocked,
}

/// The deterministic policy result for one exact draft version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyResult {
    /// Draft.
    pub draft: DraftId,
    /// The version checked.
    pub content_hash: String,
    /// Outcome (blocked exactly when there are violations).
    pub outcome: PolicyOutcome,
    /// Failed rules.
    pub violations: Vec<PolicyViolation>,
    /// When.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub checked_at: Timestamp,
}
