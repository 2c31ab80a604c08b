//! Sentence boundaries for the offline model, so a quote is never cut inside a number, an
//! abbreviation or a time.
//!
//! Unicode's sentence rules (UAX #29, as in `unicode-segmentation`) already keep decimals
//! together but break after every abbreviation ("Dr. Ruiz", "the U.S. Senate"). Of the
//! rule-based crates, `pragmatic-segmenter` needs the Oniguruma C library and
//! `sentence_segmentation` brings regex engines and more; `sentencize` is lean but a single
//! 0.1 release. The few rules the offline model needs are therefore written and tested here:
//! a sentence ends at `.`, `!` or `?` (with any closing quotes or brackets)
//! followed by white space and the start of a new sentence (an upper-case letter, a digit or
//! an opening quote), or at the end of the text; it does not end
//!
//! - inside a number (`1.2 million`, `$3.75`, `9.30`): the stop is not followed by space;
//! - after a title or other abbreviation that never ends a sentence (`Dr.`, `Mr.`, `St.`,
//!   `vs.`, `No.`, …), a dotted acronym (`U.S.`, `e.g.`) or a single initial (`J. Smith`);
//! - after `a.m.`, `p.m.` or `etc.` unless an upper-case word follows.

/// Abbreviations (lower case, without their final stop) that never end a sentence.
const NEVER_FINAL: &[&str] = &[
    "dr", "mr", "mrs", "ms", "prof", "st", "sr", "jr", "sen", "gov", "gen", "rep", "rev", "hon", "capt", "lt", "col",
    "sgt", "no", "nos", "fig", "figs", "vs", "approx", "dept", "est", "inc", "ltd", "corp", "co", "mt", "ave", "jan",
    "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "e.g", "i.e", "cf", "ca", "u.s",
    "u.k", "u.n", "e.u", "vol", "p", "pp",
];

/// Abbreviations that end a sentence only when an upper-case word follows.
const FINAL_BEFORE_CAPITAL: &[&str] = &["a.m", "p.m", "etc"];

/// The sentences of `text`, each trimmed, in order; together they cover every non-space
/// character of `text`.
pub(crate) fn sentences(text: &str) -> Vec<&str> {
    sentence_ranges(text).into_iter().map(|r| &text[r]).collect()
}

/// The byte ranges of [`sentences`] in `text`.
pub(crate) fn sentence_ranges(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut push = |start: usize, end: usize| {
        let piece = &text[start..end];
        let trimmed = piece.trim();
        if !trimmed.is_empty() {
            let from = start + (piece.len() - piece.trim_start().len());
            out.push(from..from + trimmed.len());
        }
    };
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, ch)) = chars.next() {
        if !matches!(ch, '.' | '!' | '?' | '…') {
            continue;
        }
        // The stop with any further stops and closing quotes or brackets.
        let mut end = at + ch.len_utf8();
        while let Some(&(b, c)) = chars.peek() {
            if !matches!(c, '.' | '!' | '?' | '…' | '"' | '\'' | '”' | '’' | ')' | ']') {
                break;
            }
            end = b + c.len_utf8();
            chars.next();
        }
        let after = &text[end..];
        let next = after.trim_start();
        let spaced = after.len() != next.len();
        let boundary = next.is_empty() || (spaced && ends_sentence(&text[start..at], ch, next));
        if boundary {
            push(start, end);
            start = end;
        }
    }
    push(start, text.len());
    out
}

/// The first sentence of `text` (a prefix of the trimmed text, so an exact substring).
#[cfg(test)]
fn first_sentence(text: &str) -> &str {
    sentences(text).into_iter().next().unwrap_or("")
}

/// Whether a stop `stop` after `before` (the sentence so far) ends the sentence, given the
/// text `next` that follows the white space.
fn ends_sentence(before: &str, stop: char, next: &str) -> bool {
    let Some(first) = next.chars().next() else {
        return true;
    };
    let opens = first.is_uppercase() || first.is_ascii_digit() || matches!(first, '"' | '“' | '‘' | '(' | '[');
    if !opens {
        return false;
    }
    if stop != '.' {
        return true;
    }
    let word = before.rsplit(char::is_whitespace).next().unwrap_or("");
    let word = word.trim_start_matches(['(', '[', '"', '“', '‘']).to_lowercase();
    if NEVER_FINAL.contains(&word.as_str()) {
        return false;
    }
    if FINAL_BEFORE_CAPITAL.contains(&word.as_str()) {
        return first.is_uppercase();
    }
    // A single initial ("J. Smith") or a dotted acronym not listed ("U.S.A.").
    let letters_and_dots = !word.is_empty() && word.chars().all(|c| c.is_alphabetic() || c == '.');
    let initial = word.chars().count() == 1 && word.chars().all(char::is_alphabetic);
    let dotted = letters_and_dots && word.contains('.') && word.split('.').all(|p| p.chars().count() <= 1);
    !(initial || dotted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_abbreviations_and_times_stay_inside_their_sentence() {
        let cases: &[(&str, &[&str])] = &[
            (
                "The extra service cost the city 1.2 million dollars. Riders noticed.",
                &["The extra service cost the city 1.2 million dollars.", "Riders noticed."],
            ),
            (
                "The depot cost $3.75 million. It opened in May.",
                &["The depot cost $3.75 million.", "It opened in May."],
            ),
            (
                "Ridership grew 2.5 times. Nobody expected that.",
                &["Ridership grew 2.5 times.", "Nobody expected that."],
            ),
            (
                "Dr. Ruiz met the U.S. Secretary of Transportation. She was impressed.",
                &["Dr. Ruiz met the U.S. Secretary of Transportation.", "She was impressed."],
            ),
            (
                "Buses leave at 9.30 a.m. and return at 5 p.m. The first one is full.",
                &["Buses leave at 9.30 a.m. and return at 5 p.m.", "The first one is full."],
            ),
            ("Doors open at 9.30 a.m. sharp, not later.", &["Doors open at 9.30 a.m. sharp, not later."]),
            (
                "J. Smith joined St. Mary's in 2020. Was it worth it? Yes!",
                &["J. Smith joined St. Mary's in 2020.", "Was it worth it?", "Yes!"],
            ),
            (
                "It rose 40% (see Fig. 2). \"Remarkable,\" she said. 2025 will be better.",
                &["It rose 40% (see Fig. 2).", "\"Remarkable,\" she said.", "2025 will be better."],
            ),
            ("Wait... what happened next?", &["Wait... what happened next?"]),
            ("No final stop here", &["No final stop here"]),
            ("", &[]),
        ];
        for (text, expected) in cases {
            assert_eq!(sentences(text), *expected, "{text}");
        }
    }

    proptest::proptest! {
        /// Sentences are trimmed, non-empty pieces of the text, in order, covering all of its
        /// non-space characters; any text is split without a panic.
        #[test]
        fn sentences_cover_the_text(text in "\\PC{0,120}") {
            let found = sentences(&text);
            let joined: String = found.concat().split_whitespace().collect();
            let expected: String = text.split_whitespace().collect();
            proptest::prop_assert_eq!(joined, expected);
            proptest::prop_assert!(found.iter().all(|s| !s.is_empty() && s.trim() == *s));
        }
    }

    #[test]
    fn the_first_sentence_never_ends_inside_a_figure() {
        assert_eq!(
            first_sentence("The extra service cost the city 1.2 million dollars. And more."),
            "The extra service cost the city 1.2 million dollars."
        );
        assert_eq!(first_sentence("It cost $3.75 million in total"), "It cost $3.75 million in total");
        assert_eq!(first_sentence("  It rose 2.5 times, they said.  "), "It rose 2.5 times, they said.");
        for text in ["cost the city 1.2 million", "$3.75 million", "2.5 times"] {
            let first = first_sentence(text);
            assert_eq!(first, text, "never cut to a bare figure such as \"1.\"");
        }
    }
}
