//! `StageEvent::decode` for two payload types (an id payload and a two-field payload): a
//! decoded event re-encodes and decodes to itself.
#![no_main]

use harmonia_contracts::event::{DraftWritten, EventPayload, SourceIngested, StageEvent};
use libfuzzer_sys::fuzz_target;

fn round_trip<P: EventPayload + PartialEq>(bytes: &[u8]) {
    if let Ok(event) = StageEvent::<P>::decode(bytes) {
        let encoded = event.encode().expect("a decoded event encodes");
        let again = StageEvent::<P>::decode(&encoded).expect("an encoded event decodes");
        assert_eq!(again, event);
    }
}

fuzz_target!(|bytes: &[u8]| {
    round_trip::<SourceIngested>(bytes);
    round_trip::<DraftWritten>(bytes);
});
