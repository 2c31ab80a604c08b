//! The instruction detector for untrusted text (transcripts, frame descriptions, titles,
//! drafts): source material is data, never instructions, so text that reads like an order
//! to the system is marked at ingest and kept out of briefs, claims and posts.
//!
//! # How a text is scored
//!
//! The text is first normalised so that disguises collapse onto plain words
//! ([`normalise`]): format characters (zero-width spaces and joiners, the byte-order mark,
//! soft hyphens) are removed; NFKC folds full-width and compatibility forms (`ＳＹＳＴＥＭ`,
//! `：`); Latin look-alikes from other scripts (Cyrillic `а`, Greek `ο`, …) and digits or
//! symbols inside words (`1gn0re`, `@pprove`) are mapped to the letters they imitate; the
//! text is lower-cased, and letter-spaced words (`s y s t e m`, `p.u.b.l.i.s.h`) are joined.
//!
//! Each clause (text between sentence punctuation) is then read as words, and independent
//! signals add weighted points, each counted once per text:
//!
//! | signal | points | what it is |
//! | --- | --- | --- |
//! | role marker | 4 | a clause, or a quotation or colon inside it, opening with a role label and a colon or bracket: `SYSTEM:`, `Assistant:`, `[system]`, `<\|system\|>`, `SYSTEM OVERRIDE 2025:`, `note to the model:`, `a slide reading: 'note to the model: …'` |
//! | override | 4 | a verb that sets rules aside (`ignore`, `disregard`, `bypass`, …) followed within five words by what it sets aside (`instructions`, `rules`, `guardrails`, `review`, …) |
//! | persona | 3 | re-casting the reader (`you are now`, `act as`, `pretend`, `from now on`, `developer mode`, `new instructions`) |
//! | tool name | 3 | a snake_case identifier built on an action word (`publish_post`, `send_email`, `approve_draft`) or a call (`publish(`) |
//! | publishing order | 3 | a clause-initial action verb (`publish`, `post`, `approve`, `mark`, `schedule`, …) with a pipeline target within six words (`draft`, `post`, `channel`, `everything`, `it`, …) |
//! | approval claim | 3 | an approval word (`approved`, `authorized`, `cleared`, `signed off`, …) in a clause that names the pipeline's gate or work (`gate`, `human`, `operator`, `reviewer`, `draft`, `everything`, …) |
//! | addressee | 2 | a system, assistant or model (`ai`, `assistant`, `model`, `llm`, `bot`, …) called on (`hey assistant,`, `model, …`) or told what to do (`assistant, you must`) — not merely mentioned |
//! | call order | 2 | `call`, `invoke`, `execute`, `run` or `trigger` followed by a tool name or `tool`/`function` |
//! | urgency | 1 | `now`, `immediately`, `right away`, … — only together with another signal |
//! | disguise | 2 | normalisation changed the text (zero-width, full-width, look-alike or spaced letters) — only together with another signal |
//!
//! A text is flagged at [`THRESHOLD`] points. No single signal reaches it, so ordinary speech
//! that touches one topic ("the system will be upgraded", "we approved the budget", "post
//! it on every channel") passes, while an order to the system carries two signals or more:
//! a role marker with any order, an override with an addressee, a tool name with a call.

use std::borrow::Cow;
use unicode_normalization::UnicodeNormalization;

/// Points at or above which a text is flagged as instruction-like.
pub const THRESHOLD: u32 = 5;

/// One signal the detector found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Signal {
    /// A role label opening a clause (`SYSTEM:`, `Assistant:`).
    RoleMarker,
    /// An order to set instructions or rules aside.
    Override,
    /// Re-casting the reader as another persona.
    Persona,
    /// A tool or function name.
    ToolName,
    /// An order to publish, approve or schedule the pipeline's work.
    PublishingOrder,
    /// A claim that the gate or the work is already approved or published.
    ApprovalClaim,
    /// The system, assistant or model addressed directly.
    Addressee,
    /// An order to call a tool or function.
    CallOrder,
    /// A demand for immediacy.
    Urgency,
    /// Text disguised by zero-width, full-width, look-alike or spaced characters.
    Disguise,
}

impl Signal {
    /// Its weight.
    pub const fn points(self) -> u32 {
        match self {
            Self::RoleMarker | Self::Override => 4,
            Self::Persona | Self::ToolName | Self::PublishingOrder | Self::ApprovalClaim => 3,
            Self::Addressee | Self::CallOrder | Self::Disguise => 2,
            Self::Urgency => 1,
        }
    }

    /// What it is, in words an operator reads.
    pub const fn describe(self) -> &'static str {
        match self {
            Self::RoleMarker => "a role marker",
            Self::Override => "an order to ignore instructions",
            Self::Persona => "a persona change",
            Self::ToolName => "a tool name",
            Self::PublishingOrder => "an order to publish or approve",
            Self::ApprovalClaim => "a claim of approval",
            Self::Addressee => "words addressed to the system",
            Self::CallOrder => "an order to call a tool",
            Self::Urgency => "urgency",
            Self::Disguise => "disguised characters",
        }
    }
}

/// The detector's verdict on one text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Score {
    /// Total points.
    pub points: u32,
    /// The signals found, in table order, each once.
    pub signals: Vec<Signal>,
}

impl Score {
    /// Whether the text is instruction-like.
    pub fn flagged(&self) -> bool {
        self.points >= THRESHOLD
    }

    /// A sentence naming the score and its signals (never the text itself).
    pub fn reason(&self) -> String {
        let signals: Vec<&str> = self.signals.iter().map(|s| s.describe()).collect();
        format!("instruction-like text (score {}, threshold {THRESHOLD}: {})", self.points, signals.join(", "))
    }
}

/// Score `text`.
pub fn score(text: &str) -> Score {
    let normal = normalise(text);
    // Most text has none of the words every signal needs: its score is known without reading
    // it clause by clause.
    if !may_signal(&normal.text) {
        return Score { points: 0, signals: Vec::new() };
    }
    scored(&normal)
}

/// Whether normalised `text` has something every signal but urgency (which never counts
/// alone) and disguise (which needs another) needs: a word that can open a role label,
/// set rules aside (or a phrase folded into `ignore`), call, act, claim approval, re-cast
/// the reader or address the system, or a tool name's underscore or a call's bracket.
fn may_signal(text: &str) -> bool {
    text.contains(['_', '(']) || TRIGGERS.with(|t| text_words(text).any(|w| t.contains(w)))
}

/// FNV-1a, to look a text's words up among the detector's own: the set is fixed when it is
/// built, so what a text holds cannot crowd its buckets, and a keyed hash would only make every
/// lookup slower.
#[derive(Default)]
struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for b in bytes {
            hash = (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }
}

thread_local! {
    /// The words [`may_signal`] looks for.
    static TRIGGERS: std::collections::HashSet<&'static str, std::hash::BuildHasherDefault<Fnv>> = [
        ROLES,
        OVERRIDE_VERBS,
        // The phrases `words` folds into `ignore` begin with these.
        &["pay", "do", "don't", "dont", "no", "set", "stop", "throw", "get"],
        CALL_VERBS,
        ACTIONS,
        APPROVAL_WORDS,
        // The persona phrases of `scan_words` begin with these.
        &["you", "act", "pretend", "from", "developer", "jailbreak", "new", "your"],
        ADDRESSED,
    ]
    .concat()
    .into_iter()
    .collect();
}

/// Every word of `text`, split and trimmed as [`words`] splits a clause, without its folding.
fn text_words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '\''))
        .map(|w| w.trim_matches('\''))
        .filter(|w| !w.is_empty())
}

/// [`score`] of a normalised text, clause by clause.
fn scored(normal: &Normalised) -> Score {
    let mut signals = std::collections::BTreeSet::new();
    // Chat-template tokens (`<|system|>`, `<|im_start|>`) are role labels in angle brackets;
    // their bars must not split the label from its bracket as clause breaks.
    let delimited: Cow<'_, str> = if normal.text.contains('|') {
        Cow::Owned(normal.text.replace("<|", "<").replace("|>", ">"))
    } else {
        Cow::Borrowed(&normal.text)
    };
    for clause in clauses(&delimited) {
        scan_clause(clause, &mut signals);
    }
    if calls_a_tool(&normal.text) {
        signals.insert(Signal::ToolName);
    }
    let base: u32 = signals.iter().map(|s| s.points()).sum();
    if base > 0 && normal.disguised {
        signals.insert(Signal::Disguise);
    }
    if base == 0 || base == Signal::Urgency.points() {
        // Urgency alone is ordinary speech.
        signals.clear();
    }
    let signals: Vec<Signal> = signals.into_iter().collect();
    Score { points: signals.iter().map(|s| s.points()).sum(), signals }
}

/// The score of `text` when it is flagged, else `None`.
pub fn flagged(text: &str) -> Option<Score> {
    Some(score(text)).filter(Score::flagged)
}

/// A normalised text and whether normalisation undid a disguise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Normalised {
    /// The text: no format characters, NFKC, look-alikes mapped, lower case, single spaces,
    /// spaced letters joined.
    pub text: String,
    /// Whether zero-width, full-width, look-alike or spaced characters were found.
    pub disguised: bool,
}

/// Characters that render as nothing: zero-width spaces and joiners, word joiners, the
/// byte-order mark, soft hyphens and bidirectional controls.
fn invisible(ch: char) -> bool {
    matches!(ch as u32, 0x00AD | 0x034F | 0x180E | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0xFEFF)
}

/// Latin letters imitated by letters of other scripts (a subset of Unicode's
/// confusables.txt: the Cyrillic and Greek look-alikes of a–z that NFKC leaves alone).
fn latin_lookalike(ch: char) -> Option<char> {
    Some(match ch {
        'а' | 'α' => 'a',
        'в' | 'β' => 'b',
        'с' | 'ϲ' => 'c',
        'ԁ' => 'd',
        'е' | 'ё' | 'ε' => 'e',
        'һ' => 'h',
        'і' | 'ї' | 'ι' | 'ı' => 'i',
        'ј' => 'j',
        'к' | 'κ' => 'k',
        'м' => 'm',
        'п' | 'η' => 'n',
        'о' | 'ο' | 'σ' => 'o',
        'р' | 'ρ' => 'p',
        'ԛ' => 'q',
        'г' => 'r',
        'ѕ' => 's',
        'т' | 'τ' => 't',
        'υ' | 'ս' => 'u',
        'ν' => 'v',
        'ѡ' | 'ω' => 'w',
        'х' | 'χ' => 'x',
        'у' | 'γ' => 'y',
        'ʐ' => 'z',
        _ => return None,
    })
}

/// Digits and symbols that stand for letters inside a word (`1gn0re`, `@pprove`).
fn leet(ch: char) -> Option<char> {
    Some(match ch {
        '0' => 'o',
        '1' | '!' => 'i',
        '3' => 'e',
        '4' | '@' => 'a',
        '5' | '$' => 's',
        '7' => 't',
        _ => return None,
    })
}

/// Normalise `text` for scoring (see the module docs).
///
/// One pass over the words: each is written out as it comes, but a single letter waits with
/// the others beside it, since a run of three or more is one word spelled out.
pub fn normalise(text: &str) -> Normalised {
    let (mapped, mut disguised) = fold(text);
    let mut out = Spaced::with_capacity(mapped.len());
    // The single letters waiting, one after the other.
    let mut run = String::new();
    for raw in mapped.split_whitespace() {
        let word = unleet(raw);
        disguised |= matches!(word, Cow::Owned(_));
        let word = spelled_out(&word).map_or(word, Cow::Owned);
        if single_letter(&word) {
            run.push_str(&word);
            continue;
        }
        disguised |= out.letters(&run);
        run.clear();
        out.word(&word);
    }
    disguised |= out.letters(&run);
    Normalised { text: out.text, disguised }
}

/// Normalised text as it is written: words with single spaces between them.
struct Spaced {
    text: String,
}

impl Spaced {
    fn with_capacity(capacity: usize) -> Self {
        Self { text: String::with_capacity(capacity) }
    }

    fn word(&mut self, word: &str) {
        if !self.text.is_empty() {
            self.text.push(' ');
        }
        self.text.push_str(word);
    }

    /// Single letters (`run`, one after the other): one word when there are three or more (and
    /// then whether letters were joined), else each on its own.
    fn letters(&mut self, run: &str) -> bool {
        if run.chars().nth(2).is_some() {
            self.word(run);
            return true;
        }
        for (at, letter) in run.char_indices() {
            self.word(&run[at..at + letter.len_utf8()]);
        }
        false
    }
}

/// A word that spells out three or more letters between dots, hyphens or asterisks
/// (`p.u.b.l.i.s.h`), as one word (`publish`).
fn spelled_out(word: &str) -> Option<String> {
    let pieces = || word.split(['.', '-', '*']).filter(|p| !p.is_empty());
    (word.contains(['.', '-', '*']) && pieces().nth(2).is_some() && pieces().all(single_letter))
        .then(|| pieces().collect())
}

/// `text` without format characters, in NFKC, look-alikes mapped, in lower case; and whether
/// any of that changed a character. ASCII text (most text) has no format characters, is its
/// own NFKC and has no look-alikes, so only its case is folded.
fn fold(text: &str) -> (String, bool) {
    if text.is_ascii() { (text.to_ascii_lowercase(), false) } else { fold_any(text) }
}

/// [`fold`] for any text.
fn fold_any(text: &str) -> (String, bool) {
    let visible: String = text.chars().filter(|c| !invisible(*c)).collect();
    let mut disguised = visible.len() != text.len();
    let folded: String = visible.nfkc().collect();
    disguised |= folded != visible;
    let mut mapped = String::with_capacity(folded.len());
    for ch in folded.chars().flat_map(char::to_lowercase) {
        match latin_lookalike(ch) {
            Some(latin) => {
                disguised = true;
                mapped.push(latin);
            }
            None => mapped.push(ch),
        }
    }
    (mapped, disguised)
}

/// Map digits and symbols to letters inside a word that has at least two letters, so
/// numbers, prices and ordinals (`2025`, `$3.75`, `1st`, `10am`) stay as they are; a word
/// with nothing to map is borrowed as it is.
fn unleet(word: &str) -> Cow<'_, str> {
    if !word.chars().any(|c| leet(c).is_some()) {
        return Cow::Borrowed(word);
    }
    let start = word.find(|c: char| c.is_alphanumeric() || c == '@' || c == '$').unwrap_or(word.len());
    let end = word
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_alphanumeric())
        .map_or(start, |(at, c)| at + c.len_utf8())
        .max(start);
    let inner = &word[start..end];
    let letters = inner.chars().filter(|c| c.is_alphabetic()).count();
    let stand_ins = inner.chars().filter(|c| leet(*c).is_some()).count();
    // Digits then letters only is a number with its suffix, not a disguise.
    let suffixed = inner.trim_start_matches(|c: char| c.is_ascii_digit()).chars().all(char::is_alphabetic);
    if letters < 2 || stand_ins == 0 || suffixed {
        return Cow::Borrowed(word);
    }
    let mapped: String = inner.chars().map(|c| leet(c).unwrap_or(c)).collect();
    Cow::Owned(format!("{}{mapped}{}", &word[..start], &word[end..]))
}

/// One letter, alone.
fn single_letter(w: &str) -> bool {
    let mut chars = w.chars();
    chars.next().is_some_and(char::is_alphabetic) && chars.next().is_none()
}

/// Clauses: text between sentence punctuation (a role marker's colon stays inside).
fn clauses(text: &str) -> impl Iterator<Item = &str> {
    text.split(['.', '!', '?', ';', '\n', '|']).map(str::trim).filter(|c| !c.is_empty())
}

/// Words of a clause: letters, digits and `_` (so tool names stay whole), with phrases that
/// mean "ignore" folded into that verb first.
fn words(clause: &str) -> Vec<&str> {
    let tokens: Vec<&str> = text_words(clause).collect();
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let rest = &tokens[i..];
        let folded = match rest {
            ["pay", "no", "attention", "to", ..] => Some(4),
            ["pay", "no", "attention", ..]
            | ["do", "not", "follow", ..]
            | ["don't", "follow", ..]
            | ["dont", "follow", ..]
            | ["no", "longer", "follow", ..] => Some(3),
            ["set", "aside", ..] | ["stop", "following", ..] | ["throw", "out", ..] | ["get", "around", ..] => Some(2),
            _ => None,
        };
        match folded {
            Some(n) => {
                out.push("ignore");
                i += n;
            }
            None => {
                out.push(tokens[i]);
                i += 1;
            }
        }
    }
    out
}

const ROLES: &[&str] = &[
    "system",
    "sys",
    "assistant",
    "model",
    "ai",
    "llm",
    "chatbot",
    "bot",
    "agent",
    "gpt",
    "chatgpt",
    "gemini",
    "developer",
    "admin",
    "administrator",
    "root",
    "operator",
    "inst",
    "im_start",
];
const MARKER_WORDS: &[&str] = &[
    "override",
    "message",
    "prompt",
    "note",
    "notice",
    "instruction",
    "instructions",
    "update",
    "alert",
    "mode",
    "command",
    "internal",
    "priority",
    "urgent",
    "important",
    "new",
    "to",
    "the",
    "a",
    "for",
    "from",
    "dear",
    "hey",
    "attention",
    "all",
    // Chat-message fields (`"role": "system", "content": …`).
    "role",
    "content",
];
const ADDRESSED: &[&str] = &[
    "assistant",
    "model",
    "ai",
    "llm",
    "chatbot",
    "bot",
    "agent",
    "system",
    "gpt",
    "chatgpt",
    "gemini",
    "pipeline",
    "harmonia",
    "models",
    "agents",
    "assistants",
];
const OVERRIDE_VERBS: &[&str] = &[
    "ignore",
    "ignoring",
    "disregard",
    "disregarding",
    "forget",
    "override",
    "overrule",
    "bypass",
    "circumvent",
    "disable",
    "skip",
    "abandon",
    "discard",
    "drop",
    "nullify",
    "cancel",
];
const SET_ASIDE: &[&str] = &[
    "instruction",
    "instructions",
    "rule",
    "rules",
    "prompt",
    "prompts",
    "guideline",
    "guidelines",
    "guidance",
    "direction",
    "directions",
    "directive",
    "directives",
    "policy",
    "policies",
    "constraint",
    "constraints",
    "safeguard",
    "safeguards",
    "guardrail",
    "guardrails",
    "restriction",
    "restrictions",
    "programming",
    "review",
    "gate",
    "checks",
    "filters",
    "moderation",
    "approval",
    "orders",
    "commands",
];
const ACTIONS: &[&str] = &[
    "publish",
    "post",
    "approve",
    "mark",
    "schedule",
    "send",
    "release",
    "push",
    "broadcast",
    "tweet",
    "share",
    "delete",
    "remove",
    "set",
    "flag",
    "auto_approve",
];
const TARGETS: &[&str] = &[
    "draft",
    "drafts",
    "post",
    "posts",
    "everything",
    "channel",
    "channels",
    "it",
    "this",
    "gate",
    "queue",
    "status",
    "approved",
    "publication",
    "content",
    "message",
    "platform",
    "platforms",
];
const CLAUSE_OPENERS: &[&str] = &["and", "then", "please", "now", "also", "just", "so", "immediately"];
const APPROVAL_WORDS: &[&str] =
    &["approved", "authorized", "authorised", "cleared", "greenlit", "sanctioned", "preapproved", "signed"];
const GATED: &[&str] = &[
    "gate",
    "human",
    "humans",
    "operator",
    "operators",
    "reviewer",
    "reviewers",
    "everything",
    "draft",
    "drafts",
    "post",
    "posts",
    "publication",
    "content",
    "policy",
    "editor",
    "dara",
    "safety",
];
const CALL_VERBS: &[&str] = &["call", "invoke", "execute", "run", "trigger", "use"];
const TOOL_WORDS: &[&str] = &[
    "publish", "post", "send", "delete", "approve", "schedule", "update", "write", "create", "remove", "tool", "call",
    "exec", "set", "mark", "api", "function",
];
const URGENT: &[&str] = &["now", "immediately", "asap", "urgently", "instantly", "straightaway"];

fn is(word: &str, set: &[&str]) -> bool {
    set.contains(&word)
}

fn tool_name(word: &str) -> bool {
    word.contains('_')
        && word.split('_').filter(|p| !p.is_empty()).count() >= 2
        && word.split('_').any(|p| is(p, TOOL_WORDS))
}

/// Whether `text` has call syntax on a tool-like or action name (`publish(`, `approve_draft (`).
fn calls_a_tool(text: &str) -> bool {
    text.match_indices('(').any(|(at, _)| {
        let name = text[..at].trim_end();
        let start = name
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_alphanumeric() || *c == '_')
            .last()
            .map_or(name.len(), |(i, _)| i);
        let name = &name[start..];
        tool_name(name) || is(name, ACTIONS) || is(name, CALL_VERBS)
    })
}

/// Add the signals of one clause.
fn scan_clause(clause: &str, signals: &mut std::collections::BTreeSet<Signal>) {
    // A role marker opens the clause, or a quotation or colon inside it ("a slide reading:
    // 'note for the model: …'"); after it the order itself begins.
    let inner = clause.char_indices().filter(|(_, c)| c == &':' || QUOTES.contains(c)).map(|(at, c)| at + c.len_utf8());
    let marker = std::iter::once(0).chain(inner).find_map(|at| role_marker(&clause[at..]).map(|end| at + end));
    let body = match marker {
        Some(end) => {
            signals.insert(Signal::RoleMarker);
            &clause[end..]
        }
        None => clause,
    };
    for part in body.split(',') {
        scan_words(&words(part), signals);
    }
    scan_words(&words(body), signals);
}

/// Signals read from a run of words; an order is recognised when its verb opens the run or
/// follows a clause opener (`and`, `then`, `please`).
fn scan_words(w: &[&str], signals: &mut std::collections::BTreeSet<Signal>) {
    let at = |i: usize| w.get(i).copied().unwrap_or("");
    let opens = |i: usize| i == 0 || is(at(i - 1), CLAUSE_OPENERS);
    for i in 0..w.len() {
        let word = at(i);
        let ahead = |n: usize, set: &[&str]| (i + 1..(i + 1 + n).min(w.len())).any(|j| is(at(j), set));
        if is(word, OVERRIDE_VERBS) && ahead(5, SET_ASIDE) {
            signals.insert(Signal::Override);
        }
        if tool_name(word) {
            signals.insert(Signal::ToolName);
        }
        if is(word, CALL_VERBS)
            && (i + 1..(i + 3).min(w.len())).any(|j| tool_name(at(j)) || is(at(j), &["tool", "function"]))
        {
            signals.insert(Signal::CallOrder);
        }
        if is(word, ACTIONS) && opens(i) && ahead(6, TARGETS) {
            signals.insert(Signal::PublishingOrder);
        }
        if is(word, APPROVAL_WORDS) && (word != "signed" || at(i + 1) == "off") && w.iter().any(|x| is(x, GATED)) {
            signals.insert(Signal::ApprovalClaim);
        }
        if is(word, URGENT) || (word == "right" && at(i + 1) == "away") {
            signals.insert(Signal::Urgency);
        }
        let persona = matches!(
            (word, at(i + 1), at(i + 2)),
            ("you", "are", "now")
                | ("act", "as", _)
                | ("pretend", _, _)
                | ("from", "now", "on")
                | ("developer", "mode", _)
                | ("jailbreak", _, _)
                | ("new", "instructions", _)
                | ("new", "rules", _)
                | ("your", "new", "role")
        );
        if persona {
            signals.insert(Signal::Persona);
        }
    }
    // Addressed, not merely mentioned: the run opens by calling on the system ("hey
    // assistant", "model, …"), or a role is followed at once by what it must do ("assistant
    // you must", "model, your rules"); "our AI team" and "the system will" only mention one.
    let opener = w.iter().copied().find(|x| !is(x, &["hey", "hi", "dear", "ok", "okay", "attention", "yo", "listen"]));
    let vocative = w.len() > 1 && opener.is_some_and(|x| is(x, ADDRESSED));
    let told = (0..w.len()).any(|i| {
        is(at(i), ADDRESSED)
            && (i + 1..(i + 3).min(w.len())).any(|j| is(at(j), &["you", "your", "yourself", "you're", "must"]))
    });
    if vocative || told {
        signals.insert(Signal::Addressee);
    }
}

/// Opening quotation marks, after which a quoted order may begin with its own role label.
const QUOTES: [char; 6] = ['\'', '"', '“', '‘', '«', '„'];

/// Where the role label opening `text` ends (just past its colon or closing bracket), if
/// `text` opens with one: up to eight words before a colon or closing bracket, at least one of
/// them a role and every other one a label word or a number.
fn role_marker(text: &str) -> Option<usize> {
    let label = text.trim_start_matches(|c: char| "[<#({*->| ".contains(c) || QUOTES.contains(&c));
    // Every closing character is ASCII, one byte.
    let cut = label.find([':', ']', '>', ')', '}'])?;
    let head = words(&label[..cut]);
    let marked = !head.is_empty()
        && head.len() <= 8
        && head.iter().any(|w| is(w, ROLES))
        && head.iter().all(|w| is(w, ROLES) || is(w, MARKER_WORDS) || w.chars().all(|c| c.is_ascii_digit()));
    marked.then_some(text.len() - label.len() + cut + 1)
}

pub mod authority;

#[cfg(test)]
mod tests;
