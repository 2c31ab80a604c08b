//! Public trends read from a channel's platform ([`crate::Connector::trends`]), and the
//! decoders of the platforms' answers (each a pure function of the bytes, fuzzed):
//!
//! - Bluesky: `app.bsky.unspecced.getTrendingTopics` through the account's PDS, which proxies
//!   it to its AppView: `{"topics": [{"topic", "displayName"?, "description"?, "link"}], …}`.
//! - Mastodon: `GET /api/v1/trends/tags` (`Tag` entities with their daily `history`) and
//!   `GET /api/v1/trends/links` (`PreviewCard` entities).
//!
//! The sandbox and webhook bridges have none.

use serde_json::Value;

/// The longest trends answer read (1 MiB): ten preview cards with their descriptions.
pub const MAX_TRENDS_RESPONSE_BYTES: usize = 1 << 20;

/// The most trends read from one platform at a time.
pub const MAX_TRENDS: usize = 10;

/// One public trend as its platform shows it, most trending first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicTrend {
    /// The topic (a hashtag with its `#`, a link's title, a trending topic's name).
    pub topic: String,
    /// One line about it, from the platform's own words or counts.
    pub summary: String,
    /// Where to see it, when the platform gives an address.
    pub url: Option<String>,
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
}

fn clip(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

/// The first [`MAX_TRENDS`] of `items`, each read by `read`; `None` when one cannot be.
fn each(items: &[Value], read: impl Fn(&Value) -> Option<PublicTrend>) -> Option<Vec<PublicTrend>> {
    items.iter().take(MAX_TRENDS).map(read).collect()
}

/// The topics of a `getTrendingTopics` answer, in its order; a relative `link` is made a
/// `https://bsky.app` address.
pub fn decode_bluesky_trending(bytes: &[u8]) -> Option<Vec<PublicTrend>> {
    bluesky_trending(&serde_json::from_slice(bytes).ok()?)
}

/// [`decode_bluesky_trending`] over an answer already parsed.
pub(crate) fn bluesky_trending(answer: &Value) -> Option<Vec<PublicTrend>> {
    each(answer.get("topics")?.as_array()?, |t| {
        let topic = text(t, "displayName").or_else(|| text(t, "topic"))?;
        let summary = text(t, "description").unwrap_or_else(|| "Trending on Bluesky now.".to_owned());
        let url = text(t, "link").map(|l| if l.starts_with('/') { format!("https://bsky.app{l}") } else { l });
        Some(PublicTrend { topic: clip(&topic, 200), summary: clip(&summary, 1000), url })
    })
}

/// The tags of a Mastodon `GET /api/v1/trends/tags` answer, each with how many accounts used
/// it on its latest day.
pub fn decode_mastodon_tags(bytes: &[u8]) -> Option<Vec<PublicTrend>> {
    each(&serde_json::from_slice::<Vec<Value>>(bytes).ok()?, |tag| {
        let latest = tag.get("history").and_then(Value::as_array).and_then(|h| h.first());
        let count = |key: &str| latest.and_then(|d| text(d, key)).and_then(|n| n.parse::<u64>().ok());
        let summary = match (count("accounts"), count("uses")) {
            (Some(accounts), Some(uses)) => format!("Used {uses} times by {accounts} accounts on its latest day."),
            _ => "Trending on the instance now.".to_owned(),
        };
        Some(PublicTrend { topic: clip(&format!("#{}", text(tag, "name")?), 200), summary, url: text(tag, "url") })
    })
}

/// The links of a Mastodon `GET /api/v1/trends/links` answer: their title, and their
/// description (or provider) as the summary.
pub fn decode_mastodon_links(bytes: &[u8]) -> Option<Vec<PublicTrend>> {
    each(&serde_json::from_slice::<Vec<Value>>(bytes).ok()?, |link| {
        let url = text(link, "url")?;
        let topic = text(link, "title").unwrap_or_else(|| url.clone());
        let summary = text(link, "description")
            .or_else(|| text(link, "provider_name").map(|p| format!("A link from {p} shared widely now.")))
            .unwrap_or_else(|| "A link shared widely now.".to_owned());
        Some(PublicTrend { topic: clip(&topic, 200), summary: clip(&summary, 1000), url: Some(url) })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bluesky_topics_keep_their_order_and_get_a_full_address() {
        let answer = br#"{"topics":[{"topic":"climate","displayName":"Climate week","description":"The summit","link":"/profile/x/feed/y"},{"topic":"oss","link":"https://bsky.app/search?q=oss"}],"suggested":[]}"#;
        let found = decode_bluesky_trending(answer).expect("decodes");
        assert_eq!(found[0].topic, "Climate week");
        assert_eq!(found[0].url.as_deref(), Some("https://bsky.app/profile/x/feed/y"));
        assert_eq!(found[1].summary, "Trending on Bluesky now.");
        assert_eq!(decode_bluesky_trending(br#"{"topics":[{"link":"/x"}]}"#), None, "a topic without a name");
    }

    #[test]
    fn mastodon_tags_and_links_say_what_the_instance_counted() {
        let tags = br#"[{"name":"rust","url":"https://m.example/tags/rust","history":[{"day":"1","uses":"40","accounts":"12"}]}]"#;
        let found = decode_mastodon_tags(tags).expect("tags");
        assert_eq!(found[0].topic, "#rust");
        assert_eq!(found[0].summary, "Used 40 times by 12 accounts on its latest day.");
        let links = br#"[{"url":"https://news.example/a","title":"A story","description":"","provider_name":"News"}]"#;
        let found = decode_mastodon_links(links).expect("links");
        assert_eq!(
            (found[0].topic.as_str(), found[0].summary.as_str()),
            ("A story", "A link from News shared widely now.")
        );
        assert_eq!(decode_mastodon_links(b"{}"), None);
    }
}
