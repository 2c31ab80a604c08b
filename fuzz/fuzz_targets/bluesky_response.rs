//! A PDS's XRPC answers as the Bluesky connector reads them (a created record, a record read
//! back and the post it replies to, the AppView's post views and trending topics it proxies), and the facets it would
//! compute for the text read back: every facet must name a whole, in-bounds span of that text.
#![no_main]

use harmonia_connectors::bluesky::{MAX_XRPC_RESPONSE_BYTES, created_record, facets, read_record, reply_parent};
use harmonia_connectors::engagement::{Measured, decode_bluesky_posts};
use harmonia_connectors::trends::{MAX_TRENDS, decode_bluesky_trending};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if bytes.len() > MAX_XRPC_RESPONSE_BYTES {
        return;
    }
    // The post views of getPosts: a post not listed is gone, never counted as zero.
    let asked = "at://did:plc:a/app.bsky.feed.post/3k";
    if let Some(Measured::Counts(_)) = decode_bluesky_posts(bytes, asked) {
        let answer: serde_json::Value = serde_json::from_slice(bytes).expect("decoded, so JSON");
        assert!(answer["posts"].as_array().is_some_and(|p| p.iter().any(|v| v["uri"] == asked)));
    }
    if let Some(trends) = decode_bluesky_trending(bytes) {
        assert!(trends.len() <= MAX_TRENDS);
        assert!(trends.iter().all(|t| !t.topic.is_empty() && t.topic.chars().count() <= 200));
    }
    let Ok(answer) = serde_json::from_slice::<serde_json::Value>(bytes) else { return };
    // A reply's parent is a record key of a post record's URI.
    if let Some(parent) = reply_parent(&answer) {
        let uri = answer.pointer("/value/reply/parent/uri").and_then(|u| u.as_str()).expect("read, so there");
        assert!(uri.ends_with(&format!("/app.bsky.feed.post/{parent}")));
    }
    if let Some(record) = created_record(&answer) {
        assert!(record.uri.starts_with("at://") && !record.cid.is_empty());
    }
    if let Some((_, text)) = read_record(&answer) {
        let resolved = [("a.test".to_owned(), "did:plc:a".to_owned())];
        for facet in facets(&text, &resolved) {
            let at = |k: &str| facet["index"][k].as_u64().and_then(|n| usize::try_from(n).ok()).unwrap_or(usize::MAX);
            let (start, end) = (at("byteStart"), at("byteEnd"));
            assert!(start < end && end <= text.len(), "{start}..{end} of {}", text.len());
            assert!(text.is_char_boundary(start) && text.is_char_boundary(end));
        }
    }
});
