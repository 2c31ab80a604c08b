//! `formats::parse` as `ingest` calls it, for the webvtt source format: any bytes are a
//! source or a typed refusal, never a panic, a hang or an unbounded allocation.
#![no_main]

use harmonia_pipeline::formats::{self, Format};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = formats::parse(bytes, Format::WebVtt, "fuzz", "en");
});
