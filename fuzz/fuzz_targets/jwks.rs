//! The ID-token signing key set as the functions decode a fetched body
//! (`harmonia_auth::decode_key_set`), under the same size bound the fetch holds.
#![no_main]

use harmonia_auth::{MAX_KEY_SET_BYTES, decode_key_set};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if bytes.len() <= MAX_KEY_SET_BYTES {
        let _ = decode_key_set(bytes);
    }
});
