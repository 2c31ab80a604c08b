//! Links disguised by characters that render as nothing or reorder what follows them: a word
//! holding a bidirectional control (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F) or a
//! zero-width character (U+200B–U+200D, U+2060, U+FEFF, U+00AD) that, once they are removed,
//! reads as a domain or a URL. A right-to-left override (U+202E) shows what follows it
//! reversed (`\u{202E}moc.elpmaxe` shows as `example.com`), so such a word is also read as it is
//! shown and reversed whole.
//!
//! A word reads as a link when it opens with a scheme and `://` and has something after it,
//! opens with `www.` and a label, or is a host (before any `/`, `?`, `#` or port) of two or more
//! labels of letters, digits and hyphens between dots whose last label is two or more ASCII
//! letters (or an `xn--` label). Words like `naïve`, emoji joined by a zero-width joiner (👩‍💻),
//! and Arabic or Hebrew text with the marks that order it are not links; a top-level label in
//! another script is not read, so right-to-left sentences with a dot between words are not
//! either.

/// Whether a word of `text` is a link disguised by invisible or reordering characters.
pub fn disguised_link(text: &str) -> bool {
    // Every hidden character is outside ASCII, as most text is.
    !text.is_ascii() && text.split_whitespace().any(|word| word.contains(hidden) && reads_as_link(word))
}

/// Bidirectional controls and zero-width characters.
fn hidden(c: char) -> bool {
    matches!(c as u32, 0x00AD | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060 | 0x2066..=0x2069 | 0xFEFF)
}

/// The right-to-left override and the pop that ends it.
const RLO: char = '\u{202E}';
const PDF: char = '\u{202C}';

/// Whether `word`, without its hidden characters, reads as a link as it is stored or (after a
/// right-to-left override) as it is shown.
fn reads_as_link(word: &str) -> bool {
    let visible = |s: &str| s.chars().filter(|c| !hidden(*c)).collect::<String>();
    if link(&visible(word)) {
        return true;
    }
    let Some((before, overridden)) = word.split_once(RLO) else {
        return false;
    };
    let (reversed, after) = overridden.split_once(PDF).unwrap_or((overridden, ""));
    let shown: String =
        visible(before).chars().chain(visible(reversed).chars().rev()).chain(visible(after).chars()).collect();
    let whole: String = visible(word).chars().rev().collect();
    link(&shown) || link(&whole)
}

/// Whether `word` (punctuation around it aside) is a URL or a domain.
fn link(word: &str) -> bool {
    let word = word
        .trim_matches(|c: char| {
            matches!(c, '"' | '\'' | '(' | ')' | '[' | ']' | '<' | '>' | '{' | '}' | '«' | '»' | '“' | '”' | '‘' | '’')
        })
        .trim_end_matches(['.', ',', ';', ':', '!', '?']);
    if let Some((scheme, rest)) = word.split_once("://") {
        return scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            && !rest.is_empty();
    }
    let host = word.split(['/', '?', '#']).next().unwrap_or(word);
    // A user before the host and a port after it are part of an address too.
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let host = match host.rsplit_once(':') {
        Some((h, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    };
    if let Some(after) = host.get(..4).filter(|p| p.eq_ignore_ascii_case("www.")).and_then(|_| host.get(4..)) {
        return after.split('.').next().is_some_and(label);
    }
    let labels: Vec<&str> = host.split('.').collect();
    let top = labels.last().copied().unwrap_or("");
    labels.len() >= 2
        && labels.iter().all(|l| label(l))
        && ((top.len() >= 2 && top.bytes().all(|b| b.is_ascii_alphabetic())) || top.starts_with("xn--"))
}

/// A domain label: letters and digits, hyphens between them.
fn label(label: &str) -> bool {
    !label.is_empty()
        && !label.starts_with('-')
        && !label.ends_with('-')
        && label.chars().all(|c| c.is_alphanumeric() || c == '-')
}

#[cfg(test)]
mod tests;
