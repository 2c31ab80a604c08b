//! `harmonia show JOB [--json]`: everything stored about one job, as the operator reads it
//! before a decision ([`harmonia_pipeline::detail::JobDetail`], the same form as `GET
//! /v1/jobs/{job}/detail`). Text mode prints sections with headings and wraps prose to the
//! terminal's width; a draft is printed verbatim, line for line, as it would be posted. Colour
//! and bold are used only when stdout is a terminal and `NO_COLOR` is unset.
//!
//! `show` only reads: it does not resume unfinished work, so looking at a job never moves it
//! (like every command, it first hands scheduled posts that are due to publishing).

use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};

use harmonia_contracts::Error;
use harmonia_contracts::domain::{
    ApprovalSubject, Assessment, Assessments, ConnectorKind, Decision, JobStatus, ReceiptOutcome, VerificationOutcome,
};
use harmonia_contracts::event::Round;
use harmonia_contracts::ids::{JobId, WorkspaceId};
use harmonia_contracts::tool::Provenance;
use harmonia_pipeline::detail::{self, Cited, JobDetail};
use serde::Serialize;

use crate::app::{Backend, Output};

/// The narrowest and widest text `show` wraps to: narrower is unreadable, wider is tiring.
const WIDTH: std::ops::RangeInclusive<usize> = 40..=100;

/// `harmonia show JOB`.
pub(crate) async fn show(backend: &Backend, out: &Output, ws: &WorkspaceId, job: &str) -> Result<(), Error> {
    let id: JobId = job.parse()?;
    let detail = match backend {
        Backend::Local(l) => detail::job(&l.env, ws, &id).await?,
        Backend::Cloud(client) => client.detail(&id).await?,
    };
    if out.json {
        let value = serde_json::to_value(&detail).map_err(|e| {
            Error::new(harmonia_contracts::Code::InvalidDocument, "the job's detail did not serialise").with_cause(e)
        })?;
        out.value(&value);
        return Ok(());
    }
    let stdout = std::io::stdout();
    let terminal = stdout.is_terminal();
    let style =
        Style { colour: terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()), width: width(terminal) };
    // Written whole, so a reader that stops early (`| head`) is not a failure.
    let _ = stdout.lock().write_all(render(&detail, &style).as_bytes());
    Ok(())
}

/// The width to wrap to: the terminal's, else `COLUMNS`, else 80, within [`WIDTH`].
fn width(terminal: bool) -> usize {
    let measured = terminal.then(terminal_size::terminal_size).flatten().map(|(w, _)| usize::from(w.0));
    let columns = || std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok());
    measured.or_else(columns).unwrap_or(80).clamp(*WIDTH.start(), *WIDTH.end())
}

/// How text is printed: with or without ANSI colour, wrapped to `width` columns.
struct Style {
    colour: bool,
    width: usize,
}

impl Style {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.colour { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
    }

    fn heading(&self, text: &str) -> String {
        self.paint("1;4", text)
    }

    fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }

    fn good(&self, text: &str) -> String {
        self.paint("32", text)
    }

    fn bad(&self, text: &str) -> String {
        self.paint("31", text)
    }
}

/// Greedy word wrap of `text` to `width` columns, every line after the first indented by
/// `indent` spaces (the first is indented by the caller's label). A word longer than a line
/// stands on its own line, unbroken.
fn wrap(text: &str, first: usize, indent: usize, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut used = first;
    for word in text.split_whitespace() {
        let len = word.chars().count();
        if !line.is_empty() && used + 1 + len > width {
            lines.push(std::mem::take(&mut line));
            used = indent;
        }
        if !line.is_empty() {
            line.push(' ');
            used += 1;
        }
        line.push_str(word);
        used += len;
    }
    lines.push(line);
    lines
}

/// How many columns `text` takes: its characters outside ANSI colour sequences.
fn visible(text: &str) -> usize {
    let mut escaped = false;
    text.chars()
        .filter(|&c| {
            let shown = !escaped && c != '\x1b';
            escaped = (escaped || c == '\x1b') && c != 'm';
            shown
        })
        .count()
}

/// A unit enum's serde name (its stable snake_case wire name), spaced for reading. Only unit
/// enums are passed, which always serialise to a string; "?" would mark a caller's mistake.
fn name(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s.replace('_', " "),
        _ => String::from("?"),
    }
}

/// Milliseconds as `m:ss`.
fn clock(ms: u64) -> String {
    format!("{}:{:02}", ms / 60_000, (ms / 1000) % 60)
}

/// A time to the minute, in UTC.
fn when(t: &chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// Dara's seven assessments with their names.
fn seven(a: &Assessments) -> [(&'static str, &Assessment); 7] {
    [
        ("grounding", &a.grounding),
        ("claims", &a.claims),
        ("structure", &a.structure),
        ("clarity", &a.clarity),
        ("brief, voice and audience fit", &a.brief_voice_audience_fit),
        ("platform and CTA usability", &a.platform_cta_usability),
        ("safety and inclusion", &a.safety_inclusion),
    ]
}

/// The text form of `d`.
fn render(d: &JobDetail, s: &Style) -> String {
    let mut t = Text { out: String::new(), style: s };
    let job = &d.job;
    t.heading(&format!("Job {}", job.id));
    t.field("title", &job.title);
    let status = match job.status {
        JobStatus::Verified => s.good(job.status.as_str()),
        JobStatus::Failed | JobStatus::NeedsHuman => s.bad(job.status.as_str()),
        other if other.as_str().ends_with("rejected") => s.bad(other.as_str()),
        other => s.bold(other.as_str()),
    };
    let round = if job.round.is_original() {
        String::new()
    } else {
        format!(", operator round {} of {}", job.round.get(), Round::MAX.get())
    };
    t.line(&format!("  status: {status} (writing pass {}{round})", job.pass.get()));
    t.field("workspace configuration", &format!("version {}", job.workspace_version));
    if let Some(f) = &job.failure {
        let by = f.role.map(|r| format!(" by {r}")).unwrap_or_default();
        t.field("failure", &format!("{} at {}{by}: {}", f.code, f.stage, f.safe_message));
        if f.step.is_some() && harmonia_pipeline::retry::retryable(f.code) {
            t.field("next", &format!("run the step again with `harmonia retry {}`", job.id));
        }
    }
    for r in &d.retries {
        let by = r.failure.role.map(|role| format!(" by {role}")).unwrap_or_default();
        t.field(
            "retried",
            &format!(
                "{} by {}: the {} step, which had failed with {}{by}",
                when(&r.at),
                r.by,
                r.failure.stage,
                r.failure.code
            ),
        );
    }
    if let Some(f) = &job.stalled {
        let by = f.role.map(|r| format!(" for {r}")).unwrap_or_default();
        t.field(
            "waiting",
            &format!(
                "{} at {}{by}: {} It is retried, and carries on once that is resolved.",
                f.code, f.stage, f.safe_message
            ),
        );
    }
    if let Some(a) = &d.awaiting {
        t.line("");
        t.line(&s.bold(&format!("Awaiting a decision on the {}", a.subject.as_str())));
        t.field("version", &a.version);
        t.field("approve with", &format!("harmonia approve {} {} --version {}", job.id, a.subject.as_str(), a.prefix));
        match job.round.next() {
            Some(next) => {
                t.field(
                    "or ask for changes",
                    &format!(
                        "harmonia request-changes {} {} --version {} --feedback \"...\" (round {} of {})",
                        job.id,
                        a.subject.as_str(),
                        a.prefix,
                        next.get(),
                        Round::MAX.get()
                    ),
                );
                if a.subject == ApprovalSubject::Draft {
                    t.field(
                        "or edit it yourself",
                        &format!("harmonia edit {} --version {} --file FILE", job.id, a.prefix),
                    );
                }
            }
            None => t.field("operator rounds", "all 3 used: approve or reject this version"),
        }
    }

    if let Some(src) = &d.source {
        t.heading("Source");
        t.field("title", &src.title);
        if let Some(url) = &src.url {
            t.field("url", url);
        }
        t.field(
            "length",
            &format!(
                "{} ({} segments, {} frames), language {}",
                clock(src.duration_ms),
                src.segments,
                src.frames,
                src.language
            ),
        );
    }

    if !d.flags.is_empty() {
        t.heading(&format!("Flagged in the source ({})", d.flags.len()));
        t.line("  Data, never evidence or a line of a post: check that nothing below reached the draft.");
        for f in &d.flags {
            t.item(&s.bad(&format!("{}, {}:", f.kind.describe(), place(f))), &format!("“{}”", f.text));
            t.item("  why:", &f.reason);
        }
    }

    if let Some(a) = &d.analysis {
        t.heading("Moments (Nimi)");
        for m in &a.moments {
            t.item(
                &format!("[{}] {}–{}", m.evidence_id, clock(m.start_ms), clock(m.end_ms)),
                &format!("“{}”", m.quote),
            );
        }
        t.line("");
        t.line(&s.bold("Angles"));
        for angle in &a.angles {
            let evidence = angle.evidence.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
            t.item(&angle_head(&name(&angle.kind), &angle.title), &format!("{} [{evidence}]", angle.rationale));
        }
    }

    if let Some(st) = &d.strategy {
        t.heading(&format!("Strategy (Ryan){}", round_label(st.round)));
        t.field("version", &st.content_hash);
        t.field("objective", &st.objective);
        t.field("audience", &st.audience);
        t.field("voice", &st.voice);
        for b in &st.briefs {
            t.line("");
            let platforms = b.platforms.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(", ");
            t.line(&s.bold(&format!("Brief {} ({platforms})", b.id)));
            t.field("angle", &b.angle);
            t.field("key message", &b.key_message);
            t.field("audience", &b.audience);
            if let Some(cta) = &b.call_to_action {
                t.field("call to action", cta);
            }
            t.evidence(&b.evidence);
        }
        let earlier: Vec<_> = d.strategy_versions.iter().filter(|v| v.content_hash != st.content_hash).collect();
        if !earlier.is_empty() {
            t.line("");
            t.line(&s.bold("Earlier versions"));
            for v in earlier {
                let leads =
                    v.briefs.first().map(|b| format!(" Led by brief {}: {}", b.id, b.key_message)).unwrap_or_default();
                t.item(
                    &format!("round {} (version {}):", v.round.get(), detail::version_prefix(&v.content_hash)),
                    &format!("{}{leads}", v.objective),
                );
            }
        }
    }

    if let Some(plan) = &d.plan {
        t.heading("Plan (Temi)");
        t.field("cadence", &plan.cadence);
        let selected = d.selected_item.as_ref().map(|i| &i.id);
        for i in &plan.items {
            let mark = if Some(&i.id) == selected { s.bold(" [selected]") } else { String::new() };
            let what = format!(
                "{} {} {} for brief {}, {} to {}, priority {}{mark}",
                i.id,
                i.channel.as_str(),
                name(&i.format),
                i.brief,
                when(&i.window.start),
                when(&i.window.end),
                i.priority.get()
            );
            t.item(&format!("{}.", i.sequence), &what);
        }
    }

    for draft in &d.drafts {
        t.heading(&match draft.provenance {
            Provenance::Operator => format!("Draft{}, written by an operator", round_label(draft.round)),
            _ => format!("Draft{}, pass {} (Noni)", round_label(draft.round), draft.pass.get()),
        });
        t.field("for", &format!("{} (plan item {})", draft.platform.as_str(), draft.item));
        t.field("version", &draft.content_hash);
        let rule = |label: &str| format!("  {label}{}", "-".repeat(s.width.saturating_sub(2 + label.len())));
        let count = |l: &detail::Length| {
            let count = format!("{} / {} {}", l.used, l.limit, l.unit);
            format!("  {}", if l.used > l.limit { s.bad(&count) } else { s.good(&count) })
        };
        if draft.thread.is_empty() {
            t.line("  as it would be posted:");
            t.line(&rule(""));
            t.verbatim(&draft.body);
            t.line(&rule(""));
            t.line(&count(&draft.length));
        } else {
            let n = draft.thread.len();
            t.line(&format!("  as it would be posted: a thread of {n} posts, each replying to the one before"));
            for (i, post) in draft.thread.iter().enumerate() {
                t.line(&rule(&format!("post {} of {n} ", i + 1)));
                t.verbatim(&post.body);
                t.line(&count(&post.length));
            }
            t.line(&rule(""));
        }
        for claim in &draft.claims {
            t.item("claim", &claim.text);
            t.evidence(&claim.evidence);
        }
    }

    for review in &d.reviews {
        let round = d.drafts.iter().find(|dr| dr.id == review.draft).map(|dr| dr.round).unwrap_or_default();
        t.heading(&format!("Review{}, pass {} (Dara)", round_label(round), review.pass.get()));
        t.field("verdict", &name(&review.verdict));
        for (dimension, a) in seven(&review.assessments) {
            t.item(&format!("{dimension} {}/5", a.score.get()), &a.rationale);
        }
        if review.issues.is_empty() {
            t.line("  no issues");
        }
        for issue in &review.issues {
            t.item(
                &format!("{} issue, {}", name(&issue.severity), name(&issue.dimension)),
                &format!("{} Fix: {}", issue.problem, issue.fix),
            );
        }
    }

    for p in &d.policy {
        let round = d.drafts.iter().find(|dr| dr.id == p.draft).map(|dr| dr.round).unwrap_or_default();
        t.heading(&format!("Policy{}", round_label(round)));
        let outcome = name(&p.outcome);
        let outcome = if p.rules.iter().all(|r| r.passed) { s.good(&outcome) } else { s.bad(&outcome) };
        t.field(&outcome, &format!("for {} version {}", p.draft, p.content_hash));
        for r in &p.rules {
            let mark = if r.passed { s.good("pass") } else { s.bad("FAIL") };
            t.item(&format!("{mark} {}", name(&r.rule)), &r.reason);
        }
    }

    if !d.decisions.is_empty() {
        t.heading("Decisions");
        for a in &d.decisions {
            let subject = a.subject.as_str();
            let what = match &a.decision {
                Decision::Approved => format!("approved the {subject}"),
                Decision::Rejected { reason } => format!("rejected the {subject}: “{reason}”"),
                Decision::ChangesRequested { feedback } => format!("asked for changes to the {subject}: “{feedback}”"),
                Decision::Edited { draft, content_hash } => {
                    format!("edited the {subject}, writing {draft} (version {})", detail::version_prefix(content_hash))
                }
                Decision::RoundsExhausted => {
                    format!("asked for a round beyond the last at the {subject} gate, so the job needs a person")
                }
            };
            let version = format!("version {}{}", detail::version_prefix(&a.subject_hash), round_label(a.round));
            t.item(&when(&a.decided_at), &format!("{} {what}; on {version}.", a.operator));
        }
    }

    if let Some(p) = &d.publication {
        t.heading("Publication");
        let connector = match p.claim.connector {
            ConnectorKind::Sandbox => "the sandbox",
            ConnectorKind::Webhook => "the webhook",
            ConnectorKind::Bluesky => "Bluesky",
            ConnectorKind::Mastodon => "Mastodon",
            ConnectorKind::Linkedin => "LinkedIn",
            ConnectorKind::X => "X",
        };
        t.field(
            "claimed",
            &format!(
                "{} for {} through {connector}, version {}",
                when(&p.claim.claimed_at),
                p.platform.as_str(),
                p.content_hash
            ),
        );
        let receipt = match p.receipt.as_ref().map(|r| &r.outcome) {
            None => "none yet".to_owned(),
            Some(outcome) => receipt_text(outcome),
        };
        t.field("receipt", &receipt);
        let n = p.thread.len();
        for (i, post) in p.thread.iter().enumerate() {
            let state = match (&post.receipt, post.begun) {
                (Some(outcome), _) => receipt_text(outcome),
                (None, true) => "begun, not confirmed: it is read back before anything else is sent".to_owned(),
                (None, false) => "not posted yet".to_owned(),
            };
            t.field(&format!("post {} of {n}", i + 1), &state);
        }
        let verification = match p.verification.as_ref().map(|v| &v.outcome) {
            None => "not yet".to_owned(),
            Some(VerificationOutcome::Verified { post }) if n > 0 => format!(
                "verified: the {n} posts have the approved text, each replying to the one before, from post {post}"
            ),
            Some(VerificationOutcome::Verified { post }) => format!("verified: post {post} has the approved text"),
            Some(VerificationOutcome::Missing) => "missing: no post was found".to_owned(),
            Some(VerificationOutcome::Mismatch { post }) if n > 0 => {
                format!("mismatch: post {post} differs from the approval, or does not reply to the post before it")
            }
            Some(VerificationOutcome::Mismatch { post }) => format!("mismatch: post {post} differs from the approval"),
        };
        t.field("verification", &verification);
    }

    if !d.model_use.is_empty() || d.budget.is_some() {
        t.heading("Model use");
        for line in crate::app::usage_lines(&d.model_use) {
            t.line(&format!("  {line}"));
        }
        if let Some(b) = &d.budget {
            let left = b.limit.saturating_sub(b.used);
            t.field(
                "budget",
                &format!("{} of {} tokens used ([model] max_tokens_per_job); {left} left", b.used, b.limit),
            );
        }
    }
    t.out
}

/// What a platform's answer to one post says.
fn receipt_text(outcome: &ReceiptOutcome) -> String {
    match outcome {
        ReceiptOutcome::Applied { post, url, record } => format!(
            "applied as post {post}{}{}",
            url.as_ref().map(|u| format!(" ({u})")).unwrap_or_default(),
            record.as_ref().map(|r| format!(", record {} (CID {})", r.uri, r.cid)).unwrap_or_default()
        ),
        ReceiptOutcome::Unknown => "unknown: verification reads back".to_owned(),
        ReceiptOutcome::Failed { code, retry_after: None } => format!("failed: {code}"),
        ReceiptOutcome::Failed { code, retry_after: Some(at) } => {
            format!("failed: {code}; the platform allows posting again at {}", at.format("%Y-%m-%d %H:%M UTC"))
        }
    }
}

/// ", round N" for an operator round; nothing for the original.
fn round_label(round: Round) -> String {
    if round.is_original() { String::new() } else { format!(", round {}", round.get()) }
}

/// The text being built, in one style.
struct Text<'a> {
    out: String,
    style: &'a Style,
}

impl Text<'_> {
    fn line(&mut self, line: &str) {
        let _ = writeln!(self.out, "{line}");
    }

    /// Text exactly as it would be posted: never wrapped or trimmed, ending its own line.
    fn verbatim(&mut self, text: &str) {
        self.out.push_str(text);
        if !text.ends_with('\n') {
            self.out.push('\n');
        }
    }

    fn heading(&mut self, title: &str) {
        let heading = self.style.heading(title);
        if !self.out.is_empty() {
            self.line("");
        }
        self.line(&heading);
    }

    /// `  label: value`, the value wrapped with a hanging indent.
    fn field(&mut self, label: &str, value: &str) {
        self.item(&format!("{label}:"), value);
    }

    /// `  - head value`, the value wrapped under the head.
    fn item(&mut self, head: &str, value: &str) {
        let lead = 2 + visible(head) + 1;
        let lines = wrap(value, lead, 6, self.style.width);
        let mut lines = lines.iter();
        let first = lines.next().map(String::as_str).unwrap_or_default();
        let line = format!("  {head} {first}");
        self.line(line.trim_end());
        for rest in lines {
            self.line(&format!("{:6}{rest}", ""));
        }
    }

    /// Cited evidence, each quoted: a moment with its time range, a web page with its address.
    fn evidence(&mut self, cited: &[Cited]) {
        for c in cited {
            match (&c.quote, c.start_ms, c.end_ms) {
                (Some(q), Some(start), Some(end)) => {
                    self.item(&format!("  [{}] {}–{}", c.evidence_id, clock(start), clock(end)), &format!("“{q}”"));
                    for near in &c.near_flags {
                        let at = near.cues.map_or_else(
                            || clock(near.start_ms),
                            |[a, b]| if a == b { format!("cue {a}") } else { format!("cues {a}–{b}") },
                        );
                        let note = format!(
                            "      within 10 seconds of text flagged as {} ({at}, {}–{})",
                            near.kind.describe(),
                            clock(near.start_ms),
                            clock(near.end_ms)
                        );
                        let painted = self.style.bad(&note);
                        self.line(&painted);
                    }
                }
                (Some(q), _, _) if c.url.is_some() => {
                    let url = c.url.as_deref().unwrap_or_default();
                    self.item(&format!("  [{}] web page", c.evidence_id), &format!("{url}: “{q}”"));
                }
                _ => self.item(&format!("  [{}]", c.evidence_id), "(not one of this job's moments)"),
            }
        }
    }
}

/// Where a flag lies, in words: the title, a frame and its time, a cue or cues and their time.
fn place(f: &detail::Flag) -> String {
    use harmonia_contracts::domain::SourcePart;
    let time = match (f.start_ms, f.end_ms) {
        (Some(a), Some(b)) if a != b => format!(" {}–{}", clock(a), clock(b)),
        (Some(a), _) => format!(" at {}", clock(a)),
        _ => String::new(),
    };
    match (f.part, f.cues) {
        (SourcePart::Title, _) => "the title".to_owned(),
        (SourcePart::Frame { index }, _) => format!("frame {}{time}", index + 1),
        (_, Some([a, b])) if a == b => format!("cue {a}{time}"),
        (_, Some([a, b])) => format!("cues {a}–{b} read together{time}"),
        (_, None) => format!("the transcript{time}"),
    }
}

/// The head of an angle's line: its kind and its quoted title, so that the rationale after it
/// reads as its own sentence rather than running on from the title.
fn angle_head(kind: &str, title: &str) -> String {
    format!("{kind} angle “{title}”:")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_angle_title_is_quoted_apart_from_its_rationale() {
        let head = angle_head("source", "Measured outcomes from the source");
        assert_eq!(head, "source angle “Measured outcomes from the source”:");
        let style = Style { colour: false, width: 200 };
        let mut t = Text { out: String::new(), style: &style };
        t.item(&head, "The speaker backs the story with specifics. [m-1000]");
        assert_eq!(
            t.out.trim_end(),
            "  source angle “Measured outcomes from the source”: The speaker backs the story with specifics. [m-1000]"
        );
    }

    #[test]
    fn wrapping_keeps_every_word_within_the_width_and_indents_the_rest() {
        let text = "one two three four five six seven eight nine ten eleven twelve";
        let lines = wrap(text, 10, 6, 30);
        assert_eq!(lines.join(" "), text, "no word lost or split");
        assert!(10 + lines[0].chars().count() <= 30);
        assert!(lines[1..].iter().all(|l| 6 + l.chars().count() <= 30), "{lines:?}");
        assert!(lines.len() > 2);
        let long = "x".repeat(50);
        assert_eq!(wrap(&long, 0, 0, 30), vec![long.clone()], "an over-long word stands alone, unbroken");
    }

    #[test]
    fn colour_is_only_added_when_asked_for() {
        let plain = Style { colour: false, width: 80 };
        assert_eq!(plain.heading("Draft"), "Draft");
        let coloured = Style { colour: true, width: 80 };
        assert_eq!(coloured.heading("Draft"), "\x1b[1;4mDraft\x1b[0m");
        assert_eq!(visible(&coloured.heading("Draft")), 5, "colour takes no columns");
    }

    #[test]
    fn times_are_minutes_and_seconds() {
        assert_eq!(clock(0), "0:00");
        assert_eq!(clock(83_500), "1:23");
        assert_eq!(clock(3_600_000), "60:00");
    }
}
