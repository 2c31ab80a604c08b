//! Deterministic publishing policy. Every rule is a pure function of the draft and stored
//! records; a violation's detail is safe text (counts and rule names, never draft text).
//!
//! | rule | what it checks |
//! | --- | --- |
//! | `platform_length` | X 280 weighted characters (NFC; a URL counts 23; emoji and CJK count 2); LinkedIn 3,000; Instagram 2,200; Threads 500; Bluesky 300 graphemes; YouTube description 5,000; TikTok 2,200 (characters after NFC) |
//! | `link_count` | Threads: at most 5 links |
//! | `evidence_resolves` | every claim cites at least one evidence id, and every id resolves to a stored moment of the job or a verified publication |
//! | `no_mock_evidence_in_production` | in a production workspace, no cited evidence (and no draft) has `provenance: mock` |
//! | `banned_phrase` | no workspace banned phrase, case-insensitively |
//! | `link_allow_list` | every link's host is an allow-listed host or a subdomain of one |
//! | `no_open_high_severity_issue` | the draft's latest Dara review has no high-severity issue |
//! | `channel_configured` | the draft's platform is a channel of the job's workspace configuration, and that channel's connector is the one this deployment publishes through (a post is never sent another way than the operator configured) |

use std::collections::HashMap;

use chrono::Utc;
use harmonia_contracts::domain::{
    ConnectorKind, Draft, Platform, PolicyOutcome, PolicyResult, PolicyRule, PolicyViolation, Review, WorkspaceConfig,
    WorkspaceMode,
};
use harmonia_contracts::ids::EvidenceId;
use harmonia_contracts::tool::Provenance;
use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

/// What a URL counts for on X.
pub const X_URL_WEIGHT: usize = 23;

/// The links in `text`: `http://` or `https://` up to whitespace.
pub fn links(text: &str) -> Vec<&str> {
    text.split_whitespace()
        .filter_map(|w| {
            let start = w.find("https://").or_else(|| w.find("http://"))?;
            Some(w[start..].trim_end_matches(['.', ',', ')', '!', '?', ';', ':', '"', '\'', '”']))
        })
        .collect()
}

fn host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?.split(':').next()?;
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

fn is_emoji(ch: char) -> bool {
    matches!(ch as u32, 0x1F000..=0x1FAFF | 0x2600..=0x27BF | 0x2B00..=0x2BFF)
}

/// Characters X weighs 1 (Latin and common punctuation); everything else weighs 2.
fn x_light(ch: char) -> bool {
    matches!(ch as u32, 0..=0x10FF | 0x2000..=0x200D | 0x2010..=0x201F | 0x2032..=0x2037)
}

/// X's weighted length: NFC, each URL 23, an emoji grapheme 2, CJK and other heavy characters 2.
pub fn x_weighted_length(text: &str) -> usize {
    let normalized: String = text.nfc().collect();
    let mut total = 0;
    let mut rest = normalized.as_str();
    for link in links(&normalized) {
        if let Some(at) = rest.find(link) {
            total += weigh(&rest[..at]) + X_URL_WEIGHT;
            rest = &rest[at + link.len()..];
        }
    }
    total + weigh(rest)
}

fn weigh(text: &str) -> usize {
    text.graphemes(true)
        .map(|g| if g.chars().any(is_emoji) { 2 } else { g.chars().map(|c| if x_light(c) { 1 } else { 2 }).sum() })
        .sum()
}

/// The platform's measured length and its limit.
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
    }
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
    /// Evidence that resolves: stored moments of the job and verified publication records,
    /// with their provenance.
    pub evidence: &'a HashMap<EvidenceId, Provenance>,
    /// The connector this deployment publishes through.
    pub connector: ConnectorKind,
}

fn connector_name(kind: ConnectorKind) -> &'static str {
    match kind {
        ConnectorKind::Sandbox => "sandbox",
        ConnectorKind::Webhook => "webhook",
    }
}

fn violation(rule: PolicyRule, detail: String) -> PolicyViolation {
    PolicyViolation { rule, detail }
}

/// Run every rule.
pub fn check(input: &PolicyInput<'_>) -> PolicyResult {
    let draft = input.draft;
    let mut violations = Vec::new();
    let (used, limit, unit) = length(draft.platform, &draft.body);
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
    if input.workspace.mode == WorkspaceMode::Production {
        let mock = draft
            .claims
            .iter()
            .flat_map(|c| &c.evidence)
            .filter(|e| input.evidence.get(*e) == Some(&Provenance::Mock))
            .count();
        if mock > 0 || draft.provenance == Provenance::Mock {
            violations.push(violation(
                PolicyRule::NoMockEvidenceInProduction,
                format!("{mock} cited evidence item(s) and the draft itself must not be mock in production"),
            ));
        }
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
    let allowed = |h: &str| {
        input.workspace.link_allow_list.iter().any(|a| {
            let a = a.to_ascii_lowercase();
            h == a || h.ends_with(&format!(".{a}"))
        })
    };
    let outside = found.iter().filter(|l| !host(l).is_some_and(|h| allowed(&h))).count();
    if outside > 0 {
        violations
            .push(violation(PolicyRule::LinkAllowList, format!("{outside} link(s) to hosts outside the allow-list")));
    }
    match input.workspace.channels.iter().find(|c| c.platform == draft.platform) {
        None => violations.push(violation(
            PolicyRule::ChannelConfigured,
            format!("{} is not a channel of this workspace", draft.platform.as_str()),
        )),
        Some(channel) if channel.connector != input.connector => violations.push(violation(
            PolicyRule::ChannelConfigured,
            format!(
                "the {} channel publishes through {}, but this deployment publishes through {}",
                draft.platform.as_str(),
                connector_name(channel.connector),
                connector_name(input.connector)
            ),
        )),
        Some(_) => {}
    }
    if input.review.is_some_and(Review::has_high_severity) {
        violations.push(violation(
            PolicyRule::NoOpenHighSeverityIssue,
            "the latest review has an open high-severity issue".into(),
        ));
    }
    PolicyResult {
        draft: draft.id.clone(),
        content_hash: draft.content_hash.clone(),
        outcome: if violations.is_empty() { PolicyOutcome::Passed } else { PolicyOutcome::Blocked },
        violations,
        checked_at: Utc::now(),
    }
}

#[cfg(test)]
mod tests;
