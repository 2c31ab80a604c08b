//! Everything stored about one job, gathered into one read view ([`JobDetail`]): what the
//! operator needs to see before a decision — the source, Nimi's moments, Ryan's strategy with
//! its evidence quoted, Temi's plan, every draft exactly as it would be posted with its
//! platform count, Dara's reviews, the policy results, the version awaiting a decision, the
//! decisions taken and the publication. `harmonia show` and `GET /v1/jobs/{job}/detail` both
//! print this; neither reads a record this module does not.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use harmonia_contracts::domain::{ActivityRecord, Operation};
use harmonia_contracts::domain::{
    Analysis, Angle, Approval, ApprovalSubject, Brief, Draft, Job, LanguageTag, Moment, Plan, PlanItem, Platform,
    PolicyOutcome, PolicyResult, PolicyRule, Publication, ResearchEvidence, Review, Source, WorkspaceConfig,
};
use harmonia_contracts::event::{Pass, Round};
use harmonia_contracts::ids::{BriefId, DraftId, EvidenceId, JobId, PlanItemId, WorkspaceId};
use harmonia_contracts::tool::Provenance;
use harmonia_contracts::{Error, Role};
use harmonia_store::{Collection, Document};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::Env;
use crate::flags::near;
pub use crate::flags::{Flag, NearFlag, flags};
use crate::records::{
    ANALYSES, AnalysisRecord, DRAFTS, PLANS, POLICY_RESULTS, PUBLICATIONS, PlanRecord, REVIEWS, SOURCE_QUOTES,
    STRATEGIES, STRATEGY_VERSIONS, SourceQuote, StrategyRecord, doc_id, strategy_version_id,
};
use crate::steps::every_draft_id;

/// How many hexadecimal characters of a version `status` and `show` print: enough to be
/// unique in practice and accepted wherever a version is named.
pub const VERSION_PREFIX_CHARS: usize = 12;

/// One job and everything stored about it. Each stage the job has not reached is `null` (or
/// an empty list); the JSON keys are stable.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobDetail {
    /// The job: status, configuration version, failure.
    pub job: Job,
    /// What the source is (not its whole transcript).
    pub source: Option<SourceSummary>,
    /// Every span of the source flagged at ingest, with its text, time, cues and why: what the
    /// human gate must see, since none of it can become evidence or a line of a post.
    pub flags: Vec<Flag>,
    /// Nimi's moments and angles.
    pub analysis: Option<AnalysisDetail>,
    /// Ryan's current strategy, its version and its briefs with their evidence quoted.
    pub strategy: Option<StrategyDetail>,
    /// Every strategy version, the original first, then one per operator round.
    pub strategy_versions: Vec<StrategyDetail>,
    /// Temi's plan, every item.
    pub plan: Option<Plan>,
    /// The plan item deterministic code selected for drafting.
    pub selected_item: Option<PlanItem>,
    /// Every draft version, in the order they were written: by round, then pass.
    pub drafts: Vec<DraftDetail>,
    /// Dara's review of each reviewed draft version, in the same order (an operator's edit has
    /// none).
    pub reviews: Vec<Review>,
    /// The deterministic policy result of each checked draft version, in the same order.
    pub policy: Vec<PolicyDetail>,
    /// The version a decision must name now, when the job waits for one.
    pub awaiting: Option<Awaiting>,
    /// Every human decision, in the order taken: who, when, which version, what feedback.
    pub decisions: Vec<Approval>,
    /// The publication of the approved draft: claim, receipt and verification.
    pub publication: Option<Publication>,
    /// Every retry of a failed step, oldest first: the failure it cleared, who asked, when.
    pub retries: Vec<crate::retry::Retry>,
    /// What the job has cost in model use so far, per role.
    pub model_use: Vec<RoleUsage>,
    /// The job's token budget (`[model] max_tokens_per_job`) and what its model calls took,
    /// when its configuration sets one.
    pub budget: Option<harmonia_agents::runtime::TokenBudget>,
}

/// One role's model use in a job: its invocations (routing, specialist work and grounded
/// searches; tool calls make none), the model calls they made, and their tokens.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleUsage {
    /// The role.
    pub role: Role,
    /// Invocations.
    pub invocations: u32,
    /// Of those, the ones that failed (a model error, or an output the runtime refused): their
    /// calls and tokens are counted too, since the provider counted them.
    pub failed: u32,
    /// Model calls (each turn of an invocation's loop).
    pub model_calls: u32,
    /// Corrective turns the runtime gave when an answer missed the role's contract.
    pub repairs: u32,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
}

impl RoleUsage {
    /// `role` having used nothing yet.
    pub fn none(role: Role) -> Self {
        Self { role, invocations: 0, failed: 0, model_calls: 0, repairs: 0, input_tokens: 0, output_tokens: 0 }
    }

    /// Add `other`'s counts to these.
    pub fn add(&mut self, other: &RoleUsage) {
        self.invocations = self.invocations.saturating_add(other.invocations);
        self.failed = self.failed.saturating_add(other.failed);
        self.model_calls = self.model_calls.saturating_add(other.model_calls);
        self.repairs = self.repairs.saturating_add(other.repairs);
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
    }
}

/// `records` (one job's activity) summed per role, in role order; roles that made no model
/// call are left out.
pub fn usage_by_role(records: &[ActivityRecord]) -> Vec<RoleUsage> {
    let mut by_role: std::collections::BTreeMap<usize, RoleUsage> = std::collections::BTreeMap::new();
    for r in records.iter().filter(|r| r.operation != Operation::ToolCall) {
        let entry = by_role.entry(r.agent as usize).or_insert_with(|| RoleUsage::none(r.agent));
        entry.invocations = entry.invocations.saturating_add(1);
        if matches!(r.outcome, harmonia_contracts::domain::ActivityOutcome::Failure { .. }) {
            entry.failed = entry.failed.saturating_add(1);
        }
        entry.model_calls = entry.model_calls.saturating_add(r.model_calls);
        entry.repairs = entry.repairs.saturating_add(r.repairs);
        entry.input_tokens = entry.input_tokens.saturating_add(u64::from(r.usage.input_tokens));
        entry.output_tokens = entry.output_tokens.saturating_add(u64::from(r.usage.output_tokens));
    }
    by_role.into_values().collect()
}

/// Every activity record of `job`, in the order they started.
pub async fn activity(env: &Env, workspace: &WorkspaceId, job: &JobId) -> Result<Vec<ActivityRecord>, Error> {
    let query = harmonia_store::Query::all(harmonia_store::MAX_QUERY_LIMIT)
        .filter("job", job.to_string())
        .map_err(Error::from)?;
    let docs =
        harmonia_store::scan(&*env.store, workspace, crate::records::ACTIVITY, query).await.map_err(Error::from)?;
    let mut records: Vec<ActivityRecord> =
        docs.iter().map(|d| d.decode().map_err(Error::from)).collect::<Result<_, _>>()?;
    records.sort_by_key(|r| r.started_at);
    Ok(records)
}

/// What a source is: its title, language, length and how much it holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceSummary {
    /// Title.
    pub title: String,
    /// Where the video lives, when known.
    pub url: Option<String>,
    /// Language.
    pub language: LanguageTag,
    /// Where the last segment ends, in milliseconds.
    pub duration_ms: u64,
    /// Transcript segments.
    pub segments: usize,
    /// Described frames.
    pub frames: usize,
    /// When it was ingested.
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub ingested_at: DateTime<Utc>,
}

/// Nimi's analysis: the evidence moments and the angles built on them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnalysisDetail {
    /// Evidence moments: id, verbatim quote, time range.
    pub moments: Vec<Moment>,
    /// Candidate angles.
    pub angles: Vec<Angle>,
}

/// One cited piece of evidence: a moment of the job with its quote and time range, or a page
/// the job's grounded search returned with its address and the answer spans it supports.
/// Other evidence (a verified publication of the workspace) has no quote here.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cited {
    /// Evidence id.
    pub evidence_id: EvidenceId,
    /// The moment's verbatim quote.
    pub quote: Option<String>,
    /// Where the moment starts, in milliseconds.
    pub start_ms: Option<u64>,
    /// Where the moment ends, in milliseconds.
    pub end_ms: Option<u64>,
    /// The web page, when the evidence is a grounded-search result (its quote is then the
    /// answer spans the page supports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Flagged spans of the source within ten seconds of the moment: said beside the quote, so
    /// the operator looks at what was said next to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub near_flags: Vec<NearFlag>,
}

/// Ryan's strategy as the operator approves it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StrategyDetail {
    /// The version (content hash) an approval names.
    pub content_hash: String,
    /// The operator round it was written in (0 for the original).
    pub round: Round,
    /// Objective.
    pub objective: String,
    /// Audience.
    pub audience: String,
    /// Voice.
    pub voice: String,
    /// The briefs, each with its evidence quoted.
    pub briefs: Vec<BriefDetail>,
}

/// One brief with its evidence quoted inline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BriefDetail {
    /// Id.
    pub id: BriefId,
    /// Angle.
    pub angle: String,
    /// Key message.
    pub key_message: String,
    /// Audience.
    pub audience: String,
    /// Platforms.
    pub platforms: Vec<Platform>,
    /// Call to action, if any.
    pub call_to_action: Option<String>,
    /// The cited evidence.
    pub evidence: Vec<Cited>,
}

/// One draft version exactly as it would be posted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DraftDetail {
    /// Draft id.
    pub id: DraftId,
    /// Operator round (0 for the original).
    pub round: Round,
    /// Writing pass within its round.
    pub pass: Pass,
    /// Who wrote it: `mock` (the offline model), `live` (a model) or `operator` (an edit).
    pub provenance: Provenance,
    /// The plan item it writes.
    pub item: PlanItemId,
    /// Platform.
    pub platform: Platform,
    /// The text, byte for byte as it would be posted.
    pub body: String,
    /// Its length as the platform counts it, against the limit (a thread's: its longest
    /// post's, since each post is held to the limit on its own).
    pub length: Length,
    /// A thread's posts in order, each exactly as it will be posted with its own length;
    /// empty for a single post. `body` is then the posts joined by a blank line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thread: Vec<PostDetail>,
    /// Its claims, each with the evidence quoted.
    pub claims: Vec<ClaimDetail>,
    /// The version (content hash) an approval names.
    pub content_hash: String,
    /// When it was written.
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub created_at: DateTime<Utc>,
}

/// One post of a thread exactly as it will be posted, with its length.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostDetail {
    /// The text, byte for byte.
    pub body: String,
    /// Its length as the platform counts it, against the limit.
    pub length: Length,
}

/// A text's length as its platform counts it (weighted characters for X, graphemes for
/// Bluesky, characters elsewhere), against the platform's limit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Length {
    /// The count.
    pub used: usize,
    /// The platform's limit.
    pub limit: usize,
    /// What is counted, e.g. "weighted characters".
    pub unit: String,
}

/// One claim of a draft with its evidence quoted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimDetail {
    /// The claim.
    pub text: String,
    /// The cited evidence.
    pub evidence: Vec<Cited>,
}

/// The policy result of one draft version, rule by rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyDetail {
    /// Draft.
    pub draft: DraftId,
    /// The version checked.
    pub content_hash: String,
    /// Passed or blocked.
    pub outcome: PolicyOutcome,
    /// Every rule, with why it held or failed.
    pub rules: Vec<RuleResult>,
    /// When.
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub checked_at: DateTime<Utc>,
}

/// One policy rule's result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleResult {
    /// The rule.
    pub rule: PolicyRule,
    /// Whether it held.
    pub passed: bool,
    /// Why: the violation's detail, or what held.
    pub reason: String,
}

/// The version awaiting a decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Awaiting {
    /// Strategy or draft.
    pub subject: ApprovalSubject,
    /// The whole content hash.
    pub version: String,
    /// The prefix `status` prints ([`VERSION_PREFIX_CHARS`] characters), accepted wherever a
    /// version is named.
    pub prefix: String,
}

/// The first [`VERSION_PREFIX_CHARS`] characters of a version (all of a shorter one): what
/// `status` and `show` print, and what a decision may name.
pub fn version_prefix(version: &str) -> &str {
    version.get(..VERSION_PREFIX_CHARS).unwrap_or(version)
}

/// Every rule policy runs, in the order it reports them.
const RULES: [PolicyRule; 15] = [
    PolicyRule::PlatformLength,
    PolicyRule::LinkCount,
    PolicyRule::EvidenceResolves,
    PolicyRule::NoMockEvidenceInProduction,
    PolicyRule::BannedPhrase,
    PolicyRule::LinkAllowList,
    PolicyRule::LinkGrounded,
    PolicyRule::NoOpenHighSeverityIssue,
    PolicyRule::ChannelConfigured,
    PolicyRule::FiguresGrounded,
    PolicyRule::QuotesExact,
    PolicyRule::QuoteContext,
    PolicyRule::NoMarkup,
    PolicyRule::NoInstructionText,
    PolicyRule::NoMockEvidenceToLiveConnector,
];

/// What a rule that held guarantees, in words.
fn held(rule: PolicyRule) -> &'static str {
    match rule {
        PolicyRule::PlatformLength => "Within the platform's length limit.",
        PolicyRule::LinkCount => "Within the platform's link-count limit.",
        PolicyRule::EvidenceResolves => "Every claim cites evidence that resolves.",
        PolicyRule::NoMockEvidenceInProduction => "No mock evidence where production forbids it.",
        PolicyRule::BannedPhrase => "No banned phrase of the workspace.",
        PolicyRule::LinkAllowList => "Every link goes to an allow-listed host, named plainly.",
        PolicyRule::LinkGrounded => "Every link is the call to action's or one the cited evidence gives.",
        PolicyRule::NoOpenHighSeverityIssue => "No open high-severity review issue.",
        PolicyRule::ChannelConfigured => "The platform is a configured channel, published the way it is configured.",
        PolicyRule::FiguresGrounded => {
            "Every figure appears in the cited evidence with its magnitude, unit, sign and negation."
        }
        PolicyRule::QuotesExact => "Every quotation is an exact span of the cited evidence.",
        PolicyRule::QuoteContext => "No quote cuts a figure off its magnitude, unit, sign, negation or range.",
        PolicyRule::NoMarkup => "No markup.",
        PolicyRule::NoInstructionText => "No line reads as an order to the system.",
        PolicyRule::NoMockEvidenceToLiveConnector => "Nothing mock goes out through a live connector.",
    }
}

/// Everything stored about `job` in `workspace`; `not_found` when the workspace has no such
/// job (a job of another workspace is not found either).
pub async fn job(env: &Env, workspace: &WorkspaceId, id: &JobId) -> Result<JobDetail, Error> {
    let job = crate::gates::job(env, workspace, id).await?;
    let get = |collection: Collection, key: String| async move {
        env.store.get(workspace, collection, &doc_id(key)).await.map_err(Error::from)
    };
    let source = crate::records::source(&*env.store, &*env.blobs, workspace, &job.source).await?;
    let flagged = source.as_ref().map(flags).unwrap_or_default();
    let analysis: Option<AnalysisRecord> = decode(get(ANALYSES, job.id.to_string()).await?)?;
    let quoted = source_quotes(env, workspace, &job.id).await?;
    let moments: HashMap<&EvidenceId, &Moment> = analysis
        .iter()
        .flat_map(|a| &a.analysis.moments)
        .chain(quoted.iter().map(|q| &q.moment))
        .map(|m| (&m.evidence_id, m))
        .collect();
    let research = crate::records::research_of(&*env.store, workspace, &job.id).await?;
    let research: HashMap<&EvidenceId, &ResearchEvidence> = research.iter().map(|r| (&r.evidence_id, r)).collect();
    let cite = |ids: &[EvidenceId]| {
        ids.iter()
            .map(|e| {
                let moment = moments.get(e).copied();
                let near_flags = moment.map(|m| near(&flagged, m.start_ms, m.end_ms)).unwrap_or_default();
                Cited { near_flags, ..cited(e, moment, research.get(e).copied()) }
            })
            .collect::<Vec<_>>()
    };
    let strategy: Option<StrategyRecord> = decode(get(STRATEGIES, job.id.to_string()).await?)?;
    let mut strategy_versions = Vec::new();
    for round in Round::all() {
        let id = strategy_version_id(&job.id, round);
        let doc = env.store.get(workspace, STRATEGY_VERSIONS, &id).await.map_err(Error::from)?;
        if let Some(version) = decode::<StrategyRecord>(doc)? {
            strategy_versions.push(strategy_detail(version, &cite));
        }
    }
    let plan: Option<PlanRecord> = decode(get(PLANS, job.id.to_string()).await?)?;
    // Drafts are counted against the limits of the configuration the job runs under.
    let config = crate::workspace::version_of_job(&*env.store, &job).await?.config;
    let (mut drafts, mut reviews, mut policy, mut publication) = (Vec::new(), Vec::new(), Vec::new(), None);
    for draft_id in every_draft_id(&job.id) {
        let draft_id = draft_id.to_string();
        if let Some(draft) = decode::<Draft>(get(DRAFTS, draft_id.clone()).await?)? {
            drafts.push(draft_detail(draft, &config, &cite));
        }
        if let Some(review) = decode::<Review>(get(REVIEWS, draft_id.clone()).await?)? {
            reviews.push(review);
        }
        if let Some(result) = decode::<PolicyResult>(get(POLICY_RESULTS, draft_id.clone()).await?)? {
            policy.push(policy_detail(result));
        }
        // Only the approved version is published; it is the one that has a record.
        if let Some(p) = decode::<Publication>(get(PUBLICATIONS, draft_id).await?)? {
            publication = Some(p);
        }
    }
    let decisions =
        crate::records::decisions(&*env.store, workspace, &job.id).await?.into_iter().map(|r| r.approval).collect();
    let awaiting = crate::gates::awaiting(env, workspace, &job).await?.map(|(subject, version)| Awaiting {
        subject,
        prefix: version_prefix(&version).to_owned(),
        version,
    });
    let model_use = usage_by_role(&activity(env, workspace, &job.id).await?);
    let used = model_use.iter().map(|u| u.input_tokens + u.output_tokens).sum();
    let budget = crate::steps::budget_limit(&*env.store, workspace, &job).await?.map(|limit| {
        harmonia_agents::runtime::TokenBudget { used, ..harmonia_agents::runtime::TokenBudget::new(limit) }
    });
    Ok(JobDetail {
        source: source.map(summary),
        flags: flagged.clone(),
        analysis: analysis.as_ref().map(|a| analysis_detail(&a.analysis)),
        strategy: strategy.map(|s| strategy_detail(s, &cite)),
        strategy_versions,
        selected_item: plan.as_ref().and_then(|p| p.plan.items.iter().find(|i| i.id == p.selected).cloned()),
        plan: plan.map(|p| p.plan),
        drafts,
        reviews,
        policy,
        awaiting,
        decisions,
        publication,
        retries: crate::retry::of_job(env, workspace, &job.id).await?,
        model_use,
        budget,
        job,
    })
}

/// A stored record, or `None` when there is none; a record that does not decode is an error,
/// never an absent stage.
fn decode<T: DeserializeOwned>(doc: Option<Document>) -> Result<Option<T>, Error> {
    doc.map(|d| d.decode().map_err(Error::from)).transpose()
}

fn cited(id: &EvidenceId, moment: Option<&Moment>, research: Option<&ResearchEvidence>) -> Cited {
    Cited {
        evidence_id: id.clone(),
        quote: moment.map(|m| m.quote.clone()).or_else(|| research.map(|r| r.supported.join(" … "))),
        start_ms: moment.map(|m| m.start_ms),
        end_ms: moment.map(|m| m.end_ms),
        url: research.map(|r| r.uri.clone()),
        near_flags: Vec::new(),
    }
}

/// The spans of the job's source its operator edits quoted.
async fn source_quotes(env: &Env, workspace: &WorkspaceId, job: &JobId) -> Result<Vec<SourceQuote>, Error> {
    let query = harmonia_store::Query::all(harmonia_store::MAX_QUERY_LIMIT)
        .filter("job", job.to_string())
        .map_err(Error::from)?;
    let docs = harmonia_store::scan(&*env.store, workspace, SOURCE_QUOTES, query).await.map_err(Error::from)?;
    docs.iter().map(|d| d.decode().map_err(Error::from)).collect()
}

fn summary(s: Source) -> SourceSummary {
    SourceSummary {
        duration_ms: s.segments.iter().map(|t| t.end_ms).max().unwrap_or(0),
        segments: s.segments.len(),
        frames: s.frames.len(),
        title: s.title,
        url: s.url,
        language: s.language,
        ingested_at: s.ingested_at,
    }
}

fn analysis_detail(a: &Analysis) -> AnalysisDetail {
    AnalysisDetail { moments: a.moments.clone(), angles: a.angles.clone() }
}

fn strategy_detail(s: StrategyRecord, cite: &impl Fn(&[EvidenceId]) -> Vec<Cited>) -> StrategyDetail {
    StrategyDetail {
        content_hash: s.content_hash,
        round: s.round,
        objective: s.strategy.objective,
        audience: s.strategy.audience,
        voice: s.strategy.voice,
        briefs: s.strategy.briefs.into_iter().map(|b| brief_detail(b, cite)).collect(),
    }
}

fn brief_detail(b: Brief, cite: &impl Fn(&[EvidenceId]) -> Vec<Cited>) -> BriefDetail {
    BriefDetail {
        evidence: cite(&b.evidence),
        id: b.id,
        angle: b.angle,
        key_message: b.key_message,
        audience: b.audience,
        platforms: b.platforms,
        call_to_action: b.call_to_action,
    }
}

fn draft_detail(d: Draft, config: &WorkspaceConfig, cite: &impl Fn(&[EvidenceId]) -> Vec<Cited>) -> DraftDetail {
    let length = |text: &str| {
        let (used, limit, unit) = crate::policy::length_on(config, d.platform, text);
        Length { used, limit, unit: unit.to_owned() }
    };
    let thread: Vec<PostDetail> =
        d.thread.iter().map(|post| PostDetail { body: post.clone(), length: length(post) }).collect();
    DraftDetail {
        length: thread.iter().map(|p| p.length.clone()).max_by_key(|l| l.used).unwrap_or_else(|| length(&d.body)),
        thread,
        claims: d.claims.iter().map(|c| ClaimDetail { text: c.text.clone(), evidence: cite(&c.evidence) }).collect(),
        id: d.id,
        round: d.round,
        pass: d.pass,
        provenance: d.provenance,
        item: d.item,
        platform: d.platform,
        body: d.body,
        content_hash: d.content_hash,
        created_at: d.created_at,
    }
}

fn policy_detail(r: PolicyResult) -> PolicyDetail {
    let rules = RULES
        .iter()
        .map(|&rule| match r.violations.iter().find(|v| v.rule == rule) {
            Some(v) => RuleResult { rule, passed: false, reason: v.detail.clone() },
            None => RuleResult { rule, passed: true, reason: held(rule).to_owned() },
        })
        .collect();
    PolicyDetail { draft: r.draft, content_hash: r.content_hash, outcome: r.outcome, rules, checked_at: r.checked_at }
}

#[cfg(test)]
mod tests {
    use harmonia_contracts::domain::PolicyViolation;

    use super::*;

    #[test]
    fn every_rule_is_reported_with_its_violation_or_what_held() {
        let result = PolicyResult {
            draft: "draft-1".parse().expect("draft"),
            content_hash: "ab".repeat(32),
            outcome: PolicyOutcome::Blocked,
            violations: vec![PolicyViolation {
                rule: PolicyRule::PlatformLength,
                detail: "312 of 280 weighted characters on x".into(),
            }],
            checked_at: Utc::now(),
        };
        let detail = policy_detail(result);
        assert_eq!(detail.rules.len(), RULES.len());
        use strum::IntoEnumIterator;
        assert_eq!(RULES.len(), PolicyRule::iter().count(), "every rule is reported");
        let length = &detail.rules[0];
        assert_eq!((length.rule, length.passed), (PolicyRule::PlatformLength, false));
        assert_eq!(length.reason, "312 of 280 weighted characters on x");
        assert!(detail.rules[1..].iter().all(|r| r.passed && r.reason == held(r.rule)));
    }
}
