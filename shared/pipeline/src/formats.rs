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

fn malformed(why: &'static str) -> Error {
    Error::new(Code::SourceMalformed, why)
}

/// `hh:mm:ss.mmm` or `mm:ss.mmm` (WebVTT) / `hh:mm:ss,mmm` (SRT) to milliseconds.
fn timestamp(raw: &str, separator: char) -> Result<u64, Error> {
    let bad = || malformed("a cue timestamp is malformed");
    let (clock, millis) = raw.trim().split_once(separator).ok_or_else(bad)?;
    if millis.len() != 3 || !millis.chars().all(|c| c.is_ascii_digit()) {
        return Err(bad());
    }
    let parts: Vec<&str> = clock.split(':').collect();
    let nums: Vec<u64> = parts
        .iter()
        .map(|p| {
            if !p.is_empty() && p.len() <= 3 && p.chars().all(|c| c.is_ascii_digit()) {
                p.parse().map_err(|_| bad())
            } else {
                Err(bad())
            }
        })
        .collect::<Result<_, _>>()?;
    let (h, m, s) = match nums.as_slice() {
        [m, s] => (0, *m, *s),
        [h, m, s] => (*h, *m, *s),
        _ => return Err(bad()),
    };
    if m >= 60 || s >= 60 {
        return Err(bad());
    }
    let ms: u64 = millis.parse().map_err(|_| bad())?;
    Ok(((h * 60 + m) * 60 + s) * 1000 + ms)
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

fn timing(line: &str, separator: char) -> Result<(u64, u64), Error> {
    let (start, rest) = line.split_once("-->").ok_or_else(|| malformed("a cue has no timing line"))?;
    // WebVTT cue settings may follow the end time.
    let end = rest.split_whitespace().next().ok_or_else(|| malformed("a cue has no end time"))?;
    Ok((timestamp(start, separator)?, timestamp(end, separator)?))
}

/// WebVTT: a `WEBVTT` header, then cues `[id]\nstart --> end [settings]\ntext…`.
pub fn webvtt(text: &str) -> Result<Vec<TranscriptSegment>, Error> {
    let blocks = blocks(text);
    let header = blocks.first().and_then(|b| b.first()).ok_or_else(|| malformed("empty WebVTT file"))?;
    if !(*header == "WEBVTT" || header.starts_with("WEBVTT ") || header.starts_with("WEBVTT\t")) {
        return Err(malformed("a WebVTT file starts with WEBVTT"));
    }
    let mut segments = Vec::new();
    for block in &blocks[1..] {
        if block[0].starts_with("NOTE") || block[0] == "STYLE" || block[0] == "REGION" {
            continue;
        }
        let timing_at =
            block.iter().position(|l| l.contains("-->")).ok_or_else(|| malformed("a cue has no timing line"))?;
        if timing_at > 1 {
            return Err(malformed("a cue has more than one identifier line"));
        }
        let (start_ms, end_ms) = timing(block[timing_at], '.')?;
        let body = &block[timing_at + 1..];
        segments.push(TranscriptSegment { start_ms, end_ms, speaker: speaker(body), text: cue_text(body) });
    }
    Ok(segments)
}

/// SRT: numbered cues `n\nhh:mm:ss,mmm --> hh:mm:ss,mmm\ntext…`.
pub fn srt(text: &str) -> Result<Vec<TranscriptSegment>, Error> {
    let mut segments = Vec::new();
    for block in blocks(text) {
        if block.len() < 2 || !block[0].trim().chars().all(|c| c.is_ascii_digit()) {
            return Err(malformed("an SRT cue starts with its number and a timing line"));
        }
        let (start_ms, end_ms) = timing(block[1], ',')?;
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

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let _ = parse(&bytes, Format::WebVtt, "t", "en");
            let _ = parse(&bytes, Format::Srt, "t", "en");
            let _ = parse(&bytes, Format::Json, "t", "en");
        }
    }
}
