//! The event-bus interface of Harmonia, with Pub/Sub semantics.
//!
//! A [`Bus`] publishes an [`OutboundMessage`] (bytes plus string attributes) to a topic; every
//! subscription of the topic receives its own copy. Deliveries reach a [`Handler`], which
//! answers [`Outcome::Ack`] (done) or [`Outcome::Nack`] (redeliver later). Delivery is
//! at-least-once and unordered: each delivery carries its attempt number (from 1), and after
//! a subscription's `max_attempts` the message moves to the subscription's dead-letter topic
//! with its data and attributes intact. Stage events travel as [`OutboundMessage::event`],
//! which copies the envelope's routing fields into attributes.
//! Handlers must not depend on the attempt number: it is metadata, and may be unknown.
//!
//! Backends: the durable local queue (`harmonia-bus-local`) and Google Cloud Pub/Sub
//! (`harmonia-bus-pubsub`). `conformance` (feature `conformance`) is the suite both pass.

#[cfg(feature = "conformance")]
pub mod conformance;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use harmonia_contracts::Code;
use harmonia_contracts::event::{EventPayload, StageEvent};

/// Attribute set on dead-lettered messages naming the subscription they came from
/// (the name Pub/Sub uses).
pub const DEAD_LETTER_SOURCE_ATTRIBUTE: &str = "CloudPubSubDeadLetterSourceSubscription";

/// A Pub/Sub resource name (topic or subscription id): 3–255 characters of
/// `[A-Za-z0-9-_.~+%]`, starting with a letter, not starting with `goog`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name(String);

impl FromStr for Name {
    type Err = Error;
    fn from_str(raw: &str) -> Result<Self, Error> {
        let ok = (3..=255).contains(&raw.len())
            && raw.starts_with(|c: char| c.is_ascii_alphabetic())
            && !raw.to_ascii_lowercase().starts_with("goog")
            && raw.chars().all(|c| c.is_ascii_alphanumeric() || "-_.~+%".contains(c));
        if ok { Ok(Self(raw.to_owned())) } else { Err(Error::InvalidName) }
    }
}

impl Name {
    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A message to publish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutboundMessage {
    /// Destination topic.
    pub topic: Name,
    /// Payload bytes.
    pub data: Vec<u8>,
    /// String attributes.
    pub attributes: BTreeMap<String, String>,
}

impl OutboundMessage {
    /// The message carrying a stage event on `P::TOPIC` (prefixed by `topic_prefix`), with
    /// the envelope's routing fields copied into attributes.
    pub fn event<P: EventPayload>(topic_prefix: &str, event: &StageEvent<P>) -> Result<Self, Error> {
        let topic: Name = format!("{topic_prefix}{}", P::TOPIC).parse()?;
        let mut attributes = BTreeMap::from([
            ("event_id".to_owned(), event.event_id.to_string()),
            ("topic".to_owned(), P::TOPIC.to_owned()),
            ("workspace".to_owned(), event.workspace.to_string()),
            ("job".to_owned(), event.job.to_string()),
            ("stage".to_owned(), event.stage.to_string()),
            ("pass".to_owned(), event.pass.get().to_string()),
            ("idempotency_key".to_owned(), event.idempotency_key.to_string()),
            ("traceparent".to_owned(), event.traceparent.to_string()),
        ]);
        // Only an operator round is marked, so the original round's attributes keep their shape.
        if !event.round.is_original() {
            attributes.insert("round".to_owned(), event.round.get().to_string());
        }
        let data = event.encode().map_err(|_| Error::Unencodable)?;
        Ok(Self { topic, data, attributes })
    }
}

/// One delivery of a message to one subscription.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// The message id (the same for every subscription's copy).
    pub message_id: String,
    /// The subscription delivering it.
    pub subscription: Name,
    /// Payload bytes.
    pub data: Vec<u8>,
    /// String attributes.
    pub attributes: BTreeMap<String, String>,
    /// Delivery attempt, from 1, when the backend reports it (Pub/Sub reports it only with a
    /// dead-letter policy, and its emulator never does).
    pub attempt: Option<u32>,
    /// When it was published.
    pub published_at: DateTime<Utc>,
}

/// What a handler decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Processed (or never processable and recorded): do not deliver again.
    Ack,
    /// Not processed: deliver again after backoff, dead-letter after the attempt limit.
    Nack,
}

/// Receives deliveries.
#[async_trait]
pub trait Handler: Send + Sync + 'static {
    /// Handle one delivery.
    async fn handle(&self, delivery: Delivery) -> Outcome;
}

/// A subscription: which topic it takes, how often it retries, where dead letters go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubscriptionSpec {
    /// Subscription name.
    pub name: Name,
    /// Topic it receives.
    pub topic: Name,
    /// Deliveries before dead-lettering (Pub/Sub allows 5–100).
    pub max_attempts: u32,
    /// Where messages go after `max_attempts`.
    pub dead_letter_topic: Option<Name>,
    /// How long a delivery may take before it counts as failed and is redelivered.
    pub ack_deadline: Duration,
    /// First retry delay; doubles per attempt up to `max_backoff`.
    pub min_backoff: Duration,
    /// Longest retry delay.
    pub max_backoff: Duration,
}

impl SubscriptionSpec {
    /// Retry delay after `attempt` failed deliveries ([`backoff`] between its bounds).
    pub fn backoff(&self, attempt: u32) -> Duration {
        backoff(self.min_backoff, self.max_backoff, attempt)
    }
}

/// Retry delay after `attempt` failed deliveries, as Pub/Sub's retry policy computes it:
/// `min` doubled for each failure after the first, at most `max`.
pub fn backoff(min: Duration, max: Duration, attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1).min(16));
    min.saturating_mul(factor).min(max)
}

/// A publishing backend.
#[async_trait]
pub trait Bus: Send + Sync + 'static {
    /// Publish; returns the message id once the message is durably accepted.
    async fn publish(&self, message: OutboundMessage) -> Result<String, Error>;
}

/// A bus failure. `Display` never includes payloads or backend response bodies.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A topic or subscription name breaks the naming rules.
    #[error("invalid topic or subscription name")]
    InvalidName,
    /// The topic or subscription does not exist.
    #[error("unknown topic or subscription")]
    UnknownTopic,
    /// The configuration is invalid (attempt limits, deadlines).
    #[error("invalid bus configuration: {0}")]
    Invalid(&'static str),
    /// A message could not be encoded.
    #[error("message could not be encoded")]
    Unencodable,
    /// The backend failed or could not be reached; `kind` is a short status name.
    #[error("event bus unavailable ({kind})")]
    Unavailable {
        /// Short, safe status name.
        kind: String,
    },
    /// The disk under the local queue is full or cannot be written (the embedded default).
    #[error(transparent)]
    Storage(#[from] harmonia_contracts::storage::Fault),
}

impl Error {
    /// The stable code.
    pub fn code(&self) -> Code {
        match self {
            Error::InvalidName | Error::Invalid(_) => Code::InvalidRequest,
            Error::UnknownTopic => Code::UnknownTopic,
            Error::Unavailable { .. } => Code::BusUnavailable,
            Error::Unencodable => Code::Internal,
            Error::Storage(fault) => fault.code(),
        }
    }
}

impl From<Error> for harmonia_contracts::Error {
    /// The code's sentence with the failure kept as its cause; a disk fault's own sentence.
    fn from(e: Error) -> Self {
        match e {
            Error::Storage(fault) => fault.into(),
            other => harmonia_contracts::Error::from_code(other.code()).with_cause(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_pubsub_rules() {
        assert!("source.ingested".parse::<Name>().is_ok());
        assert!("harmonia-analyze~dlq".parse::<Name>().is_ok());
        for bad in ["ab", "1abc", "goog-x", "a b c", "tópico", &"a".repeat(256)] {
            assert!(bad.parse::<Name>().is_err(), "{bad}");
        }
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let spec = SubscriptionSpec {
            name: "s-1".parse().expect("n"),
            topic: "t-1".parse().expect("n"),
            max_attempts: 5,
            dead_letter_topic: None,
            ack_deadline: Duration::from_secs(10),
            min_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(500),
        };
        let got: Vec<_> = (1..=5).map(|a| spec.backoff(a).as_millis()).collect();
        assert_eq!(got, [100, 200, 400, 500, 500]);
    }
}
