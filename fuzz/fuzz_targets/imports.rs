//! The operator's import files: post metrics and calendar CSV, trend signals as CSV or JSON
//! (`harmonia_pipeline::imports::*::parse`, what each `import` runs before storing anything).
//! The first byte picks the file kind, so one corpus holds all four.
#![no_main]

use harmonia_pipeline::imports::{Format, calendar, metrics, signals};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Some((kind, rest)) = bytes.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    match kind % 4 {
        0 => drop(metrics::parse(text)),
        1 => drop(calendar::parse(text)),
        2 => drop(signals::parse(text, Format::Csv)),
        _ => drop(signals::parse(text, Format::Json)),
    }
});
