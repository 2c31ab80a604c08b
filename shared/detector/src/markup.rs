//! Markup in untrusted text that is not caption styling: an HTML, SVG or XML element, an
//! event-handler attribute, or a script URL. Source text is shown to operators and may reach
//! a post; markup in it is a payload for whatever renders it next.
//!
//! | kind | what it is |
//! | --- | --- |
//! | element | `<` (or `</`) and a tag name that starts with a letter, followed by whitespace, `/` or `>`, up to a `>` (`<script>`, `<svg onload=…>`, `<div>`, `</p>`, `<br/>`); a comment, declaration or processing instruction (`<!-- … -->`, `<!doctype html>`, `<![CDATA[`, `<?xml …>`) |
//! | event handler | an attribute naming an event handler (`onload=`, `onerror =`, `onclick=`, …), even outside a full tag |
//! | script URL | `javascript:`, `vbscript:` or `data:text/html` where a URL begins, in any case and with the tricks a browser forgives collapsed: character references (`java&#115;cript:`, `&colon;`), tabs and line breaks (`java\tscript:`), zero-width characters |
//!
//! Caption styling is not markup: WebVTT's `<i>`, `<b>`, `<u>`, `<c>` and `<c.class>`,
//! `<v Name>`, `<lang en>`, `<ruby>`, `<rt>` and timestamp tags (`<00:00:01.599>`), their
//! closing tags, and SRT's `<I>`, `<B>`, `<U>` and `<font color=…>`. Nor are comparisons and
//! arrows: `3 < 5 and 7 > 2`, `x<y`, `<3`, `->`, `<--`.

/// What kind of markup was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MarkupKind {
    /// An HTML, SVG or XML element, comment or declaration.
    Element,
    /// An event-handler attribute (`onload=`).
    EventHandler,
    /// A `javascript:`, `vbscript:` or `data:text/html` URL.
    ScriptUrl,
}

impl MarkupKind {
    /// What it is, in words an operator reads.
    pub const fn describe(self) -> &'static str {
        match self {
            Self::Element => "an HTML, SVG or XML element",
            Self::EventHandler => "an event-handler attribute",
            Self::ScriptUrl => "a script URL",
        }
    }
}

/// Markup found in a text: the most dangerous kind it holds (event handler, then script URL,
/// then element).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Markup {
    /// What was found.
    pub kind: MarkupKind,
}

impl Markup {
    /// A sentence naming what was found (never the text itself).
    pub fn reason(&self) -> String {
        format!("markup that is not caption styling: {}", self.kind.describe())
    }
}

/// The markup `text` holds, if any (see the module docs).
pub fn markup(text: &str) -> Option<Markup> {
    // Every kind needs one of these characters; most text has none.
    if !text.contains(['<', '=', ':', '&']) {
        return None;
    }
    let collapsed = collapse(text);
    let kind = if event_handler(&collapsed) {
        MarkupKind::EventHandler
    } else if script_url(&collapsed) {
        MarkupKind::ScriptUrl
    } else if element(text) {
        MarkupKind::Element
    } else {
        return None;
    };
    Some(Markup { kind })
}

/// Whether `text` holds an element, comment, declaration or processing instruction that is not
/// caption styling.
fn element(text: &str) -> bool {
    // Where the `>` after the current `<` is: found once for every `<` before it, so a text of
    // many `<` is read once.
    let mut close: Option<usize> = None;
    for (at, _) in text.match_indices('<') {
        if close.is_none_or(|c| c < at) {
            close = text[at..].find('>').map(|c| at + c);
        }
        let Some(end) = close else {
            return false;
        };
        if tag(&text[at + 1..end]) {
            return true;
        }
    }
    false
}

/// Whether `tag` (between `<` and `>`) is markup.
fn tag(tag: &str) -> bool {
    if let Some(rest) = tag.strip_prefix('!').or_else(|| tag.strip_prefix('?')) {
        // `<!-- … -->`, `<!doctype …>`, `<![CDATA[`, `<?xml …?>`; not `<!>` or `<!3`.
        return (rest.starts_with("--") && tag.ends_with("--"))
            || rest.starts_with("[CDATA[")
            || rest.starts_with(|c: char| c.is_ascii_alphabetic());
    }
    let (closing, rest) = match tag.strip_prefix('/') {
        Some(rest) => (true, rest),
        None => (false, tag),
    };
    let name_end = tag_name_end(rest);
    let (name, attributes) = rest.split_at(name_end);
    let opens_tag = name.starts_with(|c: char| c.is_ascii_alphabetic())
        && (attributes.is_empty() || attributes.starts_with(|c: char| c.is_whitespace() || c == '/'));
    opens_tag && !caption_tag(closing, name, attributes)
}

/// Where a tag name opening `text` ends: letters, digits, `-` and `_`, and a `:` between
/// letters (`svg:rect`), so that `https://` is not a name.
fn tag_name_end(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut end = 0;
    while let Some(&b) = bytes.get(end) {
        let namespace = b == b':' && bytes.get(end + 1).is_some_and(u8::is_ascii_alphabetic);
        if !(b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || namespace) {
            break;
        }
        end += 1;
    }
    end
}

/// Whether a tag is caption styling: WebVTT's (`<i>`, `<v Name>`, `</c>`, …) and SRT's.
fn caption_tag(closing: bool, name: &str, attributes: &str) -> bool {
    let bare = attributes.trim().is_empty();
    match name {
        "i" | "b" | "u" | "c" | "ruby" | "rt" | "I" | "B" | "U" => bare,
        // A voice or a language names its speaker or language in free text.
        "v" | "lang" => (closing && bare) || (!closing && !attributes.contains(['=', '<', '"', '\''])),
        "font" => (closing && bare) || (!closing && font_styling(attributes)),
        _ => false,
    }
}

/// Whether SRT's `<font …>` attributes are styling only (`color`, `face`, `size`).
fn font_styling(attributes: &str) -> bool {
    let attributes = attributes.trim().trim_end_matches('/');
    !attributes.is_empty()
        && attributes.split_whitespace().all(|a| {
            let name = a.split('=').next().unwrap_or(a).to_ascii_lowercase();
            a.contains('=') && matches!(name.as_str(), "color" | "face" | "size")
        })
}

/// `text` as a browser reads a URL or an attribute: ASCII lower case, character references
/// decoded (`&#115;`, `&#x73;`, `&colon;`), tabs, line breaks and characters that render as
/// nothing removed.
fn collapse(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let (c, len) = match c {
            '&' => reference(rest).unwrap_or(('&', 1)),
            _ => (c, c.len_utf8()),
        };
        if !(matches!(c, '\t' | '\n' | '\r') || super::invisible(c)) {
            out.push(c.to_ascii_lowercase());
        }
        rest = rest.get(len..).unwrap_or("");
    }
    out
}

/// The character a reference opening `text` stands for, and its length: numeric (`&#115;`,
/// `&#x73`, the `;` optional as browsers allow) or one of the named ones a script URL or an
/// attribute is spelled with.
fn reference(text: &str) -> Option<(char, usize)> {
    let body = text.strip_prefix('&')?;
    if let Some(number) = body.strip_prefix('#') {
        let (radix, digits_at) = match number.as_bytes().first() {
            Some(b'x' | b'X') => (16, 1),
            _ => (10, 0),
        };
        let digits = &number[digits_at..];
        let count = digits.bytes().take_while(|b| char::from(*b).is_digit(radix)).count();
        if count == 0 || count > 8 {
            return None;
        }
        let ch = u32::from_str_radix(&digits[..count], radix).ok().and_then(char::from_u32)?;
        let semicolon = usize::from(digits[count..].starts_with(';'));
        return Some((ch, 2 + digits_at + count + semicolon));
    }
    const NAMED: &[(&str, char)] = &[
        ("colon;", ':'),
        ("tab;", '\t'),
        ("newline;", '\n'),
        ("sol;", '/'),
        ("lpar;", '('),
        ("rpar;", ')'),
        ("equals;", '='),
        ("lt;", '<'),
        ("gt;", '>'),
        ("quot;", '"'),
        ("apos;", '\''),
        ("amp;", '&'),
        ("period;", '.'),
    ];
    NAMED.iter().find_map(|(name, ch)| {
        body.get(..name.len()).filter(|b| b.eq_ignore_ascii_case(name)).map(|_| (*ch, 1 + name.len()))
    })
}

/// Whether a character may stand just before an attribute name: anything but a letter, digit,
/// `_`, `-` or `.` (so `button onclick=` and `<svg/onload=` count, `ononload` and `x.onload`
/// do not).
fn name_boundary(before: Option<char>) -> bool {
    before.is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
}

/// Whether collapsed `text` names an event handler as an attribute: `on` and an event, then
/// spaces and `=`.
fn event_handler(text: &str) -> bool {
    text.match_indices("on").any(|(at, _)| {
        if !name_boundary(text[..at].chars().next_back()) {
            return false;
        }
        let rest = &text[at + 2..];
        let name_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        EVENTS.contains(&&rest[..name_len]) && rest[name_len..].trim_start_matches(' ').starts_with('=')
    })
}

/// Whether collapsed `text` holds a script URL where a URL begins: after a character that is
/// not part of a word, and followed by the URL's body (not a space, as `JavaScript: the good
/// parts` is), unless it is an attribute's value (after `=`, a quotation mark or a bracket).
fn script_url(text: &str) -> bool {
    ["javascript:", "vbscript:", "livescript:", "data:text/html"].iter().any(|scheme| {
        text.match_indices(scheme).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let value = before.is_some_and(|c| matches!(c, '=' | '"' | '\'' | '(' | '`'));
            let body = text[at + scheme.len()..].chars().next();
            let opens_body = body.is_some_and(|c| !c.is_whitespace() && !matches!(c, ')' | '.' | ',' | ';'));
            name_boundary(before) && (value || opens_body || scheme.starts_with("data"))
        })
    })
}

/// Events of HTML and SVG whose handlers are attributes (the names after `on`).
const EVENTS: &[&str] = &[
    "abort",
    "activate",
    "afterprint",
    "animationcancel",
    "animationend",
    "animationiteration",
    "animationstart",
    "auxclick",
    "beforeactivate",
    "beforecopy",
    "beforecut",
    "beforeinput",
    "beforepaste",
    "beforeprint",
    "beforetoggle",
    "beforeunload",
    "begin",
    "blur",
    "bounce",
    "cancel",
    "canplay",
    "canplaythrough",
    "change",
    "click",
    "close",
    "contextmenu",
    "copy",
    "cuechange",
    "cut",
    "dblclick",
    "drag",
    "dragend",
    "dragenter",
    "dragleave",
    "dragover",
    "dragstart",
    "drop",
    "durationchange",
    "emptied",
    "end",
    "ended",
    "error",
    "finish",
    "focus",
    "focusin",
    "focusout",
    "formdata",
    "fullscreenchange",
    "gotpointercapture",
    "hashchange",
    "input",
    "invalid",
    "keydown",
    "keypress",
    "keyup",
    "load",
    "loadeddata",
    "loadedmetadata",
    "loadstart",
    "lostpointercapture",
    "message",
    "mousedown",
    "mouseenter",
    "mouseleave",
    "mousemove",
    "mouseout",
    "mouseover",
    "mouseup",
    "mousewheel",
    "offline",
    "online",
    "pagehide",
    "pageshow",
    "paste",
    "pause",
    "play",
    "playing",
    "pointercancel",
    "pointerdown",
    "pointerenter",
    "pointerleave",
    "pointermove",
    "pointerout",
    "pointerover",
    "pointerrawupdate",
    "pointerup",
    "popstate",
    "progress",
    "ratechange",
    "readystatechange",
    "repeat",
    "reset",
    "resize",
    "scroll",
    "scrollend",
    "search",
    "securitypolicyviolation",
    "seeked",
    "seeking",
    "select",
    "selectionchange",
    "selectstart",
    "show",
    "slotchange",
    "stalled",
    "start",
    "storage",
    "submit",
    "suspend",
    "timeupdate",
    "toggle",
    "touchcancel",
    "touchend",
    "touchmove",
    "touchstart",
    "transitioncancel",
    "transitionend",
    "transitionrun",
    "transitionstart",
    "unload",
    "volumechange",
    "waiting",
    "wheel",
];

#[cfg(test)]
mod tests;
