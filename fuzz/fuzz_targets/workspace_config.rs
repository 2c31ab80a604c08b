//! A workspace configuration as `PUT /v1/workspace` and `harmonia workspace` read it: TOML text
//! (`WorkspaceConfig::from_toml`), or its keys as a JSON body (`WorkspaceConfig::from_value`).
#![no_main]

use harmonia_contracts::domain::WorkspaceConfig;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    let _ = WorkspaceConfig::from_toml(text);
    if let Ok(value) = serde_json::from_str(text) {
        let _ = WorkspaceConfig::from_value(&value);
    }
});
