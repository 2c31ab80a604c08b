//! The operator's import files: post metrics and calendar CSV, trend signals as CSV or JSON
//! (`harmonia_pipeline::imports::*::parse`, what each `import` runs before storing anything).
//! The first byte picks the file kind, so one corpus holds all four. Every accepted record
//! is stored as JSON, so it must read back as itself.
#![no_main]

use harmonia_pipeline::imports::{Format, calendar, metrics, signals};
use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;

fn stored_and_read_back<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(records: Vec<T>) {
    for record in records {
        let stored = serde_json::to_value(&record).expect("a record serialises");
        assert_eq!(serde_json::from_value::<T>(stored).ok(), Some(record));
    }
}

fuzz_target!(|bytes: &[u8]| {
    let Some((kind, rest)) = bytes.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    match kind % 4 {
        0 => metrics::parse(text).map(stored_and_read_back).unwrap_or_default(),
        1 => calendar::parse(text).map(stored_and_read_back).unwrap_or_default(),
        2 => signals::parse(text, Format::Csv).map(stored_and_read_back).unwrap_or_default(),
        _ => signals::parse(text, Format::Json).map(stored_and_read_back).unwrap_or_default(),
    }
});
