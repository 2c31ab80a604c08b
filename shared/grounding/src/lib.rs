//! Grounding: a post's figures and quotations checked against what was said.
//!
//! Evidence is the speaker's continuous speech, not how captions displayed it, and a figure is
//! grounded only with its magnitude, unit, sign and negation. Each piece of cited evidence
//! ([`Cited`]) is its text and, for a moment of a source, where that text was said ([`Said`]: a
//! window of its utterance around it), so that a figure the quote holds is read with the
//! words around it even when the quote stops short of them.
//!
//! - [`ungrounded`]: the figures of a post that no cited figure grounds — same value, unit,
//!   sign, negation and range ([`figures`]), each with why ([`Why`]).
//! - [`inexact_quotations`]: the quotations of a post (between `“ ”`, `„ “`, `« »` or a pair
//!   of `"`) that are not an exact span of cited evidence, compared as moments are
//!   ([`harmonia_contracts::domain::speech`]: its one normalisation, word boundaries).
//! - [`cuts`]: the quotes — cited moments and a post's quotations of them — that begin or end
//!   where they cut a figure off its magnitude, unit, sign, negation or range, or inside its
//!   number ([`Cut`]).
//!
//! - [`as_said`]: a post's quotations in the source's own characters, where they match only
//!   after the normalisation.
//!
//! Layout: `prepare` (zero-width characters and full-width forms, read before every check),
//! `figures` (the reader), `said` (quotations in the source's characters), this file (the
//! checks).

use std::ops::Range;

use harmonia_contracts::domain::locate;

mod figures;
mod prepare;
mod said;

pub use figures::{Figure, figures};
pub use said::as_said;

/// Where a piece of evidence was said: a window of its utterance and the evidence's range
/// in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Said<'a> {
    /// The utterance around the evidence (enough words either side to read its figures whole).
    pub window: &'a str,
    /// The evidence's byte range in `window`.
    pub quote: Range<usize>,
}

/// How many bytes of the utterance a [`Said`] window keeps either side of its quote (a figure's
/// context reaches six words before it and a few words after).
pub const WINDOW_MARGIN: usize = 200;

impl<'a> Said<'a> {
    /// The window of `utterance` around `quote` (a byte range of it): [`WINDOW_MARGIN`] bytes
    /// either side, on character boundaries.
    pub fn around(utterance: &'a str, quote: Range<usize>) -> Self {
        let mut start = quote.start.saturating_sub(WINDOW_MARGIN);
        while !utterance.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (quote.end + WINDOW_MARGIN).min(utterance.len());
        while !utterance.is_char_boundary(end) {
            end += 1;
        }
        Self { window: &utterance[start..end], quote: quote.start - start..quote.end - start }
    }
}

/// One piece of evidence a post cites.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cited<'a> {
    /// What it says: a moment's quote, a web page's supported answer, a verified post.
    pub text: &'a str,
    /// Where it was said, for a moment of a source.
    pub said: Option<Said<'a>>,
}

impl<'a> Cited<'a> {
    /// Evidence with no place in a source.
    pub fn text(text: &'a str) -> Self {
        Self { text, said: None }
    }

    /// The figures this evidence states: those its text holds, read in the words around it
    /// where it was said.
    fn figures(&self) -> Vec<Figure> {
        match &self.said {
            Some(said) => figures(said.window)
                .into_iter()
                .filter(|f| f.number.start < said.quote.end && said.quote.start < f.number.end)
                .collect(),
            None => figures(self.text),
        }
    }
}

/// Why a figure of a post is not grounded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Why {
    /// No cited figure is like it.
    Absent,
    /// A cited figure has the same number with another magnitude, unit or range: what the
    /// evidence says.
    Differs(String),
    /// A cited figure has the same number with the other sign.
    Sign(String),
    /// A cited figure has the same number negated, or not negated.
    Negation(String),
}

/// A figure of a post that the evidence does not ground.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ungrounded {
    /// The figure as the post writes it.
    pub figure: String,
    /// Why.
    pub why: Why,
}

impl Ungrounded {
    /// A sentence for the operator, naming the figure and, when the evidence has it otherwise,
    /// what the evidence says.
    pub fn sentence(&self) -> String {
        let figure = clip(&self.figure, 80);
        match &self.why {
            Why::Absent => format!("the figure \"{figure}\" does not appear in the evidence the draft cites"),
            Why::Differs(said) => {
                format!("the figure \"{figure}\" is not what the evidence says: \"{}\"", clip(said, 80))
            }
            Why::Sign(said) => {
                format!("the figure \"{figure}\" drops its sign: the evidence says \"{}\"", clip(said, 80))
            }
            Why::Negation(said) => {
                format!("the figure \"{figure}\" changes its negation: the evidence says \"{}\"", clip(said, 80))
            }
        }
    }
}

/// The figures of `body` that no figure of `cited` (or of `extra`, texts that may ground
/// figures only: the workspace's call to action) grounds, in order, each once.
pub fn ungrounded(body: &str, cited: &[Cited<'_>], extra: &[&str]) -> Vec<Ungrounded> {
    let known: Vec<Figure> =
        cited.iter().flat_map(Cited::figures).chain(extra.iter().flat_map(|t| figures(t))).collect();
    let mut out: Vec<Ungrounded> = Vec::new();
    for f in figures(body) {
        if known.iter().any(|e| f.grounded_by(e)) || out.iter().any(|u| u.figure == f.text) {
            continue;
        }
        let why = match known.iter().find(|e| f.resembles(e)) {
            None => Why::Absent,
            Some(e) if e.negative != f.negative => Why::Sign(e.text.clone()),
            Some(e) if e.negated != f.negated => Why::Negation(said_with_negation(cited, e)),
            Some(e) => Why::Differs(e.text.clone()),
        };
        out.push(Ungrounded { figure: f.text, why });
    }
    out
}

/// `e`'s text from its negating words, as the evidence it comes from writes it.
fn said_with_negation(cited: &[Cited<'_>], e: &Figure) -> String {
    let Some(negation) = &e.negation else { return e.text.clone() };
    cited
        .iter()
        .map(|c| c.said.as_ref().map_or(c.text, |s| s.window))
        .find_map(|text| text.get(negation.start..e.full.end).filter(|t| t.ends_with(e.text.as_str())))
        .map_or_else(|| e.text.clone(), str::to_owned)
}

/// The quotations of `text`: spans between typographic quote pairs or pairs of `"`.
pub fn quotations(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (open, close) in [('“', '”'), ('„', '“'), ('«', '»'), ('"', '"')] {
        let mut rest = text;
        while let Some(at) = rest.find(open) {
            let inner = &rest[at + open.len_utf8()..];
            let Some(end) = inner.find(close) else { break };
            let quoted = inner[..end].trim();
            if !quoted.is_empty() {
                out.push(quoted);
            }
            rest = &inner[end + close.len_utf8()..];
        }
    }
    out
}

/// The quotations of `body` that are not an exact span of any cited evidence.
pub fn inexact_quotations<'b>(body: &'b str, cited: &[Cited<'_>]) -> Vec<&'b str> {
    quotations(body).into_iter().filter(|q| !cited.iter().any(|c| !locate(c.text, q).is_empty())).collect()
}

/// What a quote leaves out of a figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    /// It begins or ends inside the number.
    Digits,
    /// Its magnitude or unit ("million", "%", "degrees").
    Magnitude,
    /// Its sign ("minus", "−").
    Sign,
    /// Its negation ("did not").
    Negation,
    /// The other end of its range.
    Range,
}

impl Missing {
    fn describe(self) -> &'static str {
        match self {
            Self::Digits => "inside its number",
            Self::Magnitude => "off its magnitude or unit",
            Self::Sign => "off its sign",
            Self::Negation => "off its negation",
            Self::Range => "off its range",
        }
    }
}

/// A quote that cuts a figure off what gives it its meaning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    /// The figure with its context, as the source says it.
    pub figure: String,
    /// What the quote leaves out, and how it reads.
    pub missing: Vec<(Missing, String)>,
}

impl Cut {
    /// A sentence for the operator naming the figure and what is missing.
    pub fn sentence(&self) -> String {
        let parts: Vec<String> = self
            .missing
            .iter()
            .map(|(m, said)| match m {
                Missing::Digits => m.describe().to_owned(),
                _ => format!("{} \"{}\"", m.describe(), clip(said, 40)),
            })
            .collect();
        format!("a quote cuts the figure \"{}\" {}", clip(&self.figure, 80), parts.join(" and "))
    }
}

/// The cuts of the quote at `quote` (a byte range of `window`): each figure whose number it
/// touches but whose context (sign, negation, number, magnitude, unit, range) it does not hold
/// whole.
pub fn cuts_in(window: &str, quote: Range<usize>) -> Vec<Cut> {
    let mut out = Vec::new();
    for f in figures(window) {
        let overlaps = |r: &Range<usize>| r.start < quote.end && quote.start < r.end;
        let touches = overlaps(&f.number) || f.range_end.as_ref().is_some_and(overlaps);
        let context = f.context();
        if !touches || (quote.start <= context.start && context.end <= quote.end) {
            continue;
        }
        let outside = |r: &Range<usize>| r.start < quote.start || r.end > quote.end;
        let mut missing = Vec::new();
        if (f.number.start < quote.start && quote.start < f.number.end)
            || (f.number.start < quote.end && quote.end < f.number.end)
        {
            missing.push((Missing::Digits, String::new()));
        }
        if f.range_end.is_none() && quote.end < f.full.end {
            let tail = window[quote.end.max(f.number.end)..f.full.end].trim();
            if !tail.is_empty() {
                missing.push((Missing::Magnitude, tail.to_owned()));
            }
        }
        if let Some(sign) = f.sign.as_ref().filter(|r| outside(r)) {
            missing.push((Missing::Sign, window[sign.clone()].to_owned()));
        }
        if let Some(negation) = f.negation.as_ref().filter(|r| outside(r)) {
            missing.push((Missing::Negation, window[negation.clone()].to_owned()));
        }
        if let Some(end) = f.range_end.as_ref().filter(|r| outside(r)) {
            missing.push((Missing::Range, window[end.clone()].to_owned()));
        }
        if missing.is_empty() {
            missing.push((Missing::Magnitude, window[f.full.clone()].to_owned()));
        }
        out.push(Cut { figure: window[context].to_owned(), missing });
    }
    out
}

/// Every cut of the quotes `body` rests on: each cited moment's own quote, and each quotation of
/// `body` found in a cited moment, read where that moment was said.
pub fn cuts(body: &str, cited: &[Cited<'_>]) -> Vec<Cut> {
    let mut out: Vec<Cut> = Vec::new();
    let mut add = |found: Vec<Cut>| {
        for cut in found {
            if !out.contains(&cut) {
                out.push(cut);
            }
        }
    };
    for said in cited.iter().filter_map(|c| c.said.as_ref()) {
        add(cuts_in(said.window, said.quote.clone()));
    }
    for q in quotations(body) {
        for said in cited.iter().filter_map(|c| c.said.as_ref()) {
            let Some(quoted) = said.window.get(said.quote.clone()) else { continue };
            if let Some(at) = locate(quoted, q).first() {
                let range = said.quote.start + at.start..said.quote.start + at.end;
                add(cuts_in(said.window, range));
                break;
            }
        }
    }
    out
}

/// `text` cut to at most `max` characters, an ellipsis marking a cut.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests;
