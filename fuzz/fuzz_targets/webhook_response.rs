//! A webhook bridge's answer to a publication or a read-back, as the connector decodes it
//! (`connector::decode_webhook_post`), under the bound the connector reads it with.
#![no_main]

use harmonia_connectors::{MAX_WEBHOOK_RESPONSE_BYTES, decode_webhook_post};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Some((post, body)) = decode_webhook_post(bytes) {
        // What is believed is a post id and a text no longer than the answer itself.
        assert!(bytes.len() <= MAX_WEBHOOK_RESPONSE_BYTES);
        assert!(!post.as_str().is_empty() && body.len() <= bytes.len());
    }
});
