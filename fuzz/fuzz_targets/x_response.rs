//! X's answers as the connector decodes them: a created post (`decode_created`), the
//! authenticated user (`decode_me`), a post read back or not found (`decode_tweet`), a timeline
//! page (`decode_timeline`), an error that may say duplicate (`is_duplicate`), a post's text given
//! back as it was written (`restore_text`), and the token endpoint's refresh answer, under the
//! bounds the connector reads them with.
#![no_main]

use harmonia_connectors::oauth::decode_token_answer;
use harmonia_connectors::x::{
    Lookedup, MAX_X_RESPONSE_BYTES, decode_created, decode_me, decode_timeline, decode_tweet, is_duplicate,
    restore_text,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Some(id) = decode_created(bytes) {
        assert!(bytes.len() <= MAX_X_RESPONSE_BYTES && !id.as_str().is_empty());
    }
    if let Some(me) = decode_me(bytes) {
        assert!(!me.is_empty() && me.bytes().all(|b| b.is_ascii_digit()));
    }
    let mut read = match decode_tweet(bytes) {
        Some(Lookedup::Post(tweet)) => vec![tweet],
        _ => Vec::new(),
    };
    read.extend(decode_timeline(bytes).unwrap_or_default());
    for tweet in read {
        // Restoring against any text never panics, and a text with no links X shortened reads
        // back as X holds it, unescaped.
        let restored = restore_text(&tweet.text, &tweet.links, &tweet.text);
        if tweet.links.is_empty() && !tweet.text.contains('&') {
            assert_eq!(restored, tweet.text);
        }
    }
    let _ = is_duplicate(bytes);
    let _ = decode_token_answer(bytes);
});
