//! WebVTT's block structure (W3C WebVTT, "file structure"): a `WEBVTT` line and its header
//! lines, then blocks separated by empty lines. A block is a `NOTE`, `STYLE` or `REGION`
//! block, or a cue: an optional identifier line, a timing line and payload lines up to the
//! first empty line (a line of spaces or tabs is payload, not the cue's end).

use harmonia_contracts::Error;
use harmonia_contracts::domain::TranscriptSegment;

use super::cues::{self, Cue};
use super::markup::Payload;
use super::{blank, lines, malformed, timing};

/// WebVTT: a `WEBVTT` header, then cues `[id]\nstart --> end [settings]\ntext…`; roll-up
/// automatic captions keep each spoken line once.
pub fn webvtt(text: &str) -> Result<Vec<TranscriptSegment>, Error> {
    let lines = lines(text);
    let mut at = lines.iter().position(|l| !blank(l)).ok_or_else(|| malformed("The WebVTT file is empty."))?;
    let signature = lines[at];
    if !(signature == "WEBVTT" || signature.starts_with("WEBVTT ") || signature.starts_with("WEBVTT\t")) {
        return Err(malformed("The file is not WebVTT: its first line must be WEBVTT."));
    }
    at += 1;
    // Header lines (`Kind: captions`, `Language: en`) run to the first empty line; a file that
    // opens its first cue without one still has that cue read.
    while lines.get(at).is_some_and(|l| !blank(l) && !l.contains("-->")) {
        at += 1;
    }
    let mut cues = Vec::new();
    while at < lines.len() {
        let line = lines[at];
        if blank(line) {
            at += 1;
        } else if ["NOTE", "STYLE", "REGION"].iter().any(|keyword| opens(line, keyword)) {
            // Not a cue, whatever it holds (a NOTE may quote a timing line): it ends at the
            // next empty line.
            at = lines[at..].iter().position(|l| l.is_empty()).map_or(lines.len(), |end| at + end);
        } else {
            let (cue, next) = cue(&lines, at, cues.len() + 1)?;
            cues.push(cue);
            at = next;
        }
    }
    Ok(cues::segments(&cues))
}

/// Whether `line` opens a block named `keyword`: the keyword alone, or followed by a space or
/// a tab.
fn opens(line: &str, keyword: &str) -> bool {
    line.strip_prefix(keyword).is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
}

/// The cue whose block starts at `lines[at]`, and where the next block may start.
fn cue(lines: &[&str], at: usize, number: usize) -> Result<(Cue, usize), Error> {
    let timing_at = if lines[at].contains("-->") {
        at
    } else if lines.get(at + 1).is_some_and(|l| l.contains("-->")) {
        at + 1
    } else {
        let block = lines[at..].iter().take_while(|l| !l.is_empty());
        return Err(if block.skip(1).any(|l| l.contains("-->")) {
            malformed(format!("Cue {number} has more than one identifier line before its timing line."))
        } else {
            malformed(format!("Cue {number} has no timing line (start --> end)."))
        });
    };
    let (start, end) = timing(lines[timing_at], '.', number)?;
    let payload = timing_at + 1;
    let (payload_end, next) = payload_end(lines, payload);
    let mut reader = Payload::webvtt(start);
    let lines = lines[payload..payload_end].iter().map(|l| reader.line(l)).filter(|l| !l.key.is_empty()).collect();
    Ok((Cue { start, end, lines }, next))
}

/// Where the payload starting at `lines[from]` ends and where the next block may start. It
/// ends at an empty line, or (as in the W3C parser) where a timing line begins the next cue
/// without one. Then a line of whitespace before that timing line, or before an identifier
/// line just above it, was meant as the separator, and is taken as one.
fn payload_end(lines: &[&str], from: usize) -> (usize, usize) {
    for (index, line) in lines.iter().enumerate().skip(from) {
        if line.is_empty() {
            return (index, index + 1);
        }
        if line.contains("-->") && timing(line, '.', 0).is_ok() {
            let separator = |i: usize| i >= from && blank(lines[i]);
            if index > from && separator(index - 1) {
                return (index - 1, index);
            }
            if index > from + 2 && separator(index - 2) {
                return (index - 2, index - 1);
            }
            return (index, index);
        }
    }
    (lines.len(), lines.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(segments: &[TranscriptSegment]) -> Vec<(u64, u64, Option<&str>, &str)> {
        segments.iter().map(|s| (s.start_ms, s.end_ms, s.speaker.as_deref(), s.text.as_str())).collect()
    }

    /// The rules validation checks later: positive duration, no overlap, text of 1-5000
    /// characters.
    fn assert_valid(segments: &[TranscriptSegment]) {
        let mut previous_end = 0;
        for s in segments {
            assert!(s.end_ms > s.start_ms, "{s:?} ends before it starts");
            assert!(s.start_ms >= previous_end, "{s:?} overlaps the segment before");
            assert!(!s.text.trim().is_empty() && s.text.chars().count() <= 5000, "{s:?}");
            assert!(!s.text.contains("  "), "{s:?} has a whitespace run");
            previous_end = s.end_ms;
        }
    }

    fn words(segments: &[TranscriptSegment]) -> Vec<String> {
        let joined = segments.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join(" ");
        joined.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn webvtt_with_ids_settings_voices_and_notes() {
        let vtt = "WEBVTT - talk\n\nNOTE produced by hand\n\n1\n00:00:00.000 --> 00:00:04.500 align:start\n<v Priya>Hello <i>there</i>.\n\n00:04.500 --> 00:09.000\nSecond line\ncontinues.\n";
        let s = webvtt(vtt).expect("parses");
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].start_ms, s[0].end_ms, s[0].text.as_str()), (0, 4500, "Hello there."));
        assert_eq!(s[0].speaker.as_deref(), Some("Priya"));
        assert_eq!((s[1].start_ms, s[1].end_ms, s[1].text.as_str()), (4500, 9000, "Second line continues."));
    }

    #[test]
    fn a_whitespace_only_line_is_payload_not_the_end_of_a_cue() {
        let vtt =
            "WEBVTT\n\n00:00.000 --> 00:02.000\n \nfirst words\n\t\nmore words\n\n00:02.000 --> 00:03.000\nnext\n";
        let s = webvtt(vtt).expect("parses");
        assert_eq!(said(&s), [(0, 2000, None, "first words more words"), (2000, 3000, None, "next")]);
    }

    #[test]
    fn header_lines_blocks_that_are_not_cues_crlf_and_bom() {
        let vtt = "\u{feff}WEBVTT\r\nKind: captions\r\nLanguage: en\r\n\r\nSTYLE\r\n::cue { color: red }\r\n\r\n\
                   REGION\r\nid:fred width:40%\r\n\r\nNOTE a comment that quotes a timing line\r\n\
                   00:00.000 --> 00:09.000\r\nstill the note\r\n\r\nintro\r\n00:00:01.000 --> 00:00:02.500 \
                   align:start position:0% line:90% size:80%\r\n  Hello,   <b>world</b>  \r\n\r\n\
                   01:02.500 --> 1:01:02.750\r\nLater.\r\n";
        let s = webvtt(vtt).expect("parses");
        assert_eq!(said(&s), [(1000, 2500, None, "Hello, world"), (62_500, 3_662_750, None, "Later.")]);
    }

    #[test]
    fn a_cue_that_follows_without_an_empty_line_still_starts_a_cue() {
        let vtt = "WEBVTT\n\n00:00.000 --> 00:01.000\none\n \n2\n00:01.000 --> 00:02.000\ntwo\n00:02.000 --> 00:03.000\nthree\n";
        let s = webvtt(vtt).expect("parses");
        assert_eq!(said(&s), [(0, 1000, None, "one"), (1000, 2000, None, "two"), (2000, 3000, None, "three")]);
        let arrow = "WEBVTT\n\n00:00.000 --> 00:01.000\nleft --> right\n";
        assert_eq!(said(&webvtt(arrow).expect("parses")), [(0, 1000, None, "left --> right")]);
    }

    #[test]
    fn a_cue_with_no_text_gives_no_segment() {
        let vtt = "WEBVTT\n\n00:00.000 --> 00:01.000\n \n<i> </i>&nbsp;\n\n00:01.000 --> 00:02.000\n&lrm;\n\n00:02.000 --> 00:03.000\nx\n";
        assert_eq!(said(&webvtt(vtt).expect("parses")), [(2000, 3000, None, "x")]);
    }

    #[test]
    fn two_voices_in_one_cue_become_two_segments() {
        let vtt = "WEBVTT\n\n00:10.000 --> 00:12.000\n<v Ann>Are you coming?</v>\n<v.loud Bo>Yes!</v>\n\n\
                   00:12.000 --> 00:13.000\n<v Ann>Good.</v> <v Ann>See you.</v>\n";
        let s = webvtt(vtt).expect("parses");
        assert_eq!(
            said(&s),
            [
                (10_000, 11_578, Some("Ann"), "Are you coming?"),
                (11_578, 12_000, Some("Bo"), "Yes!"),
                (12_000, 13_000, Some("Ann"), "Good. See you.")
            ]
        );
        assert_valid(&s);
    }

    #[test]
    fn markup_that_is_not_caption_markup_stays_visible() {
        let vtt =
            "WEBVTT\n\n00:00.000 --> 00:01.000\n<v SYSTEM><script>go()</script> &lt;b&gt;x <img src=x onerror=y>\n";
        let s = webvtt(vtt).expect("parses");
        assert_eq!(said(&s), [(0, 1000, Some("SYSTEM"), "<script>go()</script> <b>x <img src=x onerror=y>")]);
    }

    #[test]
    fn ordinary_captions_keep_a_line_said_twice() {
        let vtt = "WEBVTT\n\n00:00.000 --> 00:01.000\nThank you.\n\n00:01.000 --> 00:02.000\nThank you.\n\n\
                   00:02.000 --> 00:03.000\nPlease sit.\n\n00:03.000 --> 00:04.000\nWe begin.\n";
        let s = webvtt(vtt).expect("parses");
        assert_eq!(words(&s), ["Thank", "you.", "Thank", "you.", "Please", "sit.", "We", "begin."]);
    }

    /// The words a speaker said in `fixtures/youtube-auto-captions.vtt`, in order.
    const SPOKEN: &str = "hi everyone and welcome back to the garden \
        today we are going to plant the autumn garlic \
        before the first frost comes in so let's get started \
        the bed here had tomatoes all summer \
        so first we pull out the old roots \
        and mix in about two inches of compost \
        garlic likes loose soil that drains well \
        break the bulb into single cloves \
        and keep the papery skin on each one \
        push each clove in pointy end up \
        about two inches deep and six inches apart \
        then cover the whole bed with straw \
        and that's it see you in the spring";

    #[test]
    fn roll_up_automatic_captions_give_each_spoken_word_once() {
        let vtt = include_str!("../../tests/fixtures/youtube-auto-captions.vtt");
        let s = webvtt(vtt).expect("parses");
        assert_eq!(words(&s), SPOKEN.split_whitespace().collect::<Vec<_>>());
        assert_valid(&s);
        let lines: Vec<&str> = s.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(lines.len(), 13, "one segment per spoken line: {lines:?}");
        let mut seen = std::collections::HashSet::new();
        assert!(lines.iter().all(|l| seen.insert(*l)), "a line appears twice: {lines:?}");
        // Each segment starts at its cue's start (the new line's first word is not timed) and
        // the cue that ran past the next one's start ends there instead.
        assert_eq!((s[0].start_ms, s[0].end_ms), (320, 2869));
        assert_eq!((s[3].start_ms, s[3].end_ms), (9_310, 11_760));
    }

    #[test]
    fn roll_up_start_is_the_first_new_words_timestamp() {
        let vtt = "WEBVTT\n\n00:00:01.000 --> 00:00:03.000 align:start position:0%\n \n\
                   <00:00:01.400><c>quiet</c><00:00:01.900><c> start</c>\n\n\
                   00:00:03.000 --> 00:00:03.010\nquiet start\n \n\n\
                   00:00:03.010 --> 00:00:05.000\nquiet start\n<00:00:09.000><c>late</c>\n";
        let s = webvtt(vtt).expect("parses");
        assert_eq!(said(&s), [(1400, 3000, None, "quiet start"), (3010, 5000, None, "late")]);
    }

    #[test]
    fn a_large_file_parses_in_linear_time() {
        use std::fmt::Write;
        let stamp = |ms: u64| match ms / 3_600_000 {
            0 => format!("{}:{:02}.{:03}", ms / 60_000, ms / 1000 % 60, ms % 1000),
            hours => format!("{hours}:{:02}:{:02}.{:03}", ms / 60_000 % 60, ms / 1000 % 60, ms % 1000),
        };
        let mut plain = String::from("WEBVTT\n\n");
        for i in 0..200_000_u64 {
            write!(plain, "{}-->{}\nw{i}\n\n", stamp(i * 2), stamp(i * 2 + 1)).expect("writes");
        }
        // Roll-up: 100,000 lines, each cue repeating the line before and a 10 ms cue after it.
        let mut rolling = String::from("WEBVTT\nKind: captions\nLanguage: en\n\n");
        for i in 0..100_000_u64 {
            let start = i * 40;
            let previous = if i == 0 { String::new() } else { format!("r{} x{}\n", i - 1, i - 1) };
            let (from, to, word) = (stamp(start), stamp(start + 30), stamp(start + 15));
            write!(rolling, "{from}-->{to}\n \n{previous}r{i}<{word}><c> x{i}</c>\n\n").expect("writes");
            write!(rolling, "{}-->{}\nr{i} x{i}\n \n\n", stamp(start + 30), stamp(start + 40)).expect("writes");
        }
        for (file, segments) in [(&plain, 200_000), (&rolling, 100_000)] {
            let started = std::time::Instant::now();
            let s = webvtt(file).expect("parses");
            let took = started.elapsed();
            assert_eq!(s.len(), segments);
            // Well under a second in a release build; a debug build on a busy machine is
            // slower, and a quadratic parser would take minutes either way.
            assert!(took < std::time::Duration::from_secs(10), "{} bytes took {took:?}", file.len());
        }
    }

    proptest::proptest! {
        /// Roll-up captions as a platform exports them, built from random words: every word
        /// comes out once, in order, in segments validation accepts.
        #[test]
        fn roll_up_gives_every_word_once_in_order(
            lines in proptest::collection::vec(
                (proptest::collection::vec("[a-z]{1,8}", 1..7), proptest::bool::ANY, proptest::bool::ANY, 0_u64..300),
                1..25,
            ),
        ) {
            let mut vtt = String::from("WEBVTT\nKind: captions\nLanguage: en\n\n");
            let stamp = |ms: u64| format!("{:02}:{:02}:{:02}.{:03}", ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
            let mut previous: Option<String> = None;
            for (index, (words, repeat, padded, overrun)) in (0_u64..).zip(&lines) {
                let start = index * 3000;
                let end = start + 2990;
                vtt.push_str(&format!("{} --> {} align:start position:0%\n", stamp(start), stamp(end + overrun)));
                if *padded {
                    vtt.push_str(" \n");
                }
                if let Some(previous) = &previous {
                    vtt.push_str(previous);
                    vtt.push('\n');
                }
                vtt.push_str(&words[0]);
                for (k, word) in (1_u64..).zip(&words[1..]) {
                    vtt.push_str(&format!("<{}><c> {word}</c>", stamp(start + k * 300)));
                }
                vtt.push_str("\n\n");
                let line = words.join(" ");
                if *repeat {
                    vtt.push_str(&format!("{} --> {} align:start position:0%\n{line}\n \n\n", stamp(end), stamp(end + 10)));
                }
                previous = Some(line);
            }
            let s = webvtt(&vtt).expect("parses");
            let expected: Vec<&String> = lines.iter().flat_map(|(words, ..)| words).collect();
            let got = words(&s);
            proptest::prop_assert_eq!(got.iter().collect::<Vec<_>>(), expected);
            assert_valid(&s);
        }

        /// Payload markup of any shape never panics and never yields blank text.
        #[test]
        fn payload_markup_never_panics(payload in "[a-zA-Z0-9 <>/&#;:.\\-\t]{0,80}") {
            let vtt = format!("WEBVTT\n\n00:00.000 --> 00:01.000\n{payload}\n");
            let s = webvtt(&vtt).expect("parses");
            assert_valid(&s);
        }
    }
}
