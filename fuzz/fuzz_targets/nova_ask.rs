//! `POST /v1/ask`: Nova's body, and the question check that runs before any model call.
#![no_main]

use harmonia_nova::{AskBody, MAX_QUESTION_CHARS, checked_question};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(body) = harmonia_http::body::decode::<AskBody>(bytes)
        && let Ok(question) = checked_question(body.question())
    {
        assert!(!question.is_empty() && question.chars().count() <= MAX_QUESTION_CHARS);
    }
});
