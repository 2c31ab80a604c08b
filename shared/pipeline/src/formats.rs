//! Source formats accepted by `ingest`: the JSON source format, WebVTT and SRT transcripts.
//! Every parser refuses a file whose structure it cannot read; nothing is stored before
//! validation succeeds.
//!
//! Layout: `vtt` reads WebVTT's blocks (header, cues, `NOTE`, `STYLE`, `REGION`) and `subrip`
//! SRT's; `markup` turns one payload line into text and speakers (WebVTT tags, timestamps and
//! character references, SRT's tags, positioning codes and speaker labels); `cues` is what
//! both share once cues are read: roll-up de-duplication, speaker turns and segment times.

mod cues;
mod markup;
mod subrip;
mod vtt;

pub use subrip::srt;
pub use vtt::webvtt;

use harmonia_contracts::domain::{SOURCE_MAX_BYTES, SourceInput};
use harmonia_contracts::{Code, Error};

/// A submitted source's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The JSON source format (`schemas/source-input.schema.json`).
    Json,
    /// A WebVTT transcript.
    WebVtt,
    /// A SubRip transcript.
    Srt,
}

impl Format {
    /// Guess from a file name's extension.
    pub fn from_path(path: &str) -> Option<Self> {
        let lower = path.to_ascii_lowercase();
        if lower.ends_with(".json") {
            Some(Format::Json)
        } else if lower.ends_with(".vtt") {
            Some(Format::WebVtt)
        } else if lower.ends_with(".srt") {
            Some(Format::Srt)
        } else {
            None
        }
    }
}

/// Parse `bytes` as `format`. Transcript files get `title` (and English unless told).
pub fn parse(bytes: &[u8], format: Format, title: &str, language: &str) -> Result<SourceInput, Error> {
    if bytes.len() > SOURCE_MAX_BYTES {
        return Err(Error::new(Code::PayloadTooLarge, "a source is at most 4 MiB"));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| Error::from_code(Code::SourceNotText))?;
    if text.contains('\0') {
        return Err(Error::from_code(Code::SourceNotText));
    }
    match format {
        Format::Json => serde_json::from_str(text).map_err(|_| Error::from_code(Code::SourceMalformed)),
        Format::WebVtt | Format::Srt => {
            let segments = if format == Format::WebVtt { webvtt(text)? } else { srt(text)? };
            Ok(SourceInput {
                title: title.to_owned(),
                url: None,
                language: language.parse()?,
                segments,
                frames: Vec::new(),
            })
        }
    }
}

fn malformed(why: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::new(Code::SourceMalformed, why)
}

/// The lines of a transcript without its byte order mark, ended by CRLF, LF or a lone CR
/// (all three are WebVTT line terminators, and SRT files carry each of them).
fn lines(text: &str) -> Vec<&str> {
    let mut rest = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    while let Some(at) = rest.find(['\r', '\n']) {
        out.push(&rest[..at]);
        let skip = if rest[at..].starts_with("\r\n") { 2 } else { 1 };
        rest = &rest[at + skip..];
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// A line holding nothing, or only whitespace.
fn blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// `hh:mm:ss.mmm` or `mm:ss.mmm` (WebVTT) / `hh:mm:ss,mmm` (SRT) to milliseconds; `None` when
/// malformed (the caller names the cue).
fn timestamp(raw: &str, separator: char) -> Option<u64> {
    let (clock, millis) = raw.trim().split_once(separator)?;
    if millis.len() != 3 || !millis.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let mut nums = [0_u64; 3];
    let mut count = 0;
    for part in clock.split(':') {
        if count == 3 || part.is_empty() || part.len() > 3 || !part.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        nums[count] = part.parse().ok()?;
        count += 1;
    }
    let (h, m, s) = match count {
        2 => (0, nums[0], nums[1]),
        3 => (nums[0], nums[1], nums[2]),
        _ => return None,
    };
    if m >= 60 || s >= 60 {
        return None;
    }
    Some(((h * 60 + m) * 60 + s) * 1000 + millis.parse::<u64>().ok()?)
}

/// The start and end of cue number `cue` (counted from 1) from its timing line. SubRip
/// (`separator` `,`) also takes a full stop, which files converted from WebVTT keep.
fn timing(line: &str, separator: char, cue: usize) -> Result<(u64, u64), Error> {
    let (start, rest) =
        line.split_once("-->").ok_or_else(|| malformed(format!("Cue {cue} has no timing line (start --> end).")))?;
    // WebVTT cue settings (and SubRip's coordinates) may follow the end time.
    let end =
        rest.split_whitespace().next().ok_or_else(|| malformed(format!("Cue {cue}'s timing line has no end time.")))?;
    let time = |raw: &str| {
        timestamp(raw, separator).or_else(|| if separator == ',' { timestamp(raw, '.') } else { None }).ok_or_else(
            || {
                let (format, written) = if separator == ',' {
                    ("SubRip", "hh:mm:ss,mmm")
                } else {
                    ("WebVTT", "hh:mm:ss.mmm or mm:ss.mmm")
                };
                malformed(format!(
                    "Cue {cue} has a time that cannot be read: {format} times are written {written}, with minutes and seconds under 60."
                ))
            },
        )
    };
    Ok((time(start)?, time(end)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_end_at_crlf_lf_or_a_lone_cr_and_lose_the_bom() {
        assert_eq!(lines("\u{feff}a\r\nb\rc\n\nd"), ["a", "b", "c", "", "d"]);
        assert_eq!(lines("a\n"), ["a"]);
        assert!(lines("").is_empty());
    }

    #[test]
    fn malformed_inputs_have_codes() {
        let code = |r: Result<SourceInput, Error>| r.err().map(|e| e.code);
        assert_eq!(code(parse(b"\xff\xfe\x00", Format::Json, "t", "en")), Some(Code::SourceNotText));
        assert_eq!(code(parse(b"{\"title\":1}", Format::Json, "t", "en")), Some(Code::SourceMalformed));
        assert_eq!(code(parse(b"1\n00:00:01 --> 00:00:02\nx\n", Format::Srt, "t", "en")), Some(Code::SourceMalformed));
        assert_eq!(code(parse(b"hello", Format::WebVtt, "t", "en")), Some(Code::SourceMalformed));
        assert_eq!(
            code(parse(b"WEBVTT\n\n00:00.000 --> 00:61.000\nx\n", Format::WebVtt, "t", "en")),
            Some(Code::SourceMalformed)
        );
        let big = vec![b'a'; SOURCE_MAX_BYTES + 1];
        assert_eq!(code(parse(&big, Format::Json, "t", "en")), Some(Code::PayloadTooLarge));
    }

    #[test]
    fn a_malformed_transcript_is_refused_with_a_sentence_naming_the_cue() {
        let message = |bytes: &[u8], format| parse(bytes, format, "t", "en").err().map(|e| e.message.into_owned());
        let vtt = b"WEBVTT\n\n00:00.000 --> 00:01.000\nfine\n\n00:01.000 --> 00:61.000\nseconds over 59\n";
        assert_eq!(
            message(vtt, Format::WebVtt).as_deref(),
            Some(
                "Cue 2 has a time that cannot be read: WebVTT times are written hh:mm:ss.mmm or mm:ss.mmm, with minutes and seconds under 60."
            )
        );
        assert_eq!(
            message(b"meeting notes", Format::WebVtt).as_deref(),
            Some("The file is not WebVTT: its first line must be WEBVTT.")
        );
        let vtt = b"WEBVTT\n\n00:00.000 --> 00:01.000\nfine\n\njust words\nno timing\n";
        assert_eq!(message(vtt, Format::WebVtt).as_deref(), Some("Cue 2 has no timing line (start --> end)."));
        let vtt = b"WEBVTT\n\nid\nanother id\n00:00.000 --> 00:01.000\nx\n";
        assert_eq!(
            message(vtt, Format::WebVtt).as_deref(),
            Some("Cue 1 has more than one identifier line before its timing line.")
        );
        let srt = b"1\n00:00:01,000 --> 00:00:02,000\nfine\n\n2\nno timing here\n";
        assert_eq!(message(srt, Format::Srt).as_deref(), Some("Cue 2 has no timing line (start --> end)."));
        assert_eq!(
            message(b"hello\nworld\n", Format::Srt).as_deref(),
            Some("Cue 1 of the SubRip file does not start with its number and then its timing line.")
        );
        let srt = b"1\n00:00:01,000 --> 00:00:02,000\nfine\n\n2\n00:00:02,000 --> 00:00:03,0\nshort millis\n";
        assert_eq!(
            message(srt, Format::Srt).as_deref(),
            Some(
                "Cue 2 has a time that cannot be read: SubRip times are written hh:mm:ss,mmm, with minutes and seconds under 60."
            )
        );
    }

    #[test]
    fn a_transcript_parses_into_a_source_input() {
        let input =
            parse(b"WEBVTT\n\n00:01.000 --> 00:02.000\nHello.\n", Format::WebVtt, "Talk", "en").expect("parses");
        assert_eq!((input.title.as_str(), input.segments.len()), ("Talk", 1));
        assert_eq!(Format::from_path("Talk.SRT"), Some(Format::Srt));
        assert_eq!(Format::from_path("talk.vtt"), Some(Format::WebVtt));
        assert_eq!(Format::from_path("talk.txt"), None);
    }

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let _ = parse(&bytes, Format::WebVtt, "t", "en");
            let _ = parse(&bytes, Format::Srt, "t", "en");
            let _ = parse(&bytes, Format::Json, "t", "en");
        }
    }
}
