//! The detectors ingest runs on every part of a source (instruction-like text in six
//! languages, encoded payloads it decodes, markup, disguised links), the authority check every
//! specialist answer's text goes through, and the speech a source's segments make, with a
//! quote looked up in it: any text is read, never a panic, a hang or an unbounded allocation.
#![no_main]

use harmonia_contracts::domain::{Speech, TranscriptSegment, untrusted_spans};
use harmonia_contracts::untrusted;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let text = String::from_utf8_lossy(bytes);
    let _ = untrusted::score(&text);
    let _ = untrusted::authority::claim(&text);
    let _ = untrusted::encoded(&text);
    let _ = untrusted::markup(&text);
    let _ = untrusted::disguised_link(&text);
    // The text as cues, split at its line breaks, and its middle third as a quote.
    let segments: Vec<TranscriptSegment> = text
        .split('\n')
        .filter(|l| !l.trim().is_empty())
        .zip(0u64..)
        .map(|(line, n)| TranscriptSegment { start_ms: n * 10, end_ms: n * 10 + 5, speaker: None, text: line.to_owned() })
        .collect();
    let _ = untrusted_spans("fuzz", &segments, &[]);
    let speech = Speech::of(&segments);
    let chars: Vec<char> = text.chars().collect();
    let quote: String = chars[chars.len() / 3..2 * chars.len() / 3].iter().collect();
    let _ = speech.find(&quote);
});
