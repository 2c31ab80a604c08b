//! A transcript read as speech: what was said, not how it was displayed.
//!
//! Captions split sentences, figures and negations across cues ("…cost $3.75" / "million
//! dollars"). Evidence is the speaker's continuous speech, so quotes, claims and grounding work
//! on [`Speech`]: consecutive segments of the same speaker joined into [`Utterance`]s, each
//! keeping a map from its byte offsets back to the segments (cues) and their times.
//!
//! The speech is derived from the stored segments, never stored beside them: it is a pure
//! function of them ([`Speech::of`]), so it cannot drift from the transcript it reads, and a
//! long source's document does not carry its text twice.
//!
//! # Joining cues
//!
//! Within an utterance, segment texts (trimmed) are joined by one space, except where a cue
//! boundary split a number's thousands separator ("served 12," / "500 hot meals" is
//! "served 12,500 hot meals"): the groups are joined without a space.
//!
//! # Matching
//!
//! A quote matches an exact span of one utterance, which may cross cues, starting and ending
//! at word boundaries (no letter or digit on either side). The comparison is exact after one
//! documented normalisation, applied to both sides ([`match_form`]):
//!
//! - Unicode NFC;
//! - every run of white space is one space;
//! - curly and straight quotation marks are one: `‘ ’ ‚ ‛ ′` read as `'`, `“ ” „ ‟ ″ « »` as `"`;
//! - dashes and the minus sign (U+2010–U+2015, U+2212, U+FE58, U+FE63, U+FF0D) read as `-`;
//! - the ellipsis `…` reads as `...`.
//!
//! What a match yields ([`Span`]) is the source's own characters and the range of the cues it
//! touches, so a post always carries what was said as it was written.

use std::borrow::Cow;

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::canonical_combining_class;

use super::TranscriptSegment;

/// One segment's place in its utterance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    /// The segment's position in the source's `segments`.
    pub segment: usize,
    /// Where its text starts in the utterance's text, in bytes.
    pub start: usize,
    /// Where its text ends (exclusive), in bytes.
    pub end: usize,
    /// The segment's start, milliseconds.
    pub start_ms: u64,
    /// The segment's end, milliseconds.
    pub end_ms: u64,
}

/// Consecutive segments of one speaker, read as one continuous text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Utterance {
    /// Who speaks, when known.
    pub speaker: Option<String>,
    /// What was said, the segments' own characters joined.
    pub text: String,
    /// The segments, in order, with their byte ranges in `text`.
    pub pieces: Vec<Piece>,
    /// `text` in its [`match_form`] with each byte's offset in `text`, when that form differs;
    /// made when a quote is first looked up (reading the speech needs none).
    normal: std::sync::OnceLock<Option<Normal>>,
}

/// A text's match form and the offset in the original text of each of its bytes (and one past
/// the end).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Normal {
    text: String,
    back: Vec<u32>,
}

impl Utterance {
    /// The match form of the text: the text itself when normalising changes nothing.
    fn normal(&self) -> &str {
        self.normalised().map_or(&self.text, |n| &n.text)
    }

    fn normalised(&self) -> Option<&Normal> {
        self.normal.get_or_init(|| normal(&self.text)).as_ref()
    }

    /// The byte of `text` the match-form byte `at` comes from (`text.len()` past the end).
    fn back(&self, at: usize) -> usize {
        match self.normalised() {
            None => at,
            Some(n) => n.back.get(at).map_or(self.text.len(), |b| *b as usize),
        }
    }

    /// The pieces a byte range of `text` touches (at least one character of).
    pub fn touched(&self, start: usize, end: usize) -> impl Iterator<Item = &Piece> {
        // Pieces are in text order and do not overlap: the first one that ends after `start`
        // is found by halving, and the run stops at the first that starts at `end` or later.
        let first = self.pieces.partition_point(|p| p.end <= start);
        self.pieces[first..].iter().take_while(move |p| p.start < end)
    }

    /// When the speaker says the text at byte `at`: the start of the segment holding it, or of
    /// the next segment when `at` falls between two.
    pub fn time_at(&self, at: usize) -> Option<u64> {
        self.pieces.get(self.pieces.partition_point(|p| p.end <= at)).map(|p| p.start_ms)
    }
}

/// A span of one utterance that a quote matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    /// The utterance, by its position in [`Speech::utterances`].
    pub utterance: usize,
    /// Where the span starts in the utterance's text, in bytes.
    pub start: usize,
    /// Where it ends (exclusive), in bytes.
    pub end: usize,
    /// The first segment it touches, by its position in the source's `segments`.
    pub first_segment: usize,
    /// The last segment it touches.
    pub last_segment: usize,
    /// The start of the first segment it touches, milliseconds.
    pub start_ms: u64,
    /// The end of the last segment it touches, milliseconds.
    pub end_ms: u64,
}

/// A source's transcript as utterances.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Speech {
    utterances: Vec<Utterance>,
}

impl Speech {
    /// The speech of `segments` (in their stored order).
    pub fn of(segments: &[TranscriptSegment]) -> Self {
        let mut utterances: Vec<Utterance> = Vec::new();
        for (n, segment) in segments.iter().enumerate() {
            let said = segment.text.trim();
            if said.is_empty() {
                continue;
            }
            let open = utterances.last_mut().filter(|u| u.speaker == segment.speaker);
            let utterance = match open {
                Some(u) => {
                    if !splits_thousands(&u.text, said) {
                        u.text.push(' ');
                    }
                    u
                }
                None => {
                    utterances.push(Utterance {
                        speaker: segment.speaker.clone(),
                        text: String::new(),
                        pieces: Vec::new(),
                        normal: std::sync::OnceLock::new(),
                    });
                    let Some(u) = utterances.last_mut() else { unreachable!("just pushed") };
                    u
                }
            };
            let start = utterance.text.len();
            utterance.text.push_str(said);
            utterance.pieces.push(Piece {
                segment: n,
                start,
                end: utterance.text.len(),
                start_ms: segment.start_ms,
                end_ms: segment.end_ms,
            });
        }
        Self { utterances }
    }

    /// The utterances, in time order.
    pub fn utterances(&self) -> &[Utterance] {
        &self.utterances
    }

    /// The text of `span`: the source's own characters.
    pub fn text(&self, span: &Span) -> &str {
        self.utterances.get(span.utterance).and_then(|u| u.text.get(span.start..span.end)).unwrap_or("")
    }

    /// The first span `quote` matches (see the module docs) whose cues all lie within
    /// `[start_ms, end_ms]`.
    pub fn find_within(&self, quote: &str, start_ms: u64, end_ms: u64) -> Option<Span> {
        self.spans_within(quote, start_ms, end_ms).next()
    }

    /// The first span `quote` matches anywhere in the source.
    pub fn find(&self, quote: &str) -> Option<Span> {
        self.spans(quote).next()
    }

    /// Every span `quote` matches, in order.
    pub fn spans<'a>(&'a self, quote: &str) -> impl Iterator<Item = Span> + 'a {
        self.spans_within(quote, 0, u64::MAX)
    }

    /// Every span `quote` matches whose cues all lie within `[start_ms, end_ms]`, in order. Only
    /// the utterances said in that time are read.
    pub fn spans_within<'a>(&'a self, quote: &str, start_ms: u64, end_ms: u64) -> impl Iterator<Item = Span> + 'a {
        let wanted = match_form(quote.trim()).into_owned();
        let len = wanted.len();
        let said_then = move |u: &&Utterance| {
            u.pieces.first().is_some_and(|p| p.start_ms <= end_ms)
                && u.pieces.last().is_some_and(|p| p.end_ms >= start_ms)
        };
        self.utterances.iter().enumerate().filter(move |(_, u)| len > 0 && said_then(u)).flat_map(move |(n, u)| {
            let haystack = u.normal();
            let found: Vec<Span> = haystack
                .match_indices(wanted.as_str())
                .filter(|(at, _)| bounded(haystack, *at, *at + len))
                .filter_map(|(at, _)| span(n, u, u.back(at), u.back(at + len)))
                .filter(|s| s.start_ms >= start_ms && s.end_ms <= end_ms)
                .collect();
            found
        })
    }
}

/// Every span of `text` that `quote` matches as a [`Speech`] quote does (exact after the match
/// form, at word boundaries), as byte ranges of `text`, in order.
pub fn locate(text: &str, quote: &str) -> Vec<std::ops::Range<usize>> {
    let wanted = match_form(quote.trim());
    if wanted.is_empty() {
        return Vec::new();
    }
    let normal = normal(text);
    let haystack = normal.as_ref().map_or(text, |n| n.text.as_str());
    let back = |at: usize| match &normal {
        None => at,
        Some(n) => n.back.get(at).map_or(text.len(), |b| *b as usize),
    };
    haystack
        .match_indices(wanted.as_ref())
        .filter(|(at, _)| bounded(haystack, *at, *at + wanted.len()))
        .map(|(at, _)| back(at)..back(at + wanted.len()))
        .collect()
}

/// The span of bytes `start..end` of utterance `n`, with the cues it touches.
fn span(n: usize, u: &Utterance, start: usize, end: usize) -> Option<Span> {
    let mut touched = u.touched(start, end);
    let first = touched.next()?;
    let last = touched.last().unwrap_or(first);
    Some(Span {
        utterance: n,
        start,
        end,
        first_segment: first.segment,
        last_segment: last.segment,
        start_ms: first.start_ms,
        end_ms: last.end_ms,
    })
}

/// Whether `text[start..end]` neither starts nor ends inside a word or a number: no letter or
/// digit just outside it, and no decimal or group separator joining a digit inside to a digit
/// outside ("$3" is not a span of "$3.75").
fn bounded(text: &str, start: usize, end: usize) -> bool {
    let inner = &text[start..end];
    let before = &text[..start];
    let after = &text[end..];
    if before.chars().next_back().is_some_and(char::is_alphanumeric)
        || after.chars().next().is_some_and(char::is_alphanumeric)
    {
        return false;
    }
    let separated = |outer: &[u8], inner_digit: bool| {
        inner_digit && matches!(outer, [b'.' | b',' | b':', d, ..] if d.is_ascii_digit())
    };
    let ends_in_digit = inner.as_bytes().last().is_some_and(u8::is_ascii_digit);
    let starts_with_digit = inner.as_bytes().first().is_some_and(u8::is_ascii_digit);
    let reversed: Vec<u8> = before.bytes().rev().take(2).collect();
    !separated(after.as_bytes(), ends_in_digit) && !separated(&reversed, starts_with_digit)
}

/// Whether `before` ends with a number's thousands separator and `after` opens with the
/// group of three digits it separates ("12," and "500 hot meals").
fn splits_thousands(before: &str, after: &str) -> bool {
    let Some(head) = before.strip_suffix(',') else { return false };
    let digits = head.len() - head.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let group = after.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && group == 3
}

/// The match form of `text` (see the module docs): borrowed when it is its own.
pub fn match_form(text: &str) -> Cow<'_, str> {
    match normal(text) {
        Some(n) => Cow::Owned(n.text),
        None => Cow::Borrowed(text),
    }
}

/// What a character reads as in the match form, when not itself.
fn folded(ch: char) -> Option<&'static str> {
    Some(match ch {
        '‘' | '’' | '‚' | '‛' | '′' => "'",
        '“' | '”' | '„' | '‟' | '″' | '«' | '»' => "\"",
        '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{fe58}' | '\u{fe63}' | '\u{ff0d}' => "-",
        '…' => "...",
        _ => return None,
    })
}

/// Whether `text` is its own match form, read quickly: single spaces as its only white space,
/// nothing the form folds, and already NFC.
fn plain(text: &str) -> bool {
    if text.is_ascii() {
        return !text.bytes().any(|b| b.is_ascii_whitespace() && b != b' ') && !text.contains("  ");
    }
    let mut previous_space = false;
    for ch in text.chars() {
        let space = ch == ' ';
        if (space && previous_space) || (ch.is_whitespace() && !space) || folded(ch).is_some() {
            return false;
        }
        previous_space = space;
    }
    unicode_normalization::is_nfc(text)
}

/// The match form of `text` with its map back, or `None` when it is `text` itself.
fn normal(text: &str) -> Option<Normal> {
    if plain(text) {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut back: Vec<u32> = Vec::with_capacity(text.len() + 1);
    let offset = |at: usize| u32::try_from(at).unwrap_or(u32::MAX);
    let mut chars = text.char_indices().peekable();
    let mut chunk = String::new();
    while let Some((at, ch)) = chars.next() {
        if ch.is_whitespace() {
            while chars.peek().is_some_and(|(_, c)| c.is_whitespace()) {
                chars.next();
            }
            out.push(' ');
            back.push(offset(at));
            continue;
        }
        if let Some(reads) = folded(ch) {
            out.push_str(reads);
            back.extend(std::iter::repeat_n(offset(at), reads.len()));
            continue;
        }
        // A starter and the combining marks after it compose together: normalised as one
        // chunk, every byte of which comes from the starter's place.
        chunk.clear();
        chunk.push(ch);
        while let Some((_, next)) = chars.peek() {
            if canonical_combining_class(*next) == 0 {
                break;
            }
            chunk.push(*next);
            chars.next();
        }
        let before = out.len();
        out.extend(chunk.nfc());
        back.extend(std::iter::repeat_n(offset(at), out.len() - before));
    }
    back.push(offset(text.len()));
    (out != text).then_some(Normal { text: out, back })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(start_ms: u64, speaker: Option<&str>, text: &str) -> TranscriptSegment {
        TranscriptSegment { start_ms, end_ms: start_ms + 1000, speaker: speaker.map(str::to_owned), text: text.into() }
    }

    fn speech(texts: &[&str]) -> Speech {
        let segments: Vec<_> = texts.iter().zip(0u64..).map(|(t, n)| segment(n * 1000, None, t)).collect();
        Speech::of(&segments)
    }

    #[test]
    fn a_quote_may_cross_cues_and_takes_the_range_of_the_cues_it_touches() {
        let s = speech(&["Welcome back.", "The new visitor centre cost $3.75", "million, more than planned."]);
        assert_eq!(s.utterances().len(), 1);
        let span = s.find("The new visitor centre cost $3.75 million").expect("spans two cues");
        assert_eq!((span.first_segment, span.last_segment, span.start_ms, span.end_ms), (1, 2, 1000, 3000));
        assert_eq!(s.text(&span), "The new visitor centre cost $3.75 million");
        let inner = s.find_within("cost $3.75 million", 1000, 3000).expect("within its cues");
        assert_eq!((inner.start, inner.end_ms), (span.start + "The new visitor centre ".len(), 3000));
        assert!(s.find_within("cost $3.75 million", 1000, 2000).is_none(), "the range must hold every cue");
        assert!(s.find("cost $3.7").is_none(), "never inside a number");
        assert!(s.find("cost $3").is_none(), "nor before its decimals");
        assert!(s.find("75 million").is_none(), "nor after its point");
        assert!(s.find("ost $3.75").is_none(), "never inside a word");
    }

    #[test]
    fn speakers_bound_utterances() {
        let segments = [
            segment(0, Some("Ana"), "We did not"),
            segment(1000, Some("Ben"), "cut 40% of the jobs."),
            segment(2000, Some("Ana"), "Right."),
        ];
        let s = Speech::of(&segments);
        assert_eq!(s.utterances().len(), 3);
        assert!(s.find("We did not cut 40%").is_none(), "two speakers are two utterances");
        assert_eq!(s.find("cut 40% of the jobs").map(|m| m.utterance), Some(1));
    }

    #[test]
    fn a_thousands_group_split_by_a_cue_is_one_number() {
        let s = speech(&["Last winter our kitchen served 12,", "500 hot meals."]);
        assert_eq!(s.utterances()[0].text, "Last winter our kitchen served 12,500 hot meals.");
        let span = s.find("served 12,500 hot meals").expect("found");
        assert_eq!((span.first_segment, span.last_segment), (0, 1));
        assert!(s.find("served 12,").is_none(), "12, is cut inside 12,500");
        let list = speech(&["We tried 1, 2,", "and 3 times."]);
        assert_eq!(list.utterances()[0].text, "We tried 1, 2, and 3 times.");
    }

    #[test]
    fn matching_is_exact_after_the_documented_normalisation_and_gives_the_sources_characters() {
        let s = speech(&["She said “it’s done” – and", "it was…  really   done."]);
        let span = s.find("said \"it's done\" - and it was... really done").expect("normalised match");
        assert_eq!(s.text(&span), "said “it’s done” – and it was…  really   done");
        // Decomposed letters match their composed form.
        let accents = speech(&["Cafe\u{301} ouvert à 9 h."]);
        let found = accents.find("Café ouvert").expect("NFC");
        assert_eq!(accents.text(&found), "Cafe\u{301} ouvert");
        assert!(s.find("said it's done").is_none(), "nothing else is folded");
        assert_eq!(locate("He said “it’s done”.", "\"it's done\"").first(), Some(&(8..25)));
        assert_eq!(locate("It cost $3.75 million.", "cost $3"), Vec::<std::ops::Range<usize>>::new());
        assert!(s.find("").is_none() && s.find("   ").is_none());
    }

    proptest::proptest! {
        /// Any sentence split at any points across cues is found whole, with the cues it
        /// touches, and its text is the source's.
        #[test]
        fn a_sentence_split_anywhere_is_found_whole(
            words in proptest::collection::vec("[a-z]{1,8}|[0-9]{1,4}|\\$[0-9]\\.[0-9]{2}", 2..20),
            cuts in proptest::collection::vec(proptest::num::usize::ANY, 0..3),
        ) {
            let sentence = words.join(" ");
            let mut bounds: Vec<usize> = cuts.iter().map(|c| 1 + c % (words.len() - 1)).collect();
            bounds.sort_unstable();
            bounds.dedup();
            let mut cues = Vec::new();
            let mut from = 0;
            for b in bounds.iter().copied().chain(std::iter::once(words.len())) {
                cues.push(words[from..b].join(" "));
                from = b;
            }
            let refs: Vec<&str> = cues.iter().map(String::as_str).collect();
            let s = speech(&refs);
            let span = s.find(&sentence);
            proptest::prop_assert!(span.is_some());
            if let Some(span) = span {
                proptest::prop_assert_eq!(s.text(&span), sentence.as_str());
                proptest::prop_assert_eq!((span.first_segment, span.last_segment), (0, cues.len() - 1));
            }
        }

        /// Normalising never panics and maps every byte back inside the text.
        #[test]
        fn the_match_form_maps_back_inside_the_text(text in "\\PC{0,60}") {
            if let Some(n) = normal(&text) {
                proptest::prop_assert_eq!(n.back.len(), n.text.len() + 1);
                proptest::prop_assert!(n.back.iter().all(|b| (*b as usize) <= text.len() && text.is_char_boundary(*b as usize)));
            }
        }
    }
}
