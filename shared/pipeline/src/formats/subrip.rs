//! SubRip as it is found: blocks of a number, a timing line and text, separated by lines
//! that are empty or hold only whitespace. Numbers may skip or restart; a block of text with
//! neither number nor timing line continues the cue before it (an empty line inside a cue's
//! text is common).

use harmonia_contracts::Error;
use harmonia_contracts::domain::TranscriptSegment;

use super::cues::{self, Cue, Line, collapsed};
use super::markup::{Payload, speaker_label};
use super::{blank, lines, malformed, timing};

/// SRT: numbered cues `n\nhh:mm:ss,mmm --> hh:mm:ss,mmm\ntext…`.
pub fn srt(text: &str) -> Result<Vec<TranscriptSegment>, Error> {
    let lines = lines(text);
    let mut read: Vec<(u64, u64, Vec<&str>)> = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        if blank(lines[at]) {
            at += 1;
            continue;
        }
        let end = lines[at..].iter().position(|l| blank(l)).map_or(lines.len(), |n| at + n);
        let block = &lines[at..end];
        at = end;
        let number = read.len() + 1;
        let first = block[0].trim();
        let timing_at = if !first.is_empty() && first.chars().all(|c| c.is_ascii_digit()) {
            if !block.get(1).is_some_and(|l| l.contains("-->")) {
                return Err(malformed(format!("Cue {number} has no timing line (start --> end).")));
            }
            1
        } else if first.contains("-->") {
            // The number is missing; the timing line says where the cue is.
            0
        } else if let Some((.., text)) = read.last_mut() {
            text.extend_from_slice(block);
            continue;
        } else {
            return Err(malformed(format!(
                "Cue {number} of the SubRip file does not start with its number and then its timing line."
            )));
        };
        let (start, end) = timing(block[timing_at], ',', number)?;
        read.push((start, end, block[timing_at + 1..].to_vec()));
    }
    let cues: Vec<Cue> = read.into_iter().map(|(start, end, text)| Cue { start, end, lines: payload(&text) }).collect();
    Ok(cues::segments(&cues))
}

/// A cue's text lines. Two or more lines opening with `- ` each start a speaker's turn (the
/// dashes say the speaker changes, not who speaks); a label in capitals opening the cue, or a
/// dashed turn, names its speaker.
fn payload(text: &[&str]) -> Vec<Line> {
    let mut reader = Payload::srt();
    let mut lines: Vec<Line> = text.iter().map(|l| reader.line(l)).filter(|l| !l.key.is_empty()).collect();
    let dashed = lines.iter().filter(|l| l.key.starts_with("- ")).count() >= 2;
    for (index, line) in lines.iter_mut().enumerate() {
        let Some(first) = line.pieces.iter_mut().find(|p| !p.text.trim().is_empty()) else { continue };
        let mut said = collapsed(&first.text);
        if dashed && let Some(turn) = said.strip_prefix("- ") {
            said = turn.to_owned();
            line.starts_turn = true;
        }
        if first.speaker.is_none()
            && (index == 0 || line.starts_turn)
            && let Some((name, rest)) = speaker_label(&said)
        {
            first.speaker = Some(name);
            said = rest.to_owned();
        }
        first.text = said;
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(segments: &[TranscriptSegment]) -> Vec<(u64, u64, Option<&str>, &str)> {
        segments.iter().map(|s| (s.start_ms, s.end_ms, s.speaker.as_deref(), s.text.as_str())).collect()
    }

    #[test]
    fn srt_cues() {
        let srt_text =
            "1\r\n00:00:01,000 --> 00:00:02,500\r\nOne.\r\n\r\n2\r\n00:00:02,500 --> 00:00:04,000\r\nTwo.\r\n";
        let s = srt(srt_text).expect("parses");
        assert_eq!(s.iter().map(|c| (c.start_ms, c.end_ms)).collect::<Vec<_>>(), [(1000, 2500), (2500, 4000)]);
    }

    #[test]
    fn srt_as_it_is_found() {
        let srt_text = "\u{feff}7\r\n00:00:01,000 --> 00:00:03,000\r\n{\\an8}<i>Hello</i>   <font color=\"#FFFF00\">there</font>,\r\n\
                        <b>friend</b>.\r\n \t\r\n3\r\n00:00:03,000 --> 00:00:05,000 X1:10 X2:20\r\n<u>Numbers</u> restart.\r\n\r\n\r\n\
                        1\r\n00:00:05.000 --> 00:00:06,000\r\nA full stop, <script>x()</script> kept.\r\n";
        let s = srt(srt_text).expect("parses");
        assert_eq!(
            said(&s),
            [
                (1000, 3000, None, "Hello there, friend."),
                (3000, 5000, None, "Numbers restart."),
                (5000, 6000, None, "A full stop, <script>x()</script> kept.")
            ]
        );
    }

    #[test]
    fn a_leading_label_in_capitals_names_the_speaker_of_that_cue_only() {
        let srt_text = "1\n00:00:01,000 --> 00:00:02,000\nDR. SMITH: The results are in.\n\n\
                        2\n00:00:02,000 --> 00:00:03,000\nThey look good.\n\n\
                        3\n00:00:03,000 --> 00:00:04,000\n<i>MARIA LOPEZ:</i>\nAt 12:30 we start.\n\n\
                        4\n00:00:04,000 --> 00:00:05,000\n12:30: lunch. Then JOHN: speaks.\n";
        let s = srt(srt_text).expect("parses");
        assert_eq!(
            said(&s),
            [
                (1000, 2000, Some("DR. SMITH"), "The results are in."),
                (2000, 3000, None, "They look good."),
                (3000, 4000, Some("MARIA LOPEZ"), "At 12:30 we start."),
                (4000, 5000, None, "12:30: lunch. Then JOHN: speaks.")
            ]
        );
    }

    #[test]
    fn dashes_split_a_cue_between_two_speakers() {
        let srt_text = "1\n00:00:10,000 --> 00:00:12,000\n- Are you coming?\n- Yes!\n\n\
                        2\n00:00:12,000 --> 00:00:13,000\n- Just one dash line.\n\n\
                        3\n00:00:13,000 --> 00:00:15,000\n<i>- JOHN: Left.</i>\n- Right.\n";
        let s = srt(srt_text).expect("parses");
        assert_eq!(
            said(&s),
            [
                (10_000, 11_578, None, "Are you coming?"),
                (11_578, 12_000, None, "Yes!"),
                (12_000, 13_000, None, "- Just one dash line."),
                (13_000, 13_909, Some("JOHN"), "Left."),
                (13_909, 15_000, None, "Right.")
            ]
        );
    }

    #[test]
    fn text_after_an_empty_line_continues_the_cue() {
        let srt_text =
            "1\n00:00:01,000 --> 00:00:02,000\nfirst part\n\nsecond part\n\n2\n00:00:02,000 --> 00:00:03,000\nnext\n";
        let s = srt(srt_text).expect("parses");
        assert_eq!(said(&s), [(1000, 2000, None, "first part second part"), (2000, 3000, None, "next")]);
    }

    #[test]
    fn a_cue_without_text_gives_no_segment() {
        let srt_text = "1\n00:00:01,000 --> 00:00:02,000\n<i> </i>\n\n2\n00:00:02,000 --> 00:00:03,000\nJOHN:\n";
        assert!(srt(srt_text).expect("parses").is_empty());
    }

    #[test]
    fn voice_spans_left_by_a_conversion_from_webvtt_name_speakers() {
        let srt_text = "1\r\n00:00:02,500 --> 00:00:04,000\r\n<v Ana>Two.\r\n\r\n\
                        2\n00:00:04,000 --> 00:00:06,000\n<v Ana>Yes.</v>\n<v Bo>- No.\n";
        let s = srt(srt_text).expect("parses");
        assert_eq!(
            said(&s),
            [(2500, 4000, Some("Ana"), "Two."), (4000, 4888, Some("Ana"), "Yes."), (4888, 6000, Some("Bo"), "- No.")]
        );
    }

    #[test]
    fn roll_up_srt_keeps_each_line_once() {
        let srt_text = "1\n00:00:00,000 --> 00:00:02,000\nwe went to\n\n\
                        2\n00:00:02,000 --> 00:00:02,010\nwe went to\n\n\
                        3\n00:00:02,010 --> 00:00:04,000\nwe went to\nthe market\n\n\
                        4\n00:00:04,000 --> 00:00:04,010\nthe market\n\n\
                        5\n00:00:04,010 --> 00:00:06,000\nthe market\nfor bread\n";
        let s = srt(srt_text).expect("parses");
        assert_eq!(
            said(&s),
            [(0, 2000, None, "we went to"), (2010, 4000, None, "the market"), (4010, 6000, None, "for bread")]
        );
    }
}
