//! The Pub/Sub push body as a stage function's push endpoint decodes it (`push::decode`),
//! attributes and delivery attempt included. What is decoded can be stored: its publication
//! time is written and read back as every stored time is.
#![no_main]

use harmonia_bus_pubsub::push;
use harmonia_contracts::time;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    if let Ok(delivery) = push::decode(bytes) {
        // Pub/Sub counts attempts from 1; the decoder drops anything else.
        assert!(delivery.attempt.is_none_or(|n| n >= 1));
        assert_eq!(time::parse(&time::format(&delivery.published_at)).ok(), Some(delivery.published_at));
    }
});
