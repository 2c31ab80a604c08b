use super::*;

#[test]
fn links_hidden_by_invisible_characters_are_disguised() {
    for text in [
        "visit exa\u{200b}mple.com today",
        "pay\u{00ad}pal.com",
        "https://\u{200d}bank.example/login",
        "go to www.\u{2060}example",
        "\u{feff}login.example-bank.com/verify?id=1",
        "(\u{200c}secure.example.org)",
        "user@\u{200b}mail.example.com:8080",
    ] {
        assert!(disguised_link(text), "{text:?}");
    }
}

#[test]
fn links_reordered_by_bidirectional_controls_are_disguised() {
    for text in [
        "\u{202e}moc.elpmaxe",
        "see \u{202e}moc.ppa-evil\u{202c} now",
        "invoice\u{202e}fdp.exe",
        "\u{2066}example.com\u{2069}",
        "\u{200f}example.com",
        "example\u{202b}.com",
    ] {
        assert!(disguised_link(text), "{text:?}");
    }
}

#[test]
fn words_emoji_and_right_to_left_text_are_not_links() {
    for text in [
        "naïve",
        "na\u{00ad}ïve café",
        "👩\u{200d}💻 coding",
        "مرحبا\u{200f} بالعالم",
        "שלום\u{200f}. עולם",
        "عربي\u{200f}.عربي",
        "e.\u{200b}g. and 3.\u{200b}14",
        "example.com without anything hidden",
        "zero\u{200b}width but no dot",
        "\u{202e}olleh",
    ] {
        assert!(!disguised_link(text), "{text:?}");
    }
}

proptest::proptest! {
    /// Any text is read without a panic.
    #[test]
    fn any_text_is_read(text in "\\PC{0,120}", mixed in "([a-z]{1,6}|\\.|/|:|@|[\u{200b}\u{202e}\u{202c}\u{2066}\u{200f}\u{00ad}]|[ ]){0,30}") {
        let _ = disguised_link(&text);
        let _ = disguised_link(&mixed);
    }
}
