//! A Mastodon instance's answers as the connector decodes them: a created status
//! (`decode_status`), a status's source on read-back (`decode_source`) and the instance's
//! status limit (`decode_max_characters`), under the bound the connector reads them with.
#![no_main]

use harmonia_connectors::mastodon::{
    MAX_MASTODON_RESPONSE_BYTES, decode_max_characters, decode_source, decode_status,
};
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
    if let Some(max) = decode_max_characters(bytes) {
        assert!(max > 0 && bytes.len() <= MAX_MASTODON_RESPONSE_BYTES);
    }
});
