use super::*;

fn kind(text: &str) -> Option<MarkupKind> {
    markup(text).map(|m| m.kind)
}

#[test]
fn elements_are_markup() {
    for text in [
        "<script>alert(1)</script>",
        "Watch <iframe src=https://example.com></iframe>",
        "<a href=https://example.com>click</a>",
        "<div>",
        "<style>body { display: none }</style>",
        "end of paragraph</p>",
        "line<br/>break",
        "<br>",
        "<svg:rect width=1 />",
        "<object data=x>",
        "<!-- hidden note -->",
        "<!doctype html>",
        "<![CDATA[ x ]]>",
        "<?xml version='1.0'?>",
        "<b class=x>styled</b>",
        "<SCRIPT>x</SCRIPT>",
    ] {
        assert_eq!(kind(text), Some(MarkupKind::Element), "{text}");
    }
}

#[test]
fn event_handlers_are_markup_even_outside_a_tag() {
    for text in [
        "<svg onload=alert(1)>",
        "<img src=x onerror=alert(1)>",
        "<body/onload=x>",
        "onclick=steal()",
        "a button onerror =alert(1)",
        "x ONMOUSEOVER\t= y",
        "<b onclick=x>bold</b>",
        "<v onclick=x>",
    ] {
        assert_eq!(kind(text), Some(MarkupKind::EventHandler), "{text}");
    }
}

#[test]
fn script_urls_are_markup_in_any_disguise() {
    for text in [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "java&#115;cript:alert(1)",
        "&#106;avascript:alert(1)",
        "java\tscript:alert(1)",
        "java&#x09;script:alert(1)",
        "java&Tab;script:alert(1)",
        "javascript&colon;alert(1)",
        "java\u{200b}script:alert(1)",
        "vbscript:msgbox(1)",
        "data:text/html;base64,PHNjcmlwdD4=",
        "<a href=\"javascript:void(0)\">x</a>",
        "href='javascript: alert(1)'",
    ] {
        assert_eq!(kind(text), Some(MarkupKind::ScriptUrl), "{text}");
    }
}

#[test]
fn caption_styling_is_not_markup() {
    for text in [
        "<i>hello</i> <b>bold</b> <u>under</u>",
        "<c>classless</c> <c.yellow.bg_blue>coloured</c>",
        "<v Dr. Ana Ruiz>Hello there</v>",
        "<v.loud Ana>Hi</v>",
        "<lang en-US>colour</lang>",
        "<ruby>漢<rt>kan</rt></ruby>",
        "<00:00:01.599>word <00:00:02.000>next",
        "<I>srt italics</I>",
        "<font color=\"#ff0000\">red</font>",
    ] {
        assert_eq!(markup(text), None, "{text}");
    }
}

#[test]
fn comparisons_arrows_and_prose_are_not_markup() {
    for text in [
        "3 < 5 and 7 > 2",
        "x<y",
        "I <3 you",
        "a -> b",
        "<-- back",
        "JavaScript: The Good Parts",
        "Learn JavaScript today.",
        "Mail <ana@example.com>",
        "See <https://example.com>",
        "onion = 3, online=true, one = 1",
        "Tom & Jerry: a classic",
        "Ratio: 1:2; the data: text and html",
        "The show starts on time = 8 pm.",
    ] {
        assert_eq!(markup(text), None, "{text}");
    }
}

#[test]
fn the_reason_names_the_kind_never_the_text() {
    let found = markup("<script>alert(1)</script>").map(|m| m.reason()).unwrap_or_default();
    assert_eq!(found, "markup that is not caption styling: an HTML, SVG or XML element");
    assert!(!found.contains("alert"));
}

proptest::proptest! {
    /// Any text, and any mix of the characters markup is made of, is read without a panic.
    #[test]
    fn any_text_is_read(
        text in "\\PC{0,200}",
        tags in "(<|>|/|!|\\?|--|&#[0-9]{0,8};?|&#x[0-9a-f]{0,8};?|&[a-z]{0,8};?|on[a-z]{0,8}|=|[a-z]{1,6}|:|[ \\t\\n]|[é€😀\u{200b}])
{0,40}",
    ) {
        let _ = markup(&text);
        let _ = markup(&tags);
    }
}
