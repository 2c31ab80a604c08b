//! An OpenAI-compatible chat completions answer as the client decodes it
//! (`openai::decode_response`), and the strict-mode null removal the client applies to a
//! structured answer (`openai::drop_absent`, against a role's output schema).
#![no_main]

use harmonia_agents::model::Part;
use harmonia_agents::openai;
use harmonia_contracts::Role;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(response) = openai::decode_response(bytes) else { return };
    let role = Role::ALL[bytes.len() % Role::ALL.len()];
    let schema = (harmonia_agents::roles::spec(role).output_schema)();
    for part in response.parts {
        if let Part::Text(text) = part
            && let Ok(mut answer) = serde_json::from_str(&text)
        {
            openai::drop_absent(&mut answer, &schema);
        }
    }
});
