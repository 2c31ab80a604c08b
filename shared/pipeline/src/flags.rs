//! What ingest flagged in a source, as the operator sees it: each flagged span with its text,
//! its cues and why, and which of them lie near a moment. Read by the job's detail and kept
//! with an analysis (`records::AnalysisRecord`), so that no post repeats a flagged text.

use harmonia_contracts::domain::{FlagKind, Source, SourcePart};
use serde::{Deserialize, Serialize};

/// A span of the source flagged at ingest, as the operator sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flag {
    /// Why: an instruction, an encoded payload, markup or a disguised link.
    pub kind: FlagKind,
    /// The detector's reason (its signals, never the text).
    pub reason: String,
    /// The flagged text as the source holds it (clipped to [`FLAG_TEXT_CHARS`] characters).
    pub text: String,
    /// Where it lies: the title, a frame, a cue, or cues read together.
    pub part: SourcePart,
    /// The cues it spans, numbered from 1 as a caption file numbers them (none for the title or
    /// a frame).
    pub cues: Option<[u32; 2]>,
    /// When it is said or shown, milliseconds (none for the title).
    pub start_ms: Option<u64>,
    /// When it ends, milliseconds.
    pub end_ms: Option<u64>,
}

/// The longest flagged text shown, in characters.
pub const FLAG_TEXT_CHARS: usize = 1000;

/// How near to a flagged span a quote may be before the operator is told, in milliseconds.
pub const NEAR_FLAG_MS: u64 = 10_000;

/// A flagged span near a quote: within [`NEAR_FLAG_MS`] of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NearFlag {
    /// Why the span was flagged.
    pub kind: FlagKind,
    /// The cues it spans, from 1.
    pub cues: Option<[u32; 2]>,
    /// When it starts, milliseconds.
    pub start_ms: u64,
    /// When it ends, milliseconds.
    pub end_ms: u64,
}

/// Every flag of `source`, as the operator sees it, in the order ingest found them.
pub fn flags(source: &Source) -> Vec<Flag> {
    let speech = source.speech();
    source
        .untrusted
        .iter()
        .map(|u| {
            let segment = |n: u32| source.segments.get(n as usize);
            let (text, cues, start_ms, end_ms) = match u.part {
                SourcePart::Title => (source.title.clone(), None, None, None),
                SourcePart::Frame { index } => {
                    let frame = source.frames.get(index as usize);
                    let at = frame.map(|f| f.at_ms);
                    (frame.map(|f| f.description.clone()).unwrap_or_default(), None, at, at)
                }
                SourcePart::Segment { index } => {
                    let s = segment(index);
                    let said = s.map(|s| match &s.speaker {
                        Some(speaker) => format!("{speaker}: {}", s.text),
                        None => s.text.clone(),
                    });
                    (said.unwrap_or_default(), Some([index + 1, index + 1]), s.map(|s| s.start_ms), s.map(|s| s.end_ms))
                }
                SourcePart::Segments { first, last } => (
                    said_across(&speech, first, last),
                    Some([first + 1, last + 1]),
                    segment(first).map(|s| s.start_ms),
                    segment(last).map(|s| s.end_ms),
                ),
            };
            Flag {
                kind: u.kind,
                reason: u.reason.clone(),
                text: crate::policy::clip_to(&text, FLAG_TEXT_CHARS),
                part: u.part,
                cues,
                start_ms,
                end_ms,
            }
        })
        .collect()
}

/// What segments `first` to `last` say together, as the speech joins them.
fn said_across(speech: &harmonia_contracts::domain::Speech, first: u32, last: u32) -> String {
    for u in speech.utterances() {
        let start = u.pieces.iter().find(|p| p.segment == first as usize);
        let end = u.pieces.iter().find(|p| p.segment == last as usize);
        if let (Some(start), Some(end)) = (start, end) {
            let said = &u.text[start.start..end.end];
            return match &u.speaker {
                Some(speaker) => format!("{speaker}: {said}"),
                None => said.to_owned(),
            };
        }
    }
    String::new()
}

/// The flags within [`NEAR_FLAG_MS`] of `[start_ms, end_ms]`, each once: a flag whose time
/// another of its kind covers (a cue flagged alone, and with the cue after it) is told by that
/// one.
pub(crate) fn near(flags: &[Flag], start_ms: u64, end_ms: u64) -> Vec<NearFlag> {
    let found: Vec<NearFlag> = flags
        .iter()
        .filter_map(|f| {
            let (from, to) = (f.start_ms?, f.end_ms?);
            let apart = if to < start_ms { start_ms - to } else { from.saturating_sub(end_ms) };
            (apart <= NEAR_FLAG_MS).then_some(NearFlag { kind: f.kind, cues: f.cues, start_ms: from, end_ms: to })
        })
        .collect();
    let covered = |n: &NearFlag| {
        found.iter().any(|o| {
            o != n
                && o.kind == n.kind
                && o.start_ms <= n.start_ms
                && n.end_ms <= o.end_ms
                && (o.start_ms, o.end_ms) != (n.start_ms, n.end_ms)
        })
    };
    found.iter().filter(|n| !covered(n)).cloned().collect()
}
