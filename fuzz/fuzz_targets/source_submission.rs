//! `POST /v1/sources` (ingest and the operator API): the JSON body, then the source it carries
//! parsed in its declared format, exactly as the `submit` handler does before storing anything.
#![no_main]

use harmonia_ingest::{NewSource, source_input};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(body) = harmonia_http::body::decode::<NewSource>(bytes) {
        let _ = source_input(body);
    }
});
