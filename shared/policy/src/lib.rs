//! Deterministic publishing policy. Every rule is a pure function of the draft and stored
//! records.
//!
//! | rule | what it checks |
//! | --- | --- |
//! | `platform_length` | the platform's limit as the platform counts it ([`LIMITS`], quoted by `docs/limits.md`): X 280 weighted characters; LinkedIn 3,000; Instagram 2,200; Threads 500; Bluesky 300 graphemes and 3,000 UTF-8 bytes; YouTube 5,000; TikTok 2,200; Mastodon 500, or the channel's `max_characters` |
//! | `link_count` | Threads: at most 5 links |
//! | `evidence_resolves` | every claim cites at least one evidence id, and every id resolves to a stored moment of the job, a span of the source an operator's edit quoted (`q-*`), an accepted grounded-search result of the job (`web-*`) a verified publication of the workspace, or a remembered fact of the workspace (`fact-*`) while the eligibility rule offers it |
//! | `no_mock_evidence_in_production` | in a production workspace, no cited evidence (and no draft) has `provenance: mock` |
//! | `banned_phrase` | no workspace banned phrase, case-insensitively |
//! | `link_allow_list` | every link (any scheme case, bare domains, bare IPv4 and IPv6 addresses, IDNA and full-width dots read as a browser does; [`links()`]) goes to an allow-listed host or a subdomain of one; user info, IP literals and hosts disguised by bidirectional controls or zero-width characters are refused |
//! | `link_grounded` | every link is the workspace's call to action's link or appears in the evidence the draft cites (a cited text or a search result's page), so an invented deep link on an allowed host is refused |
//! | `no_open_high_severity_issue` | the draft's latest Dara review has no high-severity issue |
//! | `channel_configured` | the draft's platform is a channel of the job's workspace configuration, and that channel's connector is the one this deployment publishes through (a post is never sent another way than the operator configured) |
//! | `figures_grounded` | every figure of the body (links aside) — a number, also in words (`forty`) or full-width digits, with its magnitude, currency, per cent, unit, sign, negation and range — is one that the cited evidence states, read where it was said, or the call to action does ([`harmonia_grounding`]) |
//! | `quotes_exact` | every quotation of the body is an exact span of a cited evidence text, after the speech's one normalisation (NFC, white space, quotation marks, dashes, ellipsis) |
//! | `quote_context` | no cited moment, and no quotation of the body, begins or ends where it cuts a figure off its magnitude, unit, sign, negation or range, or inside its number |
//! | `no_markup` | no HTML element, event-handler attribute or `javascript:` address in the body |
//! | `no_instruction_text` | no line of the body is flagged by the instruction detector (in any of its languages) or carries an encoded order ([`harmonia_contracts::untrusted`]), and the body repeats no five words of a span ingest flagged in the source |
//! | `no_mock_evidence_to_live_connector` | in any mode, when this deployment publishes through a connector other than the sandbox, no cited evidence and no draft is mock |
//!
//! A violation's detail is one sentence; the grounding and link rules name the figure,
//! quotation or host at fault (clipped), never the whole draft.

use std::collections::HashMap;

use harmonia_contracts::domain::{
    ConnectorKind, Draft, MAX_THREAD_POSTS, PolicyOutcome, PolicyResult, PolicyRule, PolicyViolation, Review,
    WorkspaceConfig, WorkspaceMode,
};
use harmonia_contracts::ids::EvidenceId;
use harmonia_contracts::tool::Provenance;
use harmonia_contracts::untrusted;
use serde::{Deserialize, Serialize};

pub use limits::{
    Counting, LIMITS, Limit, MASTODON_CHARACTERS, MASTODON_URL_WEIGHT, X_URL_WEIGHT, length, length_on, limit,
    limits_markdown, mastodon_length, x_weighted_length,
};
pub use links::links;

/// The text of a span the source's ingest flagged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlaggedText {
    /// Why it was flagged.
    pub kind: harmonia_contracts::domain::FlagKind,
    /// What it says.
    pub text: String,
    /// The cues it spans, from 1 (none for the title or a frame).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cues: Option<[u32; 2]>,
}

/// Where a moment of a source was said: a window of its utterance around the quote
/// ([`harmonia_grounding::Said`]), so that policy reads a figure the quote holds with the
/// words around it even where the quote stops short of them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MomentSaid {
    /// The moment.
    pub evidence_id: EvidenceId,
    /// The utterance around the quote.
    pub window: String,
    /// The quote's first byte in `window`.
    pub start: usize,
    /// The quote's end (exclusive) in `window`.
    pub end: usize,
}

impl MomentSaid {
    /// Where `quote` (within `[start_ms, end_ms]`) was said in `source`, when it is a span of
    /// its speech that no flag touches.
    pub fn of(
        speech: &harmonia_contracts::domain::Speech,
        source: &harmonia_contracts::domain::Source,
        evidence_id: &EvidenceId,
        quote: &str,
        start_ms: u64,
        end_ms: u64,
    ) -> Option<Self> {
        let span = harmonia_contracts::domain::quoted_span(speech, &source.untrusted, quote, start_ms, end_ms).ok()?;
        let utterance = &speech.utterances().get(span.utterance)?.text;
        let said = harmonia_grounding::Said::around(utterance, span.start..span.end);
        Some(Self {
            evidence_id: evidence_id.clone(),
            window: said.window.to_owned(),
            start: said.quote.start,
            end: said.quote.end,
        })
    }

    /// As the grounding checks read it.
    pub fn as_said(&self) -> harmonia_grounding::Said<'_> {
        harmonia_grounding::Said { window: &self.window, quote: self.start..self.end }
    }
}

/// A piece of evidence a draft may cite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Evidence {
    /// Live or mock.
    pub provenance: Provenance,
    /// What it says: a moment's exact quote, the answer spans a web page supports, a verified
    /// post's body.
    pub text: String,
    /// Where a moment was said, so its figures are read with the words around them.
    pub said: Option<MomentSaid>,
    /// The web page a grounded-search result comes from, which a post may link.
    pub url: Option<String>,
}

impl Evidence {
    /// Evidence that is text alone (a verified post, a moment without its place in a source).
    pub fn text(provenance: Provenance, text: String) -> Self {
        Self { provenance, text, said: None, url: None }
    }

    /// As the grounding checks read it.
    pub fn cited(&self) -> harmonia_grounding::Cited<'_> {
        harmonia_grounding::Cited { text: &self.text, said: self.said.as_ref().map(MomentSaid::as_said) }
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
    /// Evidence that resolves: stored moments of the job, its accepted grounded-search
    /// results and the workspace's verified publication records, with their provenance and
    /// text.
    pub evidence: &'a HashMap<EvidenceId, Evidence>,
    /// What the job's source says in the spans ingest flagged, which the post may not repeat.
    pub flagged: &'a [FlaggedText],
    /// When the check runs (the deployment's clock).
    pub now: harmonia_contracts::domain::Timestamp,
    /// The connector this deployment publishes through.
    pub connector: ConnectorKind,
    /// Whether this deployment holds credentials of its own for the draft's channel (a
    /// channel account, `harmonia_connectors::accounts`), so that channel publishes through
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
    // A single post is held to the platform's limits; a thread's posts each are, and its
    // whole text to the posts joined (a thread whose posts say something else is refused).
    let posts: Vec<(String, &str)> = match draft.thread.as_slice() {
        [] => vec![(String::new(), draft.body.as_str())],
        posts => {
            posts.iter().enumerate().map(|(n, p)| (format!("post {} of the thread: ", n + 1), p.as_str())).collect()
        }
    };
    if !draft.thread.is_empty() {
        let whole = Draft::thread_body(&draft.thread) == draft.body;
        let count = (2..=MAX_THREAD_POSTS).contains(&draft.thread.len());
        if !whole || !count || draft.thread.iter().any(|p| p.trim().is_empty()) {
            violations.push(violation(
                PolicyRule::PlatformLength,
                format!(
                    "a thread is 2 to {MAX_THREAD_POSTS} posts of text, read whole as the posts joined by a blank line; this one has {}",
                    draft.thread.len()
                ),
            ));
        }
    }
    let bounds = limit(draft.platform);
    for (which, text) in posts {
        let (used, max, unit) = length_on(input.workspace, draft.platform, text);
        if used > max {
            violations.push(violation(
                PolicyRule::PlatformLength,
                format!("{which}{used} of {max} {unit} on {}", draft.platform.as_str()),
            ));
        }
        if let Some(max_bytes) = bounds.max_bytes
            && text.len() > max_bytes
        {
            violations.push(violation(
                PolicyRule::PlatformLength,
                format!("{which}{} of {max_bytes} UTF-8 bytes on {}", text.len(), draft.platform.as_str()),
            ));
        }
        let found = links(text);
        if let Some(max_links) = bounds.max_links
            && found.len() > max_links
        {
            violations.push(violation(
                PolicyRule::LinkCount,
                format!("{which}{} links; {} allows {max_links}", found.len(), draft.platform.as_str()),
            ));
        }
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
    let found = links(&draft.body);
    let refused: Vec<links::Refusal> =
        found.iter().filter_map(|l| links::check(l, &input.workspace.link_allow_list).err()).collect();
    if let Some(first) = refused.first() {
        let more = if refused.len() > 1 { format!(" (and {} more)", refused.len() - 1) } else { String::new() };
        violations.push(violation(PolicyRule::LinkAllowList, clip(&format!("{}{more}", first.sentence()))));
    }
    violations.extend(link_grounded_violations(input, &found));
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
    violations.extend(markup_violation(&draft.body));
    violations.extend(instruction_violation(&draft.body).or_else(|| repeated_flag(&draft.body, input.flagged)));
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
pub fn clip_to(text: &str, max: usize) -> String {
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

/// The evidence `draft`'s figures, quotations and links may rest on: what its claims cite (that
/// resolves in `evidence`), each once.
pub fn cited_evidence<'a>(draft: &Draft, evidence: &'a HashMap<EvidenceId, Evidence>) -> Vec<&'a Evidence> {
    let mut seen = std::collections::HashSet::new();
    draft.claims.iter().flat_map(|c| &c.evidence).filter(|e| seen.insert(*e)).filter_map(|e| evidence.get(e)).collect()
}

/// The body without its links (a link's digits are not figures).
fn without_links(body: &str) -> String {
    let mut text = body.to_owned();
    for link in links(body) {
        text = text.replacen(link, " ", 1);
    }
    text
}

/// The findings of the grounding rules (`figures_grounded`, `quotes_exact`, `quote_context`)
/// for `body` citing `evidence`, with `extra` texts that may ground figures only: one violation
/// per figure, quotation or cut at fault (at most five, then a count). Dara receives these too.
pub fn grounding_findings(body: &str, evidence: &[&Evidence], extra: &[&str]) -> Vec<PolicyViolation> {
    let cited: Vec<harmonia_grounding::Cited<'_>> = evidence.iter().map(|e| e.cited()).collect();
    // A link's digits are not figures, in the post or in the texts it may repeat.
    let extra: Vec<String> = extra.iter().map(|t| without_links(t)).collect();
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let figures =
        harmonia_grounding::ungrounded(&without_links(body), &cited, &extra).iter().map(|u| u.sentence()).collect();
    let quotes = harmonia_grounding::inexact_quotations(body, &cited)
        .into_iter()
        .map(|q| format!("the quotation \"{}\" is not an exact span of the evidence the draft cites", clip_to(q, 120)))
        .collect();
    let cuts = harmonia_grounding::cuts(body, &cited).iter().map(|c| c.sentence()).collect();
    let mut out = named(PolicyRule::FiguresGrounded, figures);
    out.extend(named(PolicyRule::QuotesExact, quotes));
    out.extend(named(PolicyRule::QuoteContext, cuts));
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
/// order on the next: "SYSTEM:" then "Publish this draft…"), else its first line carrying an
/// encoded payload that decodes to an order (or an order to decode one), with the detector's
/// reason (the signals, never the text).
fn instruction_violation(body: &str) -> Option<PolicyViolation> {
    let lines: Vec<&str> = body.lines().filter(|l| !l.trim().is_empty()).collect();
    let single = lines.iter().find_map(|l| untrusted::flagged(l)).map(|f| f.reason());
    let paired = || lines.windows(2).find_map(|pair| untrusted::flagged(&pair.join("\n"))).map(|f| f.reason());
    let encoded = || lines.iter().find_map(|l| untrusted::encoded(l)).map(|e| e.reason());
    single.or_else(paired).or_else(encoded).map(|reason| {
        violation(
            PolicyRule::NoInstructionText,
            clip(&format!("a line of the post reads as an order to the system: {reason}")),
        )
    })
}

/// Words a post may share with a flagged span before it counts as repeating it.
const REPEATED_WORDS: usize = 5;

/// The `no_instruction_text` finding for a post that repeats what the source said in a span
/// ingest flagged: any [`REPEATED_WORDS`] consecutive words of it (all of a shorter one of three
/// words or more), compared in lower case after the speech's match form — so half of an
/// instruction that captions split over two cues is caught on its own.
fn repeated_flag(body: &str, flagged: &[FlaggedText]) -> Option<PolicyViolation> {
    let words = |text: &str| -> Vec<String> {
        harmonia_contracts::domain::match_form(text)
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let post = words(body);
    let holds = |run: &[String]| post.windows(run.len()).any(|w| w == run);
    flagged.iter().find_map(|f| {
        let said = words(&f.text);
        let repeated = match said.len() {
            0..=2 => false,
            n if n < REPEATED_WORDS => holds(&said),
            _ => said.windows(REPEATED_WORDS).any(holds),
        };
        repeated.then(|| {
            let place = match f.cues {
                Some([a, b]) if a == b => format!(" (cue {a})"),
                Some([a, b]) => format!(" (cues {a} to {b})"),
                None => String::new(),
            };
            violation(
                PolicyRule::NoInstructionText,
                format!("the post repeats what the source says in a span flagged as {}{place}", f.kind.describe()),
            )
        })
    })
}

/// What review should know before Dara reads a draft: the grounding findings over the
/// evidence the draft cites (figures may also rest on the brief's call to action), the markup
/// finding and the instruction finding, exactly as policy would report them.
pub fn review_findings(body: &str, evidence: &[&Evidence], call_to_action: Option<&str>) -> Vec<PolicyViolation> {
    let mut findings = grounding_findings(body, evidence, call_to_action.as_slice());
    findings.extend(markup_violation(body));
    findings.extend(instruction_violation(body));
    findings
}

/// The `no_markup` finding for `body`: what markup it holds, never the markup itself.
fn markup_violation(body: &str) -> Option<PolicyViolation> {
    untrusted::markup(body)
        .map(|m| violation(PolicyRule::NoMarkup, clip(&format!("the post holds markup: {}", m.reason()))))
}

/// The grounding findings of the draft; its figures may also rest on the workspace's call to
/// action, which the operator wrote and the draft may repeat.
fn grounding_violations(input: &PolicyInput<'_>) -> Vec<PolicyViolation> {
    grounding_findings(
        &input.draft.body,
        &cited_evidence(input.draft, input.evidence),
        &[input.workspace.call_to_action.as_str()],
    )
}

/// The `link_grounded` findings: links of the body that are on an allowed host but are neither
/// the call to action's link nor a link of the evidence the draft cites (an invented deep link
/// on a trusted host).
fn link_grounded_violations(input: &PolicyInput<'_>, found: &[&str]) -> Vec<PolicyViolation> {
    let cited = cited_evidence(input.draft, input.evidence);
    let mut known: Vec<&str> = links(&input.workspace.call_to_action);
    for e in &cited {
        known.extend(links(&e.text));
        known.extend(e.url.as_deref());
    }
    let invented: Vec<String> = found
        .iter()
        .filter(|l| links::check(l, &input.workspace.link_allow_list).is_ok())
        .filter(|l| !known.iter().any(|k| links::same(k, l)))
        .map(|l| {
            format!(
                "the link {} is neither the call to action's link nor in the evidence the draft cites",
                clip_to(l, 120)
            )
        })
        .collect();
    named(PolicyRule::LinkGrounded, invented)
}

pub mod limits;
pub mod links;

#[cfg(test)]
mod tests;
