//! A Mastodon instance's answers as the connector decodes them: a created status
//! (`decode_status`), a status's source on read-back (`decode_source`) and what it replies to
//! (`decode_in_reply_to`), the instance's status limit (`decode_max_characters`), a status's
//! counts (`decode_mastodon_counts`) and the trending tags and links, under the bound the
//! connector reads them with.
#![no_main]

use harmonia_connectors::mastodon::{
    MAX_MASTODON_RESPONSE_BYTES, decode_in_reply_to, decode_max_characters, decode_source, decode_status,
};
use harmonia_connectors::engagement::decode_mastodon_counts;
use harmonia_connectors::trends::{MAX_TRENDS, decode_mastodon_links, decode_mastodon_tags};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Some((post, url)) = decode_status(bytes) {
        // What is believed is a post id and, at most, an http(s) URL taken from the answer.
        assert!(bytes.len() <= MAX_MASTODON_RESPONSE_BYTES && !post.as_str().is_empty());
        assert!(url.is_none_or(|u| u.starts_with("http") && u.len() <= bytes.len()));
    }
    if let Some((post, text)) = decode_source(bytes) {
        assert!(!post.as_str().is_empty() && text.len() <= bytes.len());
    }
    if let Some(Some(parent)) = decode_in_reply_to(bytes) {
        let status: serde_json::Value = serde_json::from_slice(bytes).expect("decoded, so JSON");
        assert_eq!(status["in_reply_to_id"].as_str(), Some(parent.as_str()));
    }
    if let Some(max) = decode_max_characters(bytes) {
        assert!(max > 0 && bytes.len() <= MAX_MASTODON_RESPONSE_BYTES);
    }
    if let Some(counts) = decode_mastodon_counts(bytes) {
        let status: serde_json::Value = serde_json::from_slice(bytes).expect("decoded, so JSON");
        assert_eq!(status["replies_count"].as_u64(), Some(counts.replies));
    }
    for trends in [decode_mastodon_tags(bytes), decode_mastodon_links(bytes)].into_iter().flatten() {
        assert!(trends.len() <= MAX_TRENDS && trends.iter().all(|t| !t.topic.is_empty()));
    }
});
