//! LinkedIn's answers as the connector decodes them: a post read back (`decode_post`), the
//! author finder's page (`decode_listing`), an error that may say duplicate (`is_duplicate`,
//! `refusal`), its little text turned back into text (`plain_text`), and the token endpoint's
//! refresh answer (`decode_token_answer`), under the bounds the connector reads them with.
#![no_main]

use harmonia_connectors::Refusal;
use harmonia_connectors::linkedin::{
    MAX_LINKEDIN_RESPONSE_BYTES, decode_listing, decode_post, is_duplicate, little_text, plain_text, refusal,
};
use harmonia_connectors::oauth::{MAX_TOKEN_RESPONSE_BYTES, decode_token_answer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Some(post) = decode_post(bytes) {
        assert!(bytes.len() <= MAX_LINKEDIN_RESPONSE_BYTES && !post.urn.as_str().is_empty());
    }
    if let Some(posts) = decode_listing(bytes) {
        assert!(posts.iter().all(|p| !p.urn.as_str().is_empty()));
    }
    let now = chrono::DateTime::UNIX_EPOCH;
    match refusal(422, bytes, None, now) {
        Ok(Refusal::Duplicate) => assert!(is_duplicate(bytes)),
        Ok(Refusal::Invalid) => assert!(!is_duplicate(bytes)),
        other => panic!("a 422 is a duplicate or invalid, never {other:?}"),
    }
    if let Some((access, refresh, lives)) = decode_token_answer(bytes) {
        assert!(bytes.len() <= MAX_TOKEN_RESPONSE_BYTES && !access.is_empty());
        assert!(refresh.is_none_or(|r| !r.is_empty()) && lives.is_none_or(|s| s > 0));
    }
    // Any commentary reads as text, and any text survives the escaping.
    if let Ok(text) = std::str::from_utf8(bytes) {
        let _ = plain_text(text);
        assert_eq!(plain_text(&little_text(text)), text);
    }
});
