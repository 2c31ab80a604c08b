//! Nova's tool envelope (`ToolEnvelope::parse`): a parsed envelope serialises to text that
//! parses to the same envelope (its invariants survive the round trip).
#![no_main]

use harmonia_contracts::tool::ToolEnvelope;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    if let Ok(envelope) = ToolEnvelope::parse(text) {
        let written = serde_json::to_string(&envelope).expect("an envelope serialises");
        assert_eq!(ToolEnvelope::parse(&written).ok(), Some(envelope));
    }
});
