//! Source formats accepted by `ingest`: the JSON source format, WebVTT and SRT transcripts.
//! Every parser refuses rather than guesses; nothing is stored before validation succeeds.

use harmonia_contracts::domain::{SOURCE_MAX_BYTES, SourceInput, TranscriptSegment};
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

fn cue_text(lines: &[&str]) -> String {
    // Strip simple markup tags (<v Speaker>, <i>, …); keep the words.
    let mut out = String::new();
    for line in lines {
        let mut depth = 0;
        for ch in line.chars() {
            match ch {
                '<' => depth += 1,
                '>' if depth > 0 => depth -= 1,
                c if depth == 0 => out.push(c),
                _ => {}
            }
        }
        out.push(' ');
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn speaker(lines: &[&str]) -> Option<String> {
    let first = lines.first()?;
    let rest = first.trim().strip_prefix("<v ")?;
    let end = rest.find('>')?;
    let name = rest[..end].trim();
    (!name.is_empty()).then(|| name.to_owned())
}

fn blocks(text: &str) -> Vec<Vec<&str>> {
    let normalized = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    let mut current = Vec::new();
    for line in normalized.lines() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        } else {
            current.push(line);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The start and end of cue number `cue` (counted from 1) from its timing line.
fn timing(line: &str, separator: char, cue: usize) -> Result<(u64, u64), Error> {
    let (start, rest) =
        line.split_once("-->").ok_or_else(|| malformed(format!("Cue {cue} has no timing line (start --> end).")))?;
    // WebVTT cue settings may follow the end time.
    let end =
        rest.split_whitespace().next().ok_or_else(|| malformed(format!("Cue {cue}'s timing line has no end time.")))?;
    let time = |raw: &str| {
        timestamp(raw, separator).ok_or_else(|| {
            let (format, written) = if separator == ',' { ("SubRip", "hh:mm:ss,mmm") } else { ("WebVTT", "hh:mm:ss.mmm or mm:ss.mmm") };
            malformed(format!(
                "Cue {cue} has a time that cannot be read: {format} times are written {written}, with minutes and seconds under 60."
            ))
        })
    };
    Ok((time(start)?, time(end)?))
}

/// WebVTT: a `WEBVTT` header, then cues `[id]\nstart --> end [settings]\ntext…`.
pub fn webvtt(text: &str) -> Result<Vec<TranscriptSegment>, Error> {
    let blocks = blocks(text);
    let header = blocks.first().and_then(|b| b.first()).ok_or_else(|| malformed("The WebVTT file is empty."))?;
    if !(*header == "WEBVTT" || header.starts_with("WEBVTT ") || header.starts_with("WEBVTT\t")) {
        return Err(malformed("The file is not WebVTT: its first line must be WEBVTT."));
    }
    let mut segments = Vec::new();
    for block in &blocks[1..] {
        if block[0].starts_with("NOTE") || block[0] == "STYLE" || block[0] == "REGION" {
            continue;
        }
        let cue = segments.len() + 1;
        let timing_at = block
            .iter()
            .position(|l| l.contains("-->"))
            .ok_or_else(|| malformed(format!("Cue {cue} has no timing line (start --> end).")))?;
        if timing_at > 1 {
            return Err(malformed(format!("Cue {cue} has more than one identifier line before its timing line.")));
        }
        let (start_ms, end_ms) = timing(block[timing_at], '.', cue)?;
        let body = &block[timing_at + 1..];
        segments.push(TranscriptSegment { start_ms, end_ms, speaker: speaker(body), text: cue_text(body) });
    }
    Ok(segments)
}

/// SRT: numbered cues `n\nhh:mm:ss,mmm --> hh:mm:ss,mmm\ntext…`.
pub fn srt(text: &str) -> Result<Vec<TranscriptSegment>, Error> {
    let mut segments = Vec::new();
    for block in blocks(text) {
        let cue = segments.len() + 1;
        if block.len() < 2 || !block[0].trim().chars().all(|c| c.is_ascii_digit()) {
            return Err(malformed(format!(
                "Cue {cue} of the SubRip file does not start with its number and then its timing line."
            )));
        }
        let (start_ms, end_ms) = timing(block[1], ',', cue)?;
        segments.push(TranscriptSegment {
            start_ms,
            end_ms,
            speaker: speaker(&block[2..]),
            text: cue_text(&block[2..]),
        });
    }
    Ok(segments)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn srt_cues() {
        let srt_text =
            "1\r\n00:00:01,000 --> 00:00:02,500\r\nOne.\r\n\r\n2\r\n00:00:02,500 --> 00:00:04,000\r\nTwo.\r\n";
        let s = srt(srt_text).expect("parses");
        assert_eq!(s.iter().map(|c| (c.start_ms, c.end_ms)).collect::<Vec<_>>(), [(1000, 2500), (2500, 4000)]);
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
        let srt = b"1\n00:00:01,000 --> 00:00:02,000\nfine\n\n2\nno timing here\n";
        assert_eq!(message(srt, Format::Srt).as_deref(), Some("Cue 2 has no timing line (start --> end)."));
        assert_eq!(
            message(b"hello\nworld\n", Format::Srt).as_deref(),
            Some("Cue 1 of the SubRip file does not start with its number and then its timing line.")
        );
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
