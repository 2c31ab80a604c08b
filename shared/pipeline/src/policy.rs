//! Deterministic publishing policy. Every rule is a pure function of the draft and stored
//! records.
//!
//! | rule | what it checks |
//! | --- | --- |
//! | `platform_length` | X 280 weighted characters (NFC; a URL counts 23; emoji and CJK count 2); LinkedIn 3,000; Instagram 2,200; Threads 500; Bluesky 300 graphemes; YouTube description 5,000; TikTok 2,200 (characters after NFC); Mastodon 500 characters, or the channel's `max_characters` (a URL counts 23, a remote mention `@user@domain` as `@user`) |
//! | `link_count` | Threads: at most 5 links |
//! | `evidence_resolves` | every claim cites at least one evidence id, and every id resolves to a stored moment of the job, an accepted grounded-search result of the job (`web-*`) or a verified publication of the workspace |
//! | `no_mock_evidence_in_production` | in a production workspace, no cited evidence (and no draft) has `provenance: mock` |
//! | `banned_phrase` | no workspace banned phrase, case-insensitively |
//! | `link_allow_list` | every link (any scheme case, bare domains, IDNA and full-width dots read as a browser does; [`links`]) goes to an allow-listed host or a subdomain of one; user info and IP literals are refused |
//! | `no_open_high_severity_issue` | the draft's latest Dara review has no high-severity issue |
//! | `channel_configured` | the draft's platform is a channel of the job's workspace configuration, and that channel's connector is the one this deployment publishes through (a post is never sent another way than the operator configured) |
//! | `figures_grounded` | every number (also one written in words with a scale or unit), percentage, amount, date (a day with its month) and time of the body (links aside) appears by value and unit in the cited evidence texts or the workspace's call to action ([`grounding`]) |
//! | `quotes_exact` | every quotation of the body is an exact span of a cited evidence text |
//! | `no_instruction_text` | no line of the body is flagged by the instruction detector ([`harmonia_contracts::untrusted`]) |
//! | `no_mock_evidence_to_live_connector` | in any mode, when this deployment publishes through a connector other than the sandbox, no cited evidence and no draft is mock |
//!
//! A violation's detail is one sentence; the grounding and link rules name the figure,
//! quotation or host at fault (clipped), never the whole draft.

use std::collections::HashMap;

use harmonia_contracts::domain::{
    ConnectorKind, Draft, Platform, PolicyOutcome, PolicyResult, PolicyRule, PolicyViolation, Review, WorkspaceConfig,
    WorkspaceMode,
};
use harmonia_contracts::ids::EvidenceId;
use harmonia_contracts::tool::Provenance;
use harmonia_contracts::untrusted;
use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

/// What a URL counts for on X.
pub const X_URL_WEIGHT: usize = 23;

pub use links::links;

fn is_emoji(ch: char) -> bool {
    matches!(ch as u32, 0x1F000..=0x1FAFF | 0x2600..=0x27BF | 0x2B00..=0x2BFF)
}

/// Characters X weighs 1 (Latin and common punctuation); everything else weighs 2.
fn x_light(ch: char) -> bool {
    matches!(ch as u32, 0..=0x10FF | 0x2000..=0x200D | 0x2010..=0x201F | 0x2032..=0x2037)
}

/// X's weighted length: NFC, each URL 23, an emoji grapheme 2, CJK and other heavy characters 2.
pub fn x_weighted_length(text: &str) -> usize {
    linked_length(text, X_URL_WEIGHT, weigh)
}

/// `text` (NFC) counted with `count` between its links, each link counting `link_weight`.
fn linked_length(text: &str, link_weight: usize, count: fn(&str) -> usize) -> usize {
    let normalized: String = text.nfc().collect();
    let mut total = 0;
    let mut rest = normalized.as_str();
    for link in links(&normalized) {
        if let Some(at) = rest.find(link) {
            total += count(&rest[..at]) + link_weight;
            rest = &rest[at + link.len()..];
        }
    }
    total + count(rest)
}

fn weigh(text: &str) -> usize {
    text.graphemes(true)
        .map(|g| if g.chars().any(is_emoji) { 2 } else { g.chars().map(|c| if x_light(c) { 1 } else { 2 }).sum() })
        .sum()
}

/// The measured length of `text` on the channel `config` lists for `platform`, and that
/// channel's limit: the platform's, or the Mastodon instance's when the channel states it.
pub fn length_on(config: &WorkspaceConfig, platform: Platform, text: &str) -> (usize, usize, &'static str) {
    let (used, limit, unit) = length(platform, text);
    let stated = config.channels.iter().find(|c| c.platform == platform).and_then(|c| c.max_characters);
    match stated {
        Some(max) if platform == Platform::Mastodon => (used, max as usize, unit),
        _ => (used, limit, unit),
    }
}

/// The platform's measured length and its default limit.
pub fn length(platform: Platform, text: &str) -> (usize, usize, &'static str) {
    let nfc = || text.nfc().count();
    match platform {
        Platform::X => (x_weighted_length(text), 280, "weighted characters"),
        Platform::Linkedin => (nfc(), 3000, "characters"),
        Platform::Instagram => (nfc(), 2200, "characters"),
        Platform::Threads => (nfc(), 500, "characters"),
        Platform::Bluesky => (text.nfc().collect::<String>().graphemes(true).count(), 300, "graphemes"),
        Platform::Youtube => (nfc(), 5000, "characters"),
        Platform::Tiktok => (nfc(), 2200, "characters"),
        Platform::Mastodon => (mastodon_length(text), MASTODON_CHARACTERS, "characters"),
    }
}

/// Mastodon's default status limit, in characters.
pub const MASTODON_CHARACTERS: usize = 500;

/// What a URL counts for on Mastodon, whatever its length.
pub const MASTODON_URL_WEIGHT: usize = 23;

/// Mastodon's count: characters (NFC), each link 23, and a remote mention (`@user@domain`)
/// only as `@user`.
pub fn mastodon_length(text: &str) -> usize {
    linked_length(text, MASTODON_URL_WEIGHT, mastodon_plain)
}

fn mastodon_plain(text: &str) -> usize {
    text.split_inclusive(char::is_whitespace)
        .map(|word| {
            let trimmed = word.trim_end();
            let space = word.len() - trimmed.len();
            // `@user@domain` counts as `@user`.
            let counted = match trimmed.strip_prefix('@').and_then(|r| r.split_once('@')) {
                Some((user, domain)) if !user.is_empty() && domain.contains('.') => user.chars().count() + 1,
                _ => trimmed.chars().count(),
            };
            counted + word[trimmed.len()..].chars().count().min(space)
        })
        .sum()
}

/// A piece of evidence a draft may cite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Evidence {
    /// Live or mock.
    pub provenance: Provenance,
    /// What it says: a moment's exact quote, the answer spans a web page supports, a verified
    /// post's body.
    pub text: String,
}

/// Everything policy needs, read by the policy stage from storage.
#[derive(Debug)]
pub struct PolicyInput<'a> {
    /// The workspace configuration (the job's version) and its rules.
    pub workspace: &'a WorkspaceConfig,
    /// The exact draft version.
    pub draft: &'a Draft,
    /// The draft's latest review.
    pub review: Option<&'a Review>,
    /// Evidence that resolves: stored moments of the job, its accepted grounded-search
    /// results and the workspace's verified publication records, with their provenance and
    /// text.
    pub evidence: &'a HashMap<EvidenceId, Evidence>,
    /// When the check runs (the deployment's clock).
    pub now: harmonia_contracts::domain::Timestamp,
    /// The connector this deployment publishes through.
    pub connector: ConnectorKind,
    /// Whether this deployment holds credentials of its own for the draft's channel (a
    /// channel account, [`crate::connector::accounts`]), so that channel publishes through
    /// its own connector whatever the deployment's is.
    pub account: bool,
}

fn violation(rule: PolicyRule, detail: String) -> PolicyViolation {
    PolicyViolation { rule, detail }
}

/// Run every rule.
pub fn check(input: &PolicyInput<'_>) -> PolicyResult {
    let draft = input.draft;
    let mut violations = Vec::new();
    let (used, limit, unit) = length_on(input.workspace, draft.platform, &draft.body);
    if used > limit {
        violations.push(violation(
            PolicyRule::PlatformLength,
            format!("{used} of {limit} {unit} on {}", draft.platform.as_str()),
        ));
    }
    let found = links(&draft.body);
    if draft.platform == Platform::Threads && found.len() > 5 {
        violations.push(violation(PolicyRule::LinkCount, format!("{} links; Threads allows 5", found.len())));
    }
    let unresolved = draft
        .claims
        .iter()
        .filter(|c| c.evidence.is_empty() || c.evidence.iter().any(|e| !input.evidence.contains_key(e)))
        .count();
    if unresolved > 0 {
        violations.push(violation(
            PolicyRule::EvidenceResolves,
            format!("{unresolved} claim(s) cite evidence that does not resolve"),
        ));
    }
    let mock = draft
        .claims
        .iter()
        .flat_map(|c| &c.evidence)
        .filter(|e| input.evidence.get(*e).is_some_and(|e| e.provenance == Provenance::Mock))
        .count();
    let any_mock = mock > 0 || draft.provenance == Provenance::Mock;
    if input.workspace.mode == WorkspaceMode::Production && any_mock {
        violations.push(violation(
            PolicyRule::NoMockEvidenceInProduction,
            format!("{mock} cited evidence item(s) and the draft itself must not be mock in production"),
        ));
    }
    let body = draft.body.to_lowercase();
    let banned = input
        .workspace
        .banned_phrases
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.trim().is_empty() && body.contains(&p.to_lowercase()))
        .map(|(n, _)| (n + 1).to_string())
        .collect::<Vec<_>>();
    if !banned.is_empty() {
        violations.push(violation(
            PolicyRule::BannedPhrase,
            format!("banned phrase(s) #{} of the workspace list", banned.join(", #")),
        ));
    }
    let refused: Vec<links::Refusal> =
        found.iter().filter_map(|l| links::check(l, &input.workspace.link_allow_list).err()).collect();
    if let Some(first) = refused.first() {
        let more = if refused.len() > 1 { format!(" (and {} more)", refused.len() - 1) } else { String::new() };
        violations.push(violation(PolicyRule::LinkAllowList, clip(&format!("{}{more}", first.sentence()))));
    }
    let channel = input.workspace.channels.iter().find(|c| c.platform == draft.platform);
    match channel {
        None => violations.push(violation(
            PolicyRule::ChannelConfigured,
            format!("{} is not a channel of this workspace", draft.platform.as_str()),
        )),
        Some(channel) if channel.connector != input.connector && !input.account => violations.push(violation(
            PolicyRule::ChannelConfigured,
            format!(
                "the {} channel publishes through {}, but this deployment publishes through {} and holds no {} credentials for {}",
                draft.platform.as_str(),
                channel.connector.as_str(),
                input.connector.as_str(),
                channel.connector.as_str(),
                clip_to(&channel.handle, 100)
            ),
        )),
        Some(_) => {}
    }
    // Where the post would go: the channel's own connector when this deployment has it.
    let through = match channel {
        Some(c) if c.connector == input.connector || input.account => c.connector,
        _ => input.connector,
    };
    if input.review.is_some_and(Review::has_high_severity) {
        violations.push(violation(
            PolicyRule::NoOpenHighSeverityIssue,
            "the latest review has an open high-severity issue".into(),
        ));
    }
    violations.extend(grounding_violations(input));
    violations.extend(instruction_violation(&draft.body));
    if through != ConnectorKind::Sandbox && any_mock {
        violations.push(violation(
            PolicyRule::NoMockEvidenceToLiveConnector,
            format!(
                "{mock} cited evidence item(s) and the draft itself must not be mock when publishing through {}",
                through.as_str()
            ),
        ));
    }
    PolicyResult {
        draft: draft.id.clone(),
        content_hash: draft.content_hash.clone(),
        outcome: if violations.is_empty() { PolicyOutcome::Passed } else { PolicyOutcome::Blocked },
        violations,
        checked_at: input.now,
    }
}

/// The most figures or quotations one rule names before it counts the rest.
const NAMED: usize = 5;

/// A violation detail's longest form (the contract's limit).
const DETAIL_MAX: usize = 300;

/// `text` cut to at most `max` characters, an ellipsis marking a cut.
fn clip_to(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

fn clip(text: &str) -> String {
    clip_to(text, DETAIL_MAX)
}

/// The texts `draft`'s figures and quotations may rest on: those of the evidence its claims
/// cite (that resolves in `evidence`).
pub(crate) fn cited_texts<'a>(draft: &Draft, evidence: &'a HashMap<EvidenceId, Evidence>) -> Vec<&'a str> {
    let mut texts: Vec<&str> = draft
        .claims
        .iter()
        .flat_map(|c| &c.evidence)
        .filter_map(|e| evidence.get(e))
        .map(|e| e.text.as_str())
        .collect();
    texts.sort_unstable();
    texts.dedup();
    texts
}

/// The body without its links (a link's digits are not figures).
fn without_links(body: &str) -> String {
    let mut text = body.to_owned();
    for link in links(body) {
        text = text.replacen(link, " ", 1);
    }
    text
}

/// The findings of the grounding rules (`figures_grounded`, `quotes_exact`) for `body`
/// citing `evidence`, with `extra` texts that may ground figures only: one violation per
/// figure or quotation at fault (at most five, then a count). Dara receives these too.
pub fn grounding_findings(body: &str, evidence: &[&str], extra: &[&str]) -> Vec<PolicyViolation> {
    let mut figure_sources: Vec<&str> = evidence.to_vec();
    figure_sources.extend_from_slice(extra);
    let figures = grounding::ungrounded_figures(&without_links(body), &figure_sources)
        .into_iter()
        .map(|f| format!("the figure \"{}\" does not appear in the evidence the draft cites", clip_to(&f, 120)));
    let quotes = grounding::inexact_quotations(body, evidence)
        .into_iter()
        .map(|q| format!("the quotation \"{}\" is not an exact span of the evidence the draft cites", clip_to(q, 120)));
    let mut out = named(PolicyRule::FiguresGrounded, figures.collect());
    out.extend(named(PolicyRule::QuotesExact, quotes.collect()));
    out
}

/// One violation of `rule` per detail, the first [`NAMED`] of them, then one counting the
/// rest.
fn named(rule: PolicyRule, details: Vec<String>) -> Vec<PolicyViolation> {
    let rest = details.len().saturating_sub(NAMED);
    let mut out: Vec<PolicyViolation> = details.into_iter().take(NAMED).map(|d| violation(rule, clip(&d))).collect();
    if rest > 0 {
        out.push(violation(rule, format!("{rest} more of the same kind")));
    }
    out
}

/// The `no_instruction_text` finding for `body`: its first line the instruction detector
/// flags, else its first pair of consecutive lines (a role label alone on a line governs the
/// order on the next: "SYSTEM:" then "Publish this draft…"), with the detector's reason (the
/// signals, never the text).
fn instruction_violation(body: &str) -> Option<PolicyViolation> {
    let lines: Vec<&str> = body.lines().filter(|l| !l.trim().is_empty()).collect();
    let single = lines.iter().find_map(|l| untrusted::flagged(l));
    let paired = || lines.windows(2).find_map(|pair| untrusted::flagged(&pair.join("\n")));
    single.or_else(paired).map(|flagged| {
        violation(
            PolicyRule::NoInstructionText,
            clip(&format!("a line of the post reads as an order to the system: {}", flagged.reason())),
        )
    })
}

/// What review should know before Dara reads a draft: the grounding findings over the
/// brief's evidence (figures may also rest on the brief's call to action) and the
/// instruction finding, exactly as policy would report them.
pub fn review_findings(body: &str, evidence: &[&str], call_to_action: Option<&str>) -> Vec<PolicyViolation> {
    let mut findings = grounding_findings(body, evidence, call_to_action.as_slice());
    findings.extend(instruction_violation(body));
    findings
}

/// The grounding findings of the draft; its figures may also rest on the workspace's call to
/// action, which the operator wrote and the draft may repeat.
fn grounding_violations(input: &PolicyInput<'_>) -> Vec<PolicyViolation> {
    grounding_findings(
        &input.draft.body,
        &cited_texts(input.draft, input.evidence),
        &[input.workspace.call_to_action.as_str()],
    )
}

pub(crate) mod evidence;
mod grounding;
pub mod links;

#[cfg(test)]
mod corpus;
#[cfg(test)]
mod tests;
