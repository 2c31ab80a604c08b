//! A webhook bridge's answer to a publication, a read-back or a metrics read, as the connector
//! decodes it (`connector::decode_webhook_post`, `decode_webhook_engagement`), under the bound
//! the connector reads it with.
#![no_main]

use harmonia_connectors::{MAX_WEBHOOK_RESPONSE_BYTES, decode_webhook_post};
use harmonia_connectors::engagement::decode_webhook_engagement;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Some((post, body)) = decode_webhook_post(bytes) {
        // What is believed is a post id and a text no longer than the answer itself.
        assert!(bytes.len() <= MAX_WEBHOOK_RESPONSE_BYTES);
        assert!(!post.as_str().is_empty() && body.len() <= bytes.len());
    }
    if let Some(counts) = decode_webhook_engagement(bytes) {
        // The three counts a bridge must name are the answer's own.
        let answer: serde_json::Value = serde_json::from_slice(bytes).expect("decoded, so JSON");
        assert_eq!(answer["likes"].as_u64(), Some(counts.likes));
    }
});
