//! Cue payload markup. WebVTT: voice spans name the speaker; class, italic, bold, underline,
//! ruby and language spans and inline timestamps are dropped and their words kept; character
//! references are decoded. SRT: `<i>`, `<b>`, `<u>`, `<font …>` and `{\an8}`-style positioning
//! codes are dropped, and a leading label in capitals (`DR. SMITH:`) names the speaker.
//!
//! Any other tag (`<script>`, `<img …>`) is not caption markup: it stays in the text as
//! written, where the instruction detector flags it for the operator instead of it vanishing.

use super::cues::{Line, Piece, collapsed, push_words};

/// The markup a payload is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dialect {
    /// WebVTT's cue text (W3C WebVTT, "cue text parsing rules").
    WebVtt,
    /// SubRip: HTML-like formatting tags, ASS positioning codes, no character references.
    Srt,
}

/// Reads a cue's payload one line at a time: a voice span opened on one line and the latest
/// inline timestamp hold until the cue ends.
#[derive(Debug)]
pub(super) struct Payload {
    dialect: Dialect,
    /// Open voice spans, innermost last; `None` for a `<v>` without a name.
    voices: Vec<Option<String>>,
    /// The time the words read next are said: the cue start until an inline timestamp.
    now: u64,
}

/// What a tag is.
enum Tag {
    /// Formatting (WebVTT's class, italic, bold, underline, ruby, ruby text and language
    /// spans; SRT's `i`, `b`, `u`, `font`), opening or closing: dropped, its words kept.
    Span,
    /// A voice span opens, naming its speaker.
    Voice(Option<String>),
    /// A voice span closes.
    VoiceEnd,
    /// An inline timestamp.
    Time(u64),
    /// Not caption markup: kept as written.
    Other,
}

impl Payload {
    /// A reader for a WebVTT cue starting at `start` milliseconds.
    pub(super) fn webvtt(start: u64) -> Self {
        Self { dialect: Dialect::WebVtt, voices: Vec::new(), now: start }
    }

    /// A reader for an SRT cue. Voice spans, which files converted from WebVTT keep, name
    /// the speaker here too.
    pub(super) fn srt() -> Self {
        Self { dialect: Dialect::Srt, voices: Vec::new(), now: 0 }
    }

    fn speaker(&self) -> Option<String> {
        self.voices.last().cloned().flatten()
    }

    /// One payload line as text pieces (one per speaker it holds).
    pub(super) fn line(&mut self, raw: &str) -> Line {
        let specials: &[char] = match self.dialect {
            Dialect::WebVtt => &['<', '&'],
            Dialect::Srt => &['<', '{'],
        };
        let mut pieces = Vec::new();
        let mut piece = Piece { speaker: self.speaker(), text: String::new(), at: None };
        let mut timed = false;
        let mut rest = raw;
        while let Some(at) = rest.find(specials) {
            push_text(&mut piece, &rest[..at], self.now);
            let tail = &rest[at..];
            if tail.starts_with('&') {
                let (decoded, used) = reference(tail).unwrap_or(('&', 1));
                push_char(&mut piece, decoded, self.now);
                rest = &tail[used..];
                continue;
            }
            if let Some(after) = tail.strip_prefix('{') {
                // `{\an8}`, `{\i1}`, `{\pos(10,20)}`: a player's positioning, not words.
                match after.starts_with('\\').then(|| closing(tail, '{', '}')).flatten() {
                    Some(close) => rest = &tail[close + 1..],
                    None => {
                        push_text(&mut piece, "{", self.now);
                        rest = after;
                    }
                }
                continue;
            }
            let Some(close) = closing(tail, '<', '>') else {
                push_text(&mut piece, "<", self.now);
                rest = &tail[1..];
                continue;
            };
            let inner = &tail[1..close];
            let tag = match self.dialect {
                Dialect::WebVtt => tag(inner),
                Dialect::Srt => srt_tag(inner),
            };
            match tag {
                Tag::Span => {}
                Tag::Time(at) => {
                    self.now = at;
                    timed = true;
                }
                Tag::Other => push_text(&mut piece, &tail[..=close], self.now),
                Tag::Voice(name) => {
                    self.voices.push(name);
                    switch(&mut pieces, &mut piece, self.speaker());
                }
                Tag::VoiceEnd => {
                    self.voices.pop();
                    switch(&mut pieces, &mut piece, self.speaker());
                }
            }
            rest = &tail[close + 1..];
        }
        push_text(&mut piece, rest, self.now);
        pieces.push(piece);
        pieces.retain(|p| !p.text.is_empty());
        let mut key = String::new();
        for piece in &pieces {
            push_words(&mut key, &piece.text);
        }
        Line { pieces, key, timed, starts_turn: false }
    }
}

/// Start a new piece for `speaker` unless the current one is already theirs.
fn switch(pieces: &mut Vec<Piece>, piece: &mut Piece, speaker: Option<String>) {
    if piece.speaker != speaker {
        let done = std::mem::replace(piece, Piece { speaker, text: String::new(), at: None });
        pieces.push(done);
    }
}

fn push_text(piece: &mut Piece, text: &str, now: u64) {
    if piece.at.is_none() && !text.trim().is_empty() {
        piece.at = Some(now);
    }
    piece.text.push_str(text);
}

fn push_char(piece: &mut Piece, c: char, now: u64) {
    if piece.at.is_none() && !c.is_whitespace() {
        piece.at = Some(now);
    }
    piece.text.push(c);
}

/// Where the tag or code opening `tail` (which starts with `open`) closes: at `close`, when
/// no `open` comes first (then the first `open` was a character of the text). Searching only
/// to the next `open` keeps a line of a million `<` linear.
fn closing(tail: &str, open: char, close: char) -> Option<usize> {
    let at = tail[1..].find([open, close])? + 1;
    tail[at..].starts_with(close).then_some(at)
}

/// Classify the inside of a WebVTT tag (between `<` and `>`). WebVTT tag names are case
/// sensitive; a span that takes no annotation but carries one (`<b onclick=…>`) is not
/// caption markup.
fn tag(inner: &str) -> Tag {
    if let Some(name) = inner.strip_prefix('/') {
        return match name {
            "c" | "i" | "b" | "u" | "ruby" | "rt" | "lang" => Tag::Span,
            "v" => Tag::VoiceEnd,
            _ => Tag::Other,
        };
    }
    if inner.starts_with(|c: char| c.is_ascii_digit()) {
        return super::timestamp(inner, '.').map_or(Tag::Other, Tag::Time);
    }
    let name_end = inner.find(['.', ' ', '\t']).unwrap_or(inner.len());
    let (name, after) = inner.split_at(name_end);
    let (classes, annotation) = match after.find([' ', '\t']) {
        Some(space) => (&after[..space], after[space..].trim()),
        None => (after, ""),
    };
    let classes_ok = classes.is_empty() || classes[1..].split('.').all(|class| !class.is_empty());
    match name {
        _ if !classes_ok => Tag::Other,
        "c" | "i" | "b" | "u" | "ruby" | "rt" if annotation.is_empty() => Tag::Span,
        "lang" if !annotation.is_empty() && annotation.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') => {
            Tag::Span
        }
        "v" => {
            let name = collapsed(&decode(annotation));
            Tag::Voice((!name.is_empty()).then_some(name))
        }
        _ => Tag::Other,
    }
}

/// `text` with its character references decoded.
fn decode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let (decoded, used) = reference(&rest[at..]).unwrap_or(('&', 1));
        out.push(decoded);
        rest = &rest[at + used..];
    }
    out.push_str(rest);
    out
}

/// The character reference opening `tail` (which starts with `&`) and its length in bytes:
/// the named ones captions use and numeric ones; `None` for an unknown or malformed
/// reference, which stays as written. NUL is refused as the file itself would be.
fn reference(tail: &str) -> Option<(char, usize)> {
    // The longest reference read here is `&#x10FFFF;`.
    let semicolon = tail.bytes().take(12).position(|b| b == b';')?;
    let body = &tail[1..semicolon];
    let decoded = match body {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => '\u{a0}',
        "lrm" => '\u{200e}',
        "rlm" => '\u{200f}',
        _ => {
            let number = body.strip_prefix('#')?;
            let (digits, radix) = match number.strip_prefix(['x', 'X']) {
                Some(hex) => (hex, 16),
                None => (number, 10),
            };
            if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
                return None;
            }
            let value = u32::from_str_radix(digits, radix).ok()?;
            char::from_u32(value).filter(|&c| c != '\0')?
        }
    };
    Some((decoded, semicolon + 1))
}

/// An SRT tag: a formatting tag or a voice span, else text. SRT's tags are HTML's, so
/// formatting tags are matched in any case.
fn srt_tag(inner: &str) -> Tag {
    match tag(inner) {
        voice @ (Tag::Voice(_) | Tag::VoiceEnd) => voice,
        _ if srt_format_tag(inner) => Tag::Span,
        _ => Tag::Other,
    }
}

/// The tags SRT players format with rather than show: `i`, `b`, `u`, `font`.
fn srt_format_tag(inner: &str) -> bool {
    let (closing, body) = match inner.strip_prefix('/') {
        Some(body) => (true, body),
        None => (false, inner),
    };
    let name_end = body.find(char::is_whitespace).unwrap_or(body.len());
    let (name, attributes) = body.split_at(name_end);
    let name = name.to_ascii_lowercase();
    match name.as_str() {
        "i" | "b" | "u" => attributes.trim().is_empty(),
        "font" => !closing || attributes.trim().is_empty(),
        _ => false,
    }
}

/// A leading speaker label: one to four words of capital letters (with dots, hyphens and
/// apostrophes: `DR. SMITH`, `O'BRIEN`, `JEAN-LUC`), then a colon and a space or the line's
/// end. Returns the name and the text after the label. Digits never make a label, so a time
/// such as `12:30` is text.
pub(super) fn speaker_label(text: &str) -> Option<(String, &str)> {
    let colon = text.find(':')?;
    let (name, rest) = (&text[..colon], &text[colon + 1..]);
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    if name.len() > 80 {
        return None;
    }
    let words: Vec<&str> = name.split(' ').collect();
    let word_ok = |word: &&str| {
        word.chars().any(char::is_uppercase)
            && word.chars().all(|c| c.is_uppercase() || matches!(c, '.' | '-' | '\'' | '\u{2019}'))
    };
    ((1..=4).contains(&words.len()) && words.iter().all(word_ok)).then(|| (name.to_owned(), rest.trim_start()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(raw: &str) -> String {
        Payload::webvtt(0).line(raw).key
    }

    fn srt_line(raw: &str) -> String {
        Payload::srt().line(raw).key
    }

    #[test]
    fn caption_spans_and_timestamps_are_dropped_and_their_words_kept() {
        assert_eq!(
            text("<c.yellow.bg_blue>Hello</c> <i>there</i>, <b>bold</b> <u>under</u>"),
            "Hello there, bold under"
        );
        assert_eq!(text("<ruby>漢<rt>kan</rt></ruby> <lang en-GB>colour</lang>"), "漢kan colour");
        assert_eq!(text("so<00:00:01.599><c> we</c><00:01.800><c> went</c>"), "so we went");
    }

    #[test]
    fn other_tags_are_kept_as_written() {
        assert_eq!(text("<script>alert(1)</script> hi"), "<script>alert(1)</script> hi");
        assert_eq!(
            text("<svg onload=alert(1)> <img src=x> <a href=\"u\">go</a>"),
            "<svg onload=alert(1)> <img src=x> <a href=\"u\">go</a>"
        );
        assert_eq!(text("<b onclick=x>hi</b> <I>caps</I> <br>"), "<b onclick=x>hi <I>caps</I> <br>");
        assert_eq!(text("a < b and c > d, x <i>y</i> 3 <"), "a < b and c > d, x y 3 <");
        assert_eq!(text("<99:99.999> <1x>"), "<99:99.999> <1x>");
    }

    #[test]
    fn character_references_are_decoded_and_unknown_ones_kept() {
        assert_eq!(text("Tom &amp; Jerry &lt;3 &gt; &quot;q&quot; &apos;a&apos;"), "Tom & Jerry <3 > \"q\" 'a'");
        assert_eq!(text("&#65;&#x42;&#X43; a&nbsp;b &lrm;x&rlm;"), "ABC a b \u{200e}x\u{200f}");
        assert_eq!(text("&lt;script&gt;"), "<script>");
        assert_eq!(
            text("&copy; &amp &#; &#x; &#0; &#xD800; &#99999999; AT&T"),
            "&copy; &amp &#; &#x; &#0; &#xD800; &#99999999; AT&T"
        );
    }

    #[test]
    fn voice_spans_name_speakers_across_lines() {
        let mut payload = Payload::webvtt(0);
        let first = payload.line("<v.loud Dr. Ana &amp; Co>Hello");
        let second = payload.line("again</v> <v Bo>Hi <v>anon</v></v>");
        assert_eq!(first.pieces[0].speaker.as_deref(), Some("Dr. Ana & Co"));
        let said: Vec<(Option<&str>, &str)> =
            second.pieces.iter().map(|p| (p.speaker.as_deref(), p.text.as_str())).collect();
        assert_eq!(said, [(Some("Dr. Ana & Co"), "again"), (None, " "), (Some("Bo"), "Hi "), (None, "anon")]);
    }

    #[test]
    fn inline_timestamps_time_the_words_after_them() {
        let line = Payload::webvtt(500).line("first<00:00:01.000><c> second</c>");
        assert!(line.timed);
        assert_eq!(line.pieces[0].at, Some(500));
        let line = Payload::webvtt(500).line(" <00:00:02.000><c>late</c>");
        assert_eq!(line.pieces[0].at, Some(2000));
    }

    #[test]
    fn srt_formatting_is_dropped_and_other_tags_kept() {
        assert_eq!(srt_line("{\\an8}<i>Hi</i> <B>there</B> <font color=\"#ffff00\">you</FONT>"), "Hi there you");
        assert_eq!(
            srt_line("<script>x</script> {not a code} {\\pos(1,2)}<u>u</u>"),
            "<script>x</script> {not a code} u"
        );
        assert_eq!(srt_line("<i class=x>a</i> 1 < 2 {\\an8"), "<i class=x>a 1 < 2 {\\an8");
    }

    #[test]
    fn speaker_labels_are_capitals_then_a_colon() {
        assert_eq!(speaker_label("JOHN: Hello."), Some(("JOHN".to_owned(), "Hello.")));
        assert_eq!(speaker_label("DR. SMITH: Yes"), Some(("DR. SMITH".to_owned(), "Yes")));
        assert_eq!(speaker_label("MARIA LOPEZ:"), Some(("MARIA LOPEZ".to_owned(), "")));
        assert_eq!(speaker_label("O'BRIEN-SMITH: x"), Some(("O'BRIEN-SMITH".to_owned(), "x")));
        assert_eq!(speaker_label("12:30 we start"), None);
        assert_eq!(speaker_label("John: hi"), None);
        assert_eq!(speaker_label("ONE TWO THREE FOUR FIVE: hi"), None);
        assert_eq!(speaker_label("HTTP://EXAMPLE"), None);
        assert_eq!(speaker_label("So: then"), None);
        assert_eq!(speaker_label(" JOHN: hi"), None);
    }
}
