//! What the functions read of a bearer token before any signature check: the operator
//! credential's text form (`Credential::parse`), and a Google ID token's shape and header
//! (`GoogleIdTokens::looks_like`, `GoogleIdTokens::key_id`).
#![no_main]

use harmonia_auth::{Credential, GoogleIdTokens};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(token) = std::str::from_utf8(bytes) else { return };
    if let Some(credential) = Credential::parse(token) {
        // Only the canonical text is a credential, so it is its own exposed form.
        assert_eq!(credential.expose(), token);
    }
    if GoogleIdTokens::looks_like(token) {
        let _ = GoogleIdTokens::key_id(token);
    }
});
