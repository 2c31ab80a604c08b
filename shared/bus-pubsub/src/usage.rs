//! What this process sends to and receives from Pub/Sub, on the global meter (exported when
//! the process exports metrics; nothing is recorded otherwise):
//!
//! - `harmonia.pubsub.messages` (`direction` = `published` or `delivered`; `topic` when
//!   published, `subscription` when delivered): one per message published, and one per push
//!   request received, redeliveries included;
//! - `harmonia.pubsub.bytes` (`direction`): the size of those messages (data, attribute names
//!   and values), before Pub/Sub's minimum billable size per request is applied.

use std::collections::BTreeMap;

use opentelemetry::KeyValue;
use opentelemetry::metrics::Counter;

/// The counters, built on first use: after the process installed its meter provider, which it
/// does before it publishes or serves anything.
pub(crate) fn usage() -> &'static Usage {
    static USAGE: std::sync::OnceLock<Usage> = std::sync::OnceLock::new();
    USAGE.get_or_init(Usage::new)
}

/// The counters.
pub(crate) struct Usage {
    messages: Counter<u64>,
    bytes: Counter<u64>,
}

impl Usage {
    fn new() -> Self {
        let meter = opentelemetry::global::meter("harmonia");
        Self {
            messages: meter
                .u64_counter("harmonia.pubsub.messages")
                .with_description("Pub/Sub messages published, and push deliveries received")
                .build(),
            bytes: meter
                .u64_counter("harmonia.pubsub.bytes")
                .with_unit("By")
                .with_description("Size of the Pub/Sub messages published and delivered")
                .build(),
        }
    }

    /// A message of `size` bytes ([`size`]) published to `topic`.
    pub(crate) fn published(&self, topic: &str, size: usize) {
        self.record("published", KeyValue::new("topic", topic.to_owned()), size);
    }

    /// A push delivery of `subscription`'s, of `size` bytes.
    pub(crate) fn delivered(&self, subscription: &str, size: usize) {
        self.record("delivered", KeyValue::new("subscription", subscription.to_owned()), size);
    }

    fn record(&self, direction: &'static str, name: KeyValue, size: usize) {
        let direction = KeyValue::new("direction", direction);
        self.messages.add(1, &[direction.clone(), name]);
        self.bytes.add(u64::try_from(size).unwrap_or(u64::MAX), &[direction]);
    }
}

/// A message's size as counted here: its data and its attribute names and values.
pub(crate) fn size(data: &[u8], attributes: &BTreeMap<String, String>) -> usize {
    data.len() + attributes.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>()
}
