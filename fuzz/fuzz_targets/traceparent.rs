//! The W3C `traceparent` header and the trace and span ids: what parses prints back as the
//! same text, since only the canonical lowercase form is accepted.
#![no_main]

use harmonia_contracts::trace::{SpanId, TraceId, TraceParent};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    if let Ok(parent) = text.parse::<TraceParent>() {
        assert_eq!(parent.to_string(), text);
        assert_eq!(parent.trace().to_string(), parent.trace_id());
    }
    if let Ok(id) = text.parse::<TraceId>() {
        assert_eq!(id.to_string(), text);
    }
    if let Ok(id) = text.parse::<SpanId>() {
        assert_eq!(id.to_string(), text);
    }
});
