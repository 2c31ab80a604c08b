//! The one normalisation every figure check reads through, in drafts, operator edits and
//! evidence alike: characters that render as nothing are removed (so `4\u{200b}0%` is `40%`),
//! and full-width forms are their ASCII selves (`８０％` is `80%`, the ideographic space a
//! space). Offsets map back to the text as written.

use std::borrow::Cow;

/// A text as figures are read from it, and where each of its bytes comes from.
pub(crate) struct Prepared<'a> {
    /// The text read.
    pub(crate) text: Cow<'a, str>,
    /// The offset in the original of each byte of `text`, and one past the end; `None` when
    /// `text` is the original.
    back: Option<Vec<usize>>,
    /// The original's length.
    len: usize,
}

impl Prepared<'_> {
    /// The offset in the original text of byte `at` of the prepared text.
    pub(crate) fn back(&self, at: usize) -> usize {
        match &self.back {
            None => at,
            Some(back) => back.get(at).copied().unwrap_or(self.len),
        }
    }

    /// The original range of the prepared range `range`.
    pub(crate) fn back_range(&self, range: std::ops::Range<usize>) -> std::ops::Range<usize> {
        self.back(range.start)..self.back(range.end)
    }
}

use harmonia_contracts::untrusted::invisible;

/// What a character reads as: `None` when removed, else itself or its ASCII form.
fn read(ch: char) -> Option<char> {
    if invisible(ch) {
        return None;
    }
    Some(match ch as u32 {
        0xFF01..=0xFF5E => char::from_u32(ch as u32 - 0xFEE0).unwrap_or(ch),
        0x3000 => ' ',
        _ => ch,
    })
}

/// `text` prepared for reading figures.
pub(crate) fn prepare(text: &str) -> Prepared<'_> {
    if text.is_ascii() || text.chars().all(|c| read(c) == Some(c)) {
        return Prepared { text: Cow::Borrowed(text), back: None, len: text.len() };
    }
    let mut out = String::with_capacity(text.len());
    let mut back = Vec::with_capacity(text.len() + 1);
    for (at, ch) in text.char_indices() {
        if let Some(reads) = read(ch) {
            out.push(reads);
            back.extend(std::iter::repeat_n(at, reads.len_utf8()));
        }
    }
    back.push(text.len());
    Prepared { text: Cow::Owned(out), back: Some(back), len: text.len() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_and_full_width_characters_read_as_plain_digits() {
        let p = prepare("cut 4\u{200b}0% and ８０％ here");
        assert_eq!(p.text, "cut 40% and 80% here");
        let at = p.text.find("80%").expect("found");
        let original = "cut 4\u{200b}0% and ８０％ here";
        assert_eq!(&original[p.back_range(at..at + 3)], "８０％");
        assert!(matches!(prepare("plain").text, Cow::Borrowed(_)));
    }
}
