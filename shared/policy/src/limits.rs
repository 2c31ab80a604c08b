//! Each platform's limits on a post, in one table ([`LIMITS`]) that policy checks and
//! `docs/limits.md` quotes, and the ways platforms count a text.

use harmonia_contracts::domain::{Platform, WorkspaceConfig};
use unicode_normalization::UnicodeNormalization;
use unicode_segmentation::UnicodeSegmentation;

use super::links;

/// What a URL counts for on X.
pub const X_URL_WEIGHT: usize = 23;

fn is_emoji(ch: char) -> bool {
    matches!(ch as u32, 0x1F000..=0x1FAFF | 0x2600..=0x27BF | 0x2B00..=0x2BFF)
}

/// Characters X weighs 1 (Latin and common punctuation); everything else weighs 2.
fn x_light(ch: char) -> bool {
    matches!(ch as u32, 0..=0x10FF | 0x2000..=0x200D | 0x2010..=0x201F | 0x2032..=0x2037)
}

/// X's weighted length: NFC, each URL 23, an emoji grapheme 2, CJK and other heavy characters 2.
pub fn x_weighted_length(text: &str) -> usize {
    linked_length(text, X_URL_WEIGHT, weigh)
}

/// `text` (NFC) counted with `count` between its links, each link counting `link_weight`.
fn linked_length(text: &str, link_weight: usize, count: fn(&str) -> usize) -> usize {
    let normalized: String = text.nfc().collect();
    let mut total = 0;
    let mut rest = normalized.as_str();
    for link in links(&normalized) {
        if let Some(at) = rest.find(link) {
            total += count(&rest[..at]) + link_weight;
            rest = &rest[at + link.len()..];
        }
    }
    total + count(rest)
}

fn weigh(text: &str) -> usize {
    text.graphemes(true)
        .map(|g| if g.chars().any(is_emoji) { 2 } else { g.chars().map(|c| if x_light(c) { 1 } else { 2 }).sum() })
        .sum()
}

/// The measured length of `text` on the channel `config` lists for `platform`, and that
/// channel's limit: the platform's, or the Mastodon instance's when the channel states it.
pub fn length_on(config: &WorkspaceConfig, platform: Platform, text: &str) -> (usize, usize, &'static str) {
    let (used, limit, unit) = length(platform, text);
    let stated = config.channels.iter().find(|c| c.platform == platform).and_then(|c| c.max_characters);
    match stated {
        Some(max) if platform == Platform::Mastodon => (used, max as usize, unit),
        _ => (used, limit, unit),
    }
}

/// How a platform counts a post's length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counting {
    /// Unicode characters after NFC.
    Characters,
    /// User-perceived characters (extended grapheme clusters) after NFC.
    Graphemes,
    /// X's weighted characters: NFC, a URL 23, an emoji grapheme 2, CJK and other heavy
    /// characters 2 (the twitter-text rules).
    Weighted,
    /// Mastodon's characters: NFC, a link 23, a remote mention `@user@domain` as `@user`.
    Mastodon,
}

impl Counting {
    /// The unit, in words.
    pub const fn unit(self) -> &'static str {
        match self {
            Self::Characters | Self::Mastodon => "characters",
            Self::Graphemes => "graphemes",
            Self::Weighted => "weighted characters",
        }
    }

    /// `text` counted this way.
    pub fn count(self, text: &str) -> usize {
        match self {
            Self::Characters => text.nfc().count(),
            Self::Graphemes => text.nfc().collect::<String>().graphemes(true).count(),
            Self::Weighted => x_weighted_length(text),
            Self::Mastodon => mastodon_length(text),
        }
    }
}

/// One platform's limits on a post's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// The platform.
    pub platform: Platform,
    /// How it counts.
    pub counting: Counting,
    /// The most it takes, counted that way.
    pub max: usize,
    /// The most UTF-8 bytes it takes, when it bounds those too.
    pub max_bytes: Option<usize>,
    /// The most links it takes, when it bounds those.
    pub max_links: Option<usize>,
    /// Where the figures come from.
    pub source: &'static str,
}

/// Every platform's limits: the one table policy checks against and `docs/limits.md` quotes
/// ([`limits_markdown`]).
pub const LIMITS: [Limit; 8] = [
    Limit {
        platform: Platform::X,
        counting: Counting::Weighted,
        max: 280,
        max_bytes: None,
        max_links: None,
        source: "X's counting of characters (twitter-text)",
    },
    Limit {
        platform: Platform::Linkedin,
        counting: Counting::Characters,
        max: 3000,
        max_bytes: None,
        max_links: None,
        source: "LinkedIn's post composer",
    },
    Limit {
        platform: Platform::Instagram,
        counting: Counting::Characters,
        max: 2200,
        max_bytes: None,
        max_links: None,
        source: "Instagram's caption limit",
    },
    Limit {
        platform: Platform::Threads,
        counting: Counting::Characters,
        max: 500,
        max_bytes: None,
        max_links: Some(5),
        source: "the Threads API's post limits",
    },
    Limit {
        platform: Platform::Bluesky,
        counting: Counting::Graphemes,
        max: 300,
        max_bytes: Some(3000),
        max_links: None,
        source: "the `app.bsky.feed.post` lexicon's `text` (maxGraphemes 300, maxLength 3000)",
    },
    Limit {
        platform: Platform::Youtube,
        counting: Counting::Characters,
        max: 5000,
        max_bytes: None,
        max_links: None,
        source: "YouTube's description limit",
    },
    Limit {
        platform: Platform::Tiktok,
        counting: Counting::Characters,
        max: 2200,
        max_bytes: None,
        max_links: None,
        source: "TikTok's caption limit",
    },
    Limit {
        platform: Platform::Mastodon,
        counting: Counting::Mastodon,
        max: MASTODON_CHARACTERS,
        max_bytes: None,
        max_links: None,
        source: "Mastodon's default; a channel's `max_characters` states its instance's",
    },
];

/// `platform`'s limits.
pub fn limit(platform: Platform) -> &'static Limit {
    // LIMITS has one row per platform (a test holds it to the platform list).
    LIMITS.iter().find(|l| l.platform == platform).unwrap_or(&LIMITS[0])
}

/// The platform's measured length and its default limit.
pub fn length(platform: Platform, text: &str) -> (usize, usize, &'static str) {
    let l = limit(platform);
    (l.counting.count(text), l.max, l.counting.unit())
}

/// [`LIMITS`] as the Markdown table `docs/limits.md` quotes.
pub fn limits_markdown() -> String {
    let mut out = String::from("| platform | length | UTF-8 bytes | links | from |\n| --- | --- | --- | --- | --- |\n");
    let n = |v: usize| {
        let s = v.to_string();
        if s.len() > 3 { format!("{},{}", &s[..s.len() - 3], &s[s.len() - 3..]) } else { s }
    };
    for l in &LIMITS {
        out.push_str(&format!(
            "| {} | {} {} | {} | {} | {} |\n",
            l.platform.as_str(),
            n(l.max),
            l.counting.unit(),
            l.max_bytes.map_or("—".to_owned(), n),
            l.max_links.map_or("—".to_owned(), n),
            l.source
        ));
    }
    out
}

/// Mastodon's default status limit, in characters.
pub const MASTODON_CHARACTERS: usize = 500;

/// What a URL counts for on Mastodon, whatever its length.
pub const MASTODON_URL_WEIGHT: usize = 23;

/// Mastodon's count: characters (NFC), each link 23, and a remote mention (`@user@domain`)
/// only as `@user`.
pub fn mastodon_length(text: &str) -> usize {
    linked_length(text, MASTODON_URL_WEIGHT, mastodon_plain)
}

fn mastodon_plain(text: &str) -> usize {
    text.split_inclusive(char::is_whitespace)
        .map(|word| {
            let trimmed = word.trim_end();
            let space = word.len() - trimmed.len();
            // `@user@domain` counts as `@user`.
            let counted = match trimmed.strip_prefix('@').and_then(|r| r.split_once('@')) {
                Some((user, domain)) if !user.is_empty() && domain.contains('.') => user.chars().count() + 1,
                _ => trimmed.chars().count(),
            };
            counted + word[trimmed.len()..].chars().count().min(space)
        })
        .sum()
}
