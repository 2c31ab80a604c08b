//! Reading a published post's engagement back from its platform: what the dispatcher's
//! engagement snapshots ask each connector ([`crate::Connector::engagement`]), and the decoders
//! of the platforms' answers (each a pure function of the bytes, fuzzed).
//!
//! - Bluesky: `app.bsky.feed.getPosts?uris=…` through the account's PDS, which proxies
//!   `app.bsky.*` to its AppView: a post view's `likeCount`, `repostCount`, `replyCount` and
//!   `quoteCount`. A post the AppView no longer lists is gone.
//! - Mastodon: `GET /api/v1/statuses/{id}`: `favourites_count`, `reblogs_count`,
//!   `replies_count` (and `quotes_count` where the instance reports it); a 404 is gone.
//! - X: `GET /2/tweets/{id}`'s `public_metrics` (`like_count`, `retweet_count`,
//!   `reply_count`, `quote_count`); a post X does not hold is gone ([`crate::x`]).
//! - LinkedIn offers none here (the default).
//! - Webhook bridges: `GET <url>/<idempotency key>/metrics`, answering
//!   `{"likes": n, "reposts": n, "replies": n, "quotes": n}` (`quotes` optional). A bridge that
//!   answers 404, 405 or 501 there offers no metrics.
//! - The sandbox: deterministic mock counts that grow with the post's age.

use serde::Deserialize;
use serde_json::Value;

/// The longest engagement answer read (256 KiB): one post's view is a few kilobytes.
pub const MAX_ENGAGEMENT_RESPONSE_BYTES: usize = 256 << 10;

/// A post's engagement as its platform counts it. A count the platform does not report is
/// `None`, never zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Engagement {
    /// Likes (favourites).
    pub likes: u64,
    /// Reposts (reblogs, boosts).
    pub reposts: u64,
    /// Replies.
    pub replies: u64,
    /// Quote posts, where the platform reports them.
    #[serde(default)]
    pub quotes: Option<u64>,
}

/// What reading a post's engagement found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measured {
    /// The platform's counts.
    Counts(Engagement),
    /// This platform (or bridge) offers no engagement to read.
    NotOffered,
    /// The post is no longer there (deleted, or taken down).
    Gone,
}

/// A published post whose engagement is asked for: where, under which key, what the platform
/// named it, and how long after it went out.
#[derive(Clone, Copy, Debug)]
pub struct Asked<'a> {
    /// The post's workspace.
    pub workspace: &'a harmonia_contracts::ids::WorkspaceId,
    /// The publication's idempotency key.
    pub idempotency_key: &'a str,
    /// The post as the platform named it (its id; its record on the AT Protocol).
    pub posted: &'a crate::Posted,
    /// How long after it went out.
    pub age: chrono::Duration,
}

/// What a read of a post's engagement came to.
pub type Measurement = Result<Measured, MeasureFailed>;

/// The engagement could not be read this time; the next tick tries again.
#[derive(Debug, thiserror::Error)]
#[error("the post's engagement could not be read from the platform")]
pub struct MeasureFailed;

fn count(view: &Value, key: &str) -> Option<u64> {
    match view.get(key) {
        None | Some(Value::Null) => Some(0),
        Some(v) => v.as_u64(),
    }
}

/// The engagement of the post `uri` in an `app.bsky.feed.getPosts` answer (`{"posts": [post
/// view…]}`): `Gone` when it is not listed; `None` when the answer is not that shape. A count
/// the view leaves out is zero (the lexicon makes them optional), except quotes, which stay
/// unknown.
pub fn decode_bluesky_posts(bytes: &[u8], uri: &str) -> Option<Measured> {
    bluesky_posts(&serde_json::from_slice(bytes).ok()?, uri)
}

/// [`decode_bluesky_posts`] over an answer already parsed.
pub(crate) fn bluesky_posts(answer: &Value, uri: &str) -> Option<Measured> {
    let posts = answer.get("posts")?.as_array()?;
    let Some(view) = posts.iter().find(|p| p.get("uri").and_then(Value::as_str) == Some(uri)) else {
        return Some(Measured::Gone);
    };
    let quotes = match view.get("quoteCount") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64()?),
    };
    Some(Measured::Counts(Engagement {
        likes: count(view, "likeCount")?,
        reposts: count(view, "repostCount")?,
        replies: count(view, "replyCount")?,
        quotes,
    }))
}

/// The engagement in a Mastodon `Status` entity: `favourites_count`, `reblogs_count` and
/// `replies_count` (all required), and `quotes_count` where the instance reports one.
pub fn decode_mastodon_counts(bytes: &[u8]) -> Option<Engagement> {
    let status: Value = serde_json::from_slice(bytes).ok()?;
    let required = |key: &str| status.get(key)?.as_u64();
    Some(Engagement {
        likes: required("favourites_count")?,
        reposts: required("reblogs_count")?,
        replies: required("replies_count")?,
        quotes: status.get("quotes_count").and_then(Value::as_u64),
    })
}

/// A webhook bridge's metrics answer: the object `{"likes", "reposts", "replies", "quotes"?}`
/// (never the same numbers as an array, which a derived decoder would take).
pub fn decode_webhook_engagement(bytes: &[u8]) -> Option<Engagement> {
    let answer: Value = serde_json::from_slice(bytes).ok()?;
    if !answer.is_object() {
        return None;
    }
    serde_json::from_value(answer).ok()
}

/// The sandbox's mock engagement for the post under `idempotency_key`, `age` after it went
/// out: a base drawn from the key, growing with the logarithm of the age in hours, so the same
/// post at the same age always has the same counts and later snapshots never fewer.
pub fn sandbox_engagement(idempotency_key: &str, age: chrono::Duration) -> Engagement {
    use sha2::Digest;
    let seed = sha2::Sha256::digest(idempotency_key.as_bytes());
    let hours = u64::try_from(age.num_hours()).unwrap_or(0).min(24 * 90);
    let growth = 1 + u64::from((hours + 1).ilog2());
    let base = |byte: u8, span: u8| u64::from(byte % span);
    Engagement {
        likes: (base(seed[0], 12) + 1) * growth,
        reposts: base(seed[1], 4) * growth,
        replies: base(seed[2], 3) * growth,
        quotes: Some(base(seed[3], 2) * growth / 2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bluesky_post_view_gives_its_counts_and_an_absent_post_is_gone() {
        let answer = br#"{"posts":[{"uri":"at://did:plc:a/app.bsky.feed.post/3k","cid":"bafy","likeCount":7,"repostCount":2,"replyCount":1,"quoteCount":3}]}"#;
        let found = decode_bluesky_posts(answer, "at://did:plc:a/app.bsky.feed.post/3k");
        assert_eq!(found, Some(Measured::Counts(Engagement { likes: 7, reposts: 2, replies: 1, quotes: Some(3) })));
        assert_eq!(decode_bluesky_posts(answer, "at://did:plc:a/app.bsky.feed.post/other"), Some(Measured::Gone));
        let sparse = br#"{"posts":[{"uri":"at://x/app.bsky.feed.post/1","likeCount":4}]}"#;
        assert_eq!(
            decode_bluesky_posts(sparse, "at://x/app.bsky.feed.post/1"),
            Some(Measured::Counts(Engagement { likes: 4, reposts: 0, replies: 0, quotes: None }))
        );
        assert_eq!(decode_bluesky_posts(br#"{"posts":[{"uri":"u","likeCount":-1}]}"#, "u"), None);
        assert_eq!(decode_bluesky_posts(b"[]", "u"), None);
    }

    #[test]
    fn a_mastodon_status_gives_favourites_reblogs_and_replies() {
        let status = br#"{"id":"1","favourites_count":5,"reblogs_count":1,"replies_count":0}"#;
        assert_eq!(decode_mastodon_counts(status), Some(Engagement { likes: 5, reposts: 1, replies: 0, quotes: None }));
        assert_eq!(decode_mastodon_counts(br#"{"id":"1","favourites_count":5}"#), None);
    }

    #[test]
    fn a_bridge_answer_must_name_its_three_counts() {
        assert_eq!(
            decode_webhook_engagement(br#"{"likes":1,"reposts":2,"replies":3}"#),
            Some(Engagement { likes: 1, reposts: 2, replies: 3, quotes: None })
        );
        assert_eq!(decode_webhook_engagement(br#"{"likes":1}"#), None);
        // Found by fuzzing: the three numbers as an array are not an answer.
        assert_eq!(decode_webhook_engagement(b"[8,0,0]"), None);
        assert_eq!(decode_webhook_engagement(br#"{"likes":1,"reposts":2,"replies":3,"views":9}"#), None);
    }

    #[test]
    fn sandbox_counts_are_deterministic_and_never_shrink_with_age() {
        let at = |h| sandbox_engagement("ws:draft:1", chrono::Duration::hours(h));
        assert_eq!(at(1), at(1));
        let (early, day, week) = (at(1), at(24), at(168));
        assert!(early.likes >= 1);
        assert!(early.likes <= day.likes && day.likes <= week.likes);
        assert!(early.reposts <= day.reposts && day.replies <= week.replies);
        assert_ne!(
            sandbox_engagement("ws:draft:2", chrono::Duration::hours(24)),
            Engagement { likes: 0, reposts: 0, replies: 0, quotes: None }
        );
    }
}
