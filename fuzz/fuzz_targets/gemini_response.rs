//! Gemini's `generateContent` response as the client decodes it (`gemini::decode_response`).
//! Gemini is the only model provider with a wire format (the offline and scripted models are
//! in-process).
#![no_main]

use harmonia_agents::gemini;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = gemini::decode_response(bytes);
});
