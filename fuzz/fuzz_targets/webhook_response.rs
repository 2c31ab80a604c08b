//! A webhook bridge's answer to a publication, a read-back or a metrics read, as the connector
//! decodes it (`connector::decode_webhook_post`, `decode_webhook_engagement`), under the bound
//! the connector reads it with.
#![no_main]

use harmonia_connectors::{MAX_WEBHOOK_RESPONSE_BYTES, decode_webhook_post};
use harmonia_connectors::engagement::decode_webhook_engagement;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Some(held) = decode_webhook_post(bytes) {
        // What is believed is a post id, a text no longer than the answer itself, and the id
        // of the post it replies to when it names one.
        assert!(bytes.len() <= MAX_WEBHOOK_RESPONSE_BYTES);
        assert!(!held.post.as_str().is_empty() && held.body.len() <= bytes.len());
        assert!(held.replying_to.is_none_or(|parent| !parent.as_str().is_empty()));
    }
    if let Some(counts) = decode_webhook_engagement(bytes) {
        // The three counts a bridge must name are the answer's own.
        let answer: serde_json::Value = serde_json::from_slice(bytes).expect("decoded, so JSON");
        assert_eq!(answer["likes"].as_u64(), Some(counts.likes));
    }
});
