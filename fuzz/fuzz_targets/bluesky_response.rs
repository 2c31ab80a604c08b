//! A PDS's XRPC answers as the Bluesky connector reads them (a created record, a record read
//! back), and the facets it would compute for the text read back: every facet must name a
//! whole, in-bounds span of that text.
#![no_main]

use harmonia_connectors::bluesky::{MAX_XRPC_RESPONSE_BYTES, created_record, facets, read_record};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if bytes.len() > MAX_XRPC_RESPONSE_BYTES {
        return;
    }
    let Ok(answer) = serde_json::from_slice::<serde_json::Value>(bytes) else { return };
    if let Some(record) = created_record(&answer) {
        assert!(record.uri.starts_with("at://") && !record.cid.is_empty());
    }
    if let Some((_, text)) = read_record(&answer) {
        let resolved = [("a.test".to_owned(), "did:plc:a".to_owned())];
        for facet in facets(&text, &resolved) {
            let at = |k: &str| facet["index"][k].as_u64().and_then(|n| usize::try_from(n).ok()).unwrap_or(usize::MAX);
            let (start, end) = (at("byteStart"), at("byteEnd"));
            assert!(start < end && end <= text.len(), "{start}..{end} of {}", text.len());
            assert!(text.is_char_boundary(start) && text.is_char_boundary(end));
        }
    }
});
