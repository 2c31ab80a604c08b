//! The operator API's JSON request bodies, decoded as the routes decode them
//! (`harmonia_http::body::decode`, the same decoding as the `JsonBody` extractor): a decision
//! (approve, reject, request changes) and an edit.
#![no_main]

use harmonia_operator::{DecisionBody, EditBody};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = harmonia_http::body::decode::<DecisionBody>(bytes);
    let _ = harmonia_http::body::decode::<EditBody>(bytes);
});
