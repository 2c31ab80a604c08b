//! Encoded payloads: an order hidden from the instruction detector by an encoding, or an order
//! to decode a token and do what it says.
//!
//! | encoding | a token is | decoded |
//! | --- | --- | --- |
//! | base64 | a run of at least [`MIN_BASE64`] characters of the standard or URL-safe alphabet, padded or not (a `=` inside a run starts another: `token=…`) | as bytes, read as UTF-8 text |
//! | hex | a word of at least [`MIN_HEX_DIGITS`] hex digits of even length, or byte pairs each with `\x` or `0x` (`\x49\x67…`, `0x49 0x67 …`), or byte pairs between spaces (`49 67 6e …`) | as bytes, read as UTF-8 text |
//! | percent | a word with a `%XX` escape, in a text with at least [`MIN_PERCENT_ESCAPES`] | escapes and `+` decoded, twice at most (`%2520`) |
//! | rot13 | the whole text; and, read in place, each word of plain text whose rotation is a word of the detector's and which is not one itself (`vtaber` is `ignore`) | ASCII letters rotated |
//!
//! A payload is flagged when its decoded text is instruction-like ([`super::score`]), alone
//! or read after the text it came in, when that adds a signal the text lacks (`SYSTEM:` in
//! plain text, the order encoded); rot13 read in place is flagged when the text with its
//! words decoded is instruction-like and decoding added a signal. A text that orders its reader to decode and obey ("decode
//! this and do what it says", "dekodiere das und tu, was es sagt", "decodifica esto y haz lo
//! que dice") is flagged when it also carries a base64 or hex token that decodes to text,
//! whatever that text says.
//!
//! Decoding is bounded: at most [`MAX_TEXT`] bytes of a text are read, at most [`MAX_TOKENS`]
//! tokens of each encoding are decoded, each to at most [`MAX_DECODED`] bytes. Decoded bytes
//! count as text only when they are UTF-8 without control characters and mostly letters, so a
//! digest, a UUID or an image's bytes are never read as a payload.

use super::lexicon::with_lexicon;
use super::{Score, Signal, normalise, score, text_words};
use std::cell::OnceCell;

/// The most bytes of a text read for payloads; an order hidden in a source fits in far fewer.
pub const MAX_TEXT: usize = 16 * 1024;
/// The most tokens of one encoding decoded from a text.
pub const MAX_TOKENS: usize = 16;
/// The most bytes decoded from one token.
pub const MAX_DECODED: usize = 4 * 1024;
/// The fewest characters of a base64 token (twelve bytes).
pub const MIN_BASE64: usize = 16;
/// The fewest hex digits of a hex token (eight bytes).
pub const MIN_HEX_DIGITS: usize = 16;
/// The fewest `%XX` escapes of a percent-encoded text.
pub const MIN_PERCENT_ESCAPES: usize = 3;

/// How a payload was encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// Base64, standard or URL-safe.
    Base64,
    /// Hex digits, bare or with `\x`/`0x` before each byte.
    Hex,
    /// Percent-encoding (`%20`).
    Percent,
    /// Rot13.
    Rot13,
}

impl Encoding {
    /// Its name, as an operator reads it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Base64 => "base64",
            Self::Hex => "hex",
            Self::Percent => "percent",
            Self::Rot13 => "rot13",
        }
    }
}

/// What an encoded payload holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finding {
    /// Its decoded text is instruction-like: the detector's score of it (read after the text
    /// it came in when that is what makes it so).
    Instructions(Score),
    /// The text orders its reader to decode a token and obey it, and carries one that decodes
    /// to text.
    DecodeOrder,
}

/// An encoded payload found in a text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoded {
    /// How it was encoded.
    pub encoding: Encoding,
    /// What it holds.
    pub finding: Finding,
}

impl Encoded {
    /// A sentence naming the encoding and the detector's signals (never the decoded text or
    /// the original).
    pub fn reason(&self) -> String {
        let name = self.encoding.name();
        match &self.finding {
            Finding::Instructions(score) => format!("{name} payload decoding to {}", score.reason()),
            Finding::DecodeOrder => format!("an order to decode a {name} payload and follow it"),
        }
    }
}

/// The first encoded payload `text` carries, if any (see the module docs).
pub fn encoded(text: &str) -> Option<Encoded> {
    let text = head(text, MAX_TEXT);
    // The text's own score is needed only when a payload scores something.
    let plain = OnceCell::new();
    let found = |encoding: Encoding, payload: &str| {
        instructions(text, &plain, payload).map(|s| Encoded { encoding, finding: Finding::Instructions(s) })
    };
    let rotated_words = |payload: &str| {
        rotated_instructions(text, &plain, payload)
            .map(|s| Encoded { encoding: Encoding::Rot13, finding: Finding::Instructions(s) })
    };
    let base64 = base64_texts(text);
    let hex = hex_texts(text);
    base64
        .iter()
        .find_map(|p| found(Encoding::Base64, p))
        .or_else(|| hex.iter().find_map(|p| found(Encoding::Hex, p)))
        .or_else(|| percent_decoded(text).and_then(|p| found(Encoding::Percent, &p)))
        .or_else(|| rot13(text).and_then(|p| found(Encoding::Rot13, &p)))
        .or_else(|| rot13_words(text).and_then(|p| rotated_words(&p)))
        .or_else(|| {
            let encoding = if !base64.is_empty() {
                Encoding::Base64
            } else if !hex.is_empty() {
                Encoding::Hex
            } else {
                return None;
            };
            ordered_to_decode(text).then_some(Encoded { encoding, finding: Finding::DecodeOrder })
        })
}

/// `text` cut to at most `max` bytes, at a character boundary.
fn head(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let end = (0..=max).rev().find(|at| text.is_char_boundary(*at)).unwrap_or(0);
    &text[..end]
}

/// The score that makes `payload` instruction-like: its own, or that of `text` followed by it
/// when that adds a signal (other than urgency or disguise) `text` lacks.
fn instructions(text: &str, plain: &OnceCell<Score>, payload: &str) -> Option<Score> {
    let alone = score(payload);
    if alone.flagged() {
        return Some(alone);
    }
    // A payload with no signal of its own adds none to the text (urgency alone scores nothing).
    if alone.points == 0 {
        return None;
    }
    let both = score(&format!("{text}\n{payload}"));
    (both.flagged() && adds_a_signal(&both, plain.get_or_init(|| score(text)))).then_some(both)
}

/// The score of `payload`, `text` with some of its words decoded, when it is instruction-like
/// and decoding added a signal (other than urgency or disguise) `text` lacks.
fn rotated_instructions(text: &str, plain: &OnceCell<Score>, payload: &str) -> Option<Score> {
    let decoded = score(payload);
    if !decoded.flagged() {
        return None;
    }
    adds_a_signal(&decoded, plain.get_or_init(|| score(text))).then_some(decoded)
}

/// Whether `decoded` holds a signal other than urgency or disguise that `plain` lacks.
fn adds_a_signal(decoded: &Score, plain: &Score) -> bool {
    decoded.signals.iter().any(|s| !matches!(s, Signal::Urgency | Signal::Disguise) && !plain.signals.contains(s))
}

/// `bytes` as text: UTF-8 (cut at the end of a complete character), no control characters
/// but line breaks and tabs, at least eight characters, most of them letters or spaces.
fn as_text(bytes: &[u8]) -> Option<&str> {
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        // A token cut at the cap may end inside a character.
        Err(e) if e.error_len().is_none() => std::str::from_utf8(bytes.get(..e.valid_up_to())?).ok()?,
        Err(_) => return None,
    };
    let (mut chars, mut letters) = (0usize, 0usize);
    for c in text.chars() {
        if c.is_control() && !matches!(c, '\n' | '\r' | '\t') {
            return None;
        }
        chars += 1;
        letters += usize::from(c.is_alphabetic() || c == ' ');
    }
    (chars >= 8 && letters * 10 >= chars * 6).then_some(text)
}

/// The value of a base64 character (standard or URL-safe).
fn base64_value(b: u8) -> Option<u32> {
    let v = match b {
        b'A'..=b'Z' => b - b'A',
        b'a'..=b'z' => b - b'a' + 26,
        b'0'..=b'9' => b - b'0' + 52,
        b'+' | b'-' => 62,
        b'/' | b'_' => 63,
        _ => return None,
    };
    Some(u32::from(v))
}

/// Decode base64 `token` (no padding), up to [`MAX_DECODED`] bytes; `None` on a character
/// outside the alphabets.
fn base64_decode(token: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity((token.len() * 3 / 4).min(MAX_DECODED));
    let (mut acc, mut bits) = (0u32, 0u32);
    for b in token.bytes() {
        acc = ((acc << 6) | base64_value(b)?) & 0xFFFF;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            if out.len() >= MAX_DECODED {
                break;
            }
        }
    }
    Some(out)
}

/// Whether `c` may be part of a base64 token.
fn base64_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '-' | '_' | '=')
}

/// The texts of `text`'s base64 tokens that decode to text. A run that does not is tried again
/// after its last `/` (a token at the end of a path).
fn base64_texts(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut tried = 0;
    let runs = text.split(|c: char| !base64_char(c)).flat_map(|run| run.split('=')).filter(|r| r.len() >= MIN_BASE64);
    for run in runs {
        let tail = run.rsplit_once('/').map(|(_, tail)| tail).filter(|t| t.len() >= MIN_BASE64 && t.len() < run.len());
        for token in std::iter::once(run).chain(tail) {
            if tried >= MAX_TOKENS {
                return out;
            }
            tried += 1;
            // No more characters are read than make the bytes decoded.
            let token = head(token, MAX_DECODED / 3 * 4);
            if let Some(decoded) = base64_decode(token).as_deref().and_then(as_text) {
                out.push(decoded.to_owned());
                break;
            }
        }
    }
    out
}

/// The bytes a hex word stands for: all hex digits (even count), or byte runs each opened by
/// `\x` or `0x`; at most [`MAX_DECODED`] of them.
fn hex_word(word: &str) -> Option<Vec<u8>> {
    let prefixed = |rest: &[u8]| rest.starts_with(b"\\x") || rest.starts_with(b"0x") || rest.starts_with(b"0X");
    let mut rest = word.as_bytes();
    let plain = !prefixed(rest);
    let mut out = Vec::new();
    loop {
        if !plain {
            rest = rest.get(2..).filter(|_| prefixed(rest))?;
        }
        let digits = rest.iter().take_while(|b| b.is_ascii_hexdigit()).count();
        if digits == 0 || digits % 2 != 0 {
            return None;
        }
        let (run, after) = rest.split_at(digits);
        for pair in run.chunks_exact(2).take(MAX_DECODED - out.len()) {
            if let [hi, lo] = pair {
                out.push((hex_value(*hi)? << 4) | hex_value(*lo)?);
            }
        }
        rest = after;
        if rest.is_empty() || out.len() >= MAX_DECODED {
            return Some(out);
        }
        if plain {
            return None;
        }
    }
}

fn hex_value(b: u8) -> Option<u8> {
    char::from(b).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

/// The texts of `text`'s hex tokens that decode to text. A word of one byte (`49`, `0x49`,
/// `\x49`) joins the byte words beside it; a longer word is a token of its own, so a word of
/// prose that happens to be hex (`be`, `cafe`) never spoils the token after it.
fn hex_texts(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut tried = 0;
    let mut pairs: Vec<u8> = Vec::new();
    let mut try_token = |bytes: &[u8], out: &mut Vec<String>| {
        if bytes.len() * 2 < MIN_HEX_DIGITS || tried >= MAX_TOKENS {
            return;
        }
        tried += 1;
        if let Some(decoded) = as_text(bytes) {
            out.push(decoded.to_owned());
        }
    };
    let separators = |c: char| {
        c.is_whitespace()
            || matches!(c, ',' | ';' | ':' | '"' | '\'' | '(' | ')' | '[' | ']' | '{' | '}' | '<' | '>' | '=')
    };
    for word in text.split(separators).filter(|w| !w.is_empty()) {
        match hex_word(word.trim_end_matches('.')) {
            Some(bytes) if bytes.len() == 1 => {
                if pairs.len() < MAX_DECODED {
                    pairs.extend(bytes);
                }
            }
            found => {
                try_token(&pairs, &mut out);
                pairs.clear();
                if let Some(bytes) = found {
                    try_token(&bytes, &mut out);
                }
            }
        }
    }
    try_token(&pairs, &mut out);
    out
}

/// How many `%XX` escapes `text` holds.
fn escapes(text: &str) -> usize {
    text.as_bytes()
        .windows(3)
        .filter(|w| matches!(w, [b'%', hi, lo] if hi.is_ascii_hexdigit() && lo.is_ascii_hexdigit()))
        .count()
}

/// The words of `text` that hold a `%XX` escape, decoded (twice, for `%2520`), when `text`
/// holds at least [`MIN_PERCENT_ESCAPES`].
fn percent_decoded(text: &str) -> Option<String> {
    if escapes(text) < MIN_PERCENT_ESCAPES {
        return None;
    }
    let once = percent_words(text);
    Some(if escapes(&once) >= MIN_PERCENT_ESCAPES { percent_words(&once) } else { once })
}

/// The words of `text` with an escape, decoded and joined by spaces.
fn percent_words(text: &str) -> String {
    let words: Vec<String> = text.split_whitespace().filter(|w| escapes(w) > 0).map(percent_decode).collect();
    words.join(" ")
}

/// `word` with `%XX` escapes and `+` decoded, invalid UTF-8 replaced.
fn percent_decode(word: &str) -> String {
    let mut out = Vec::with_capacity(word.len());
    let mut bytes = word.as_bytes();
    while let Some((&b, rest)) = bytes.split_first() {
        match (b, rest) {
            (b'%', [hi, lo, after @ ..]) if hi.is_ascii_hexdigit() && lo.is_ascii_hexdigit() => {
                out.push((hex_value(*hi).unwrap_or(0) << 4) | hex_value(*lo).unwrap_or(0));
                bytes = after;
                continue;
            }
            (b'+', _) => out.push(b' '),
            _ => out.push(b),
        }
        bytes = rest;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `text` with its ASCII letters rotated by thirteen, when it has letters to rotate.
fn rot13(text: &str) -> Option<String> {
    if text.bytes().filter(u8::is_ascii_alphabetic).count() < 3 {
        return None;
    }
    let rotate = |c: char| u8::try_from(c).map_or(c, |b| char::from(rot13_byte(b)));
    Some(text.chars().map(rotate).collect())
}

/// An ASCII letter rotated by thirteen; any other byte as it is.
fn rot13_byte(b: u8) -> u8 {
    match b {
        b'a'..=b'm' | b'A'..=b'M' => b + 13,
        b'n'..=b'z' | b'N'..=b'Z' => b - 13,
        _ => b,
    }
}

/// The longest word [`rot13_words`] rotates; the detector's words are all shorter.
const MAX_ROTATED: usize = 32;

/// `text` with each word of three or more ASCII letters rotated when its rotation is a word
/// of the detector's and the word itself is not (`vtaber` is `ignore`, `choyvfu` is
/// `publish`): a run of rot13 words inside plain text, read in place. `None` when no word is.
fn rot13_words(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    // Where the words to rotate are, found before anything is written: most text has none.
    let mut rotate: Vec<(usize, usize)> = Vec::new();
    with_lexicon(|l| {
        let known = |w: &[u8]| std::str::from_utf8(w).is_ok_and(|w| l.kinds(w) != 0);
        // Whether the character before `at` is a letter or digit.
        let mut joined = false;
        let mut at = 0;
        while let Some(rest) = text.get(at..).filter(|r| !r.is_empty()) {
            let letters = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
            if letters == 0 {
                let c = rest.chars().next().unwrap_or(' ');
                joined = c.is_alphanumeric();
                at += c.len_utf8();
                continue;
            }
            let end = at + letters;
            // A word run on into other letters (`naïve`, `año`) is not a word of its own.
            let whole = !joined && !rest[letters..].starts_with(char::is_alphanumeric);
            joined = true;
            if whole && (3..=MAX_ROTATED).contains(&letters) {
                let (mut lower, mut rotated) = ([0u8; MAX_ROTATED], [0u8; MAX_ROTATED]);
                for ((l, r), b) in lower.iter_mut().zip(rotated.iter_mut()).zip(&bytes[at..end]) {
                    *l = b.to_ascii_lowercase();
                    *r = rot13_byte(*l);
                }
                if known(&rotated[..letters]) && !known(&lower[..letters]) {
                    rotate.push((at, end));
                }
            }
            at = end;
        }
    });
    if rotate.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (start, end) in rotate {
        out.push_str(&text[last..start]);
        out.extend(text[start..end].bytes().map(|b| char::from(rot13_byte(b))));
        last = end;
    }
    out.push_str(&text[last..]);
    Some(out)
}

/// Verbs that order a decoding (imperatives and infinitives), in the six languages.
const DECODE: &[&str] = &[
    "decode",
    "decrypt",
    "decipher",
    "unescape",
    "unhex",
    "deobfuscate",
    "dekodiere",
    "dekodier",
    "dekodieren",
    "decodiere",
    "decodieren",
    "entschlüssele",
    "entschlüssle",
    "entschluessele",
    "entschlüsseln",
    "entschluesseln",
    "decodifica",
    "decodifique",
    "decodificad",
    "decodificar",
    "descodifica",
    "descodifique",
    "descodificar",
    "descifra",
    "descifre",
    "descifrar",
    "décode",
    "décodez",
    "decodez",
    "décoder",
    "decoder",
    "déchiffre",
    "dechiffre",
    "déchiffrez",
    "déchiffrer",
    "decifre",
    "decifra",
    "decifrar",
    "decodificate",
    "decodificare",
    "decifrate",
    "decifrare",
];

/// Participles of a decoding, which an order to obey may name after its verb ("follow the
/// decoded instructions").
const DECODED: &[&str] = &[
    "decoded",
    "decrypted",
    "deciphered",
    "dekodierte",
    "dekodierten",
    "decodierte",
    "decodierten",
    "entschlüsselte",
    "entschlüsselten",
    "decodificado",
    "decodificada",
    "decodificados",
    "decodificadas",
    "descifrado",
    "descifrada",
    "décodé",
    "décodée",
    "décodées",
    "décodés",
    "déchiffré",
    "déchiffrée",
    "decifrado",
    "decifrada",
    "decodificato",
    "decodificata",
    "decodificati",
    "decifrato",
    "decifrata",
];

/// Verbs that order obedience, in the six languages.
const OBEY: &[&str] = &[
    "do",
    "follow",
    "obey",
    "execute",
    "run",
    "apply",
    "perform",
    "carry",
    "act",
    "comply",
    "implement",
    "tu",
    "tue",
    "mach",
    "mache",
    "befolge",
    "befolgen",
    "folge",
    "führe",
    "fuehre",
    "ausführen",
    "ausfuehren",
    "gehorche",
    "tun",
    "machen",
    "haz",
    "hacer",
    "sigue",
    "siga",
    "seguir",
    "obedece",
    "obedezca",
    "obedecer",
    "ejecuta",
    "ejecute",
    "ejecutar",
    "cumple",
    "cumpla",
    "cumplir",
    "aplica",
    "aplique",
    "fais",
    "faites",
    "faire",
    "suis",
    "suivez",
    "suivre",
    "obéis",
    "obeis",
    "obéissez",
    "obéir",
    "exécute",
    "exécutez",
    "executez",
    "exécuter",
    "applique",
    "appliquez",
    "faça",
    "faca",
    "fazer",
    "segue",
    "obedeça",
    "obedeca",
    "executa",
    "executar",
    "cumpra",
    "cumprir",
    "fai",
    "fare",
    "segui",
    "seguite",
    "seguire",
    "obbedisci",
    "obbedite",
    "esegui",
    "eseguite",
    "eseguire",
    "applica",
];

/// How many words after a decoding verb an order to obey may come.
const DECODE_WINDOW: usize = 12;

/// Whether `text` orders its reader to decode something and obey it: a decoding verb followed
/// within [`DECODE_WINDOW`] words by a verb of obedience, or a verb of obedience followed
/// within four words by a decoding participle.
fn ordered_to_decode(text: &str) -> bool {
    let normal = normalise(text);
    let w: Vec<&str> = text_words(&normal.text).collect();
    let has = |from: usize, to: usize, set: &[&str]| {
        w.get(from..to.min(w.len())).is_some_and(|r| r.iter().any(|x| set.contains(x)))
    };
    (0..w.len()).any(|i| {
        (has(i, i + 1, DECODE) && has(i + 1, i + 1 + DECODE_WINDOW, OBEY))
            || (has(i, i + 1, OBEY) && has(i + 1, i + 5, DECODED))
    })
}

#[cfg(test)]
mod tests;
