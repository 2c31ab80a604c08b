//! The conformance suite every bus backend runs unchanged, through a [`Fixture`] that
//! creates topics and starts delivering a subscription to a handler (a worker loop for the
//! local queue, a push endpoint for Pub/Sub). Names are unique per case, so cases can share
//! one backend. Waits are bounded; nothing sleeps for a fixed time.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;

use crate::{
    Bus, DEAD_LETTER_SOURCE_ATTRIBUTE, Delivery, Error, Handler, Name, OutboundMessage, Outcome, SubscriptionSpec,
};

/// Longest wait for one expected delivery.
pub const WAIT: Duration = Duration::from_secs(60);

/// What a backend provides to the suite.
#[async_trait]
pub trait Fixture: Send + Sync {
    /// The publisher.
    fn bus(&self) -> Arc<dyn Bus>;
    /// Create a topic.
    async fn create_topic(&self, topic: &Name);
    /// Create the subscription and start delivering it to `handler`.
    async fn subscribe(&self, spec: SubscriptionSpec, handler: Arc<dyn Handler>);
}

fn name(prefix: &str) -> Name {
    format!("{prefix}-{}", &uuid::Uuid::new_v4().simple().to_string()[..12])
        .parse()
        .unwrap_or_else(|_| panic!("name {prefix}"))
}

/// A subscription spec; without an explicit dead-letter topic one is created (Harmonia always
/// configures one, and Pub/Sub reports delivery attempts only when it is set).
async fn spec_with(f: &dyn Fixture, topic: &Name, dead_letter_topic: Option<Name>) -> SubscriptionSpec {
    let dead_letter_topic = match dead_letter_topic {
        Some(d) => d,
        None => {
            let d = name("dlq");
            f.create_topic(&d).await;
            d
        }
    };
    SubscriptionSpec {
        name: name("sub"),
        topic: topic.clone(),
        max_attempts: 5,
        dead_letter_topic: Some(dead_letter_topic),
        ack_deadline: Duration::from_secs(20),
        min_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_millis(400),
    }
}

/// Records every delivery and nacks the calls numbered below `nack_below_attempt`.
struct Recorder {
    tx: mpsc::UnboundedSender<Delivery>,
    nack_below_attempt: u32,
    calls: AtomicU32,
}

#[async_trait]
impl Handler for Recorder {
    async fn handle(&self, delivery: Delivery) -> Outcome {
        // Count calls rather than trusting `attempt`, which a backend may not report.
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let outcome = if call < self.nack_below_attempt { Outcome::Nack } else { Outcome::Ack };
        let _ = self.tx.send(delivery);
        outcome
    }
}

fn recorder(nack_below_attempt: u32) -> (Arc<Recorder>, mpsc::UnboundedReceiver<Delivery>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Arc::new(Recorder { tx, nack_below_attempt, calls: AtomicU32::new(0) }), rx)
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Delivery>) -> Delivery {
    tokio::time::timeout(WAIT, rx.recv()).await.expect("a delivery within the wait").expect("channel open")
}

fn message(topic: &Name, body: &[u8], tag: &str) -> OutboundMessage {
    OutboundMessage {
        topic: topic.clone(),
        data: body.to_vec(),
        attributes: BTreeMap::from([("tag".to_owned(), tag.to_owned()), ("kind".to_owned(), "test".to_owned())]),
    }
}

/// Data (including non-UTF-8 bytes) and attributes arrive intact, on attempt 1; an acked
/// message is not delivered again.
pub async fn delivers_data_and_attributes(f: &dyn Fixture) {
    let topic = name("topic");
    f.create_topic(&topic).await;
    let (handler, mut rx) = recorder(0);
    f.subscribe(spec_with(f, &topic, None).await, handler).await;
    let body = [0u8, 159, 146, 150, 255, b'{'];
    let id = f.bus().publish(message(&topic, &body, "first")).await.expect("publish");
    let got = next(&mut rx).await;
    assert_eq!(got.message_id, id);
    assert_eq!(got.data, body);
    assert_eq!(got.attributes.get("tag").map(String::as_str), Some("first"));
    assert_eq!(got.attributes.get("kind").map(String::as_str), Some("test"));
    assert!(matches!(got.attempt, None | Some(1)), "{:?}", got.attempt);
    // The next delivery is the second message, not a redelivery of the acked first.
    f.bus().publish(message(&topic, b"two", "second")).await.expect("publish");
    let got = next(&mut rx).await;
    assert_eq!(got.attributes.get("tag").map(String::as_str), Some("second"));
}

/// A nacked message comes back with the attempt count rising until it is acked.
pub async fn nack_redelivers_with_rising_attempts(f: &dyn Fixture) {
    let topic = name("topic");
    f.create_topic(&topic).await;
    let (handler, mut rx) = recorder(3);
    f.subscribe(spec_with(f, &topic, None).await, handler).await;
    let id = f.bus().publish(message(&topic, b"retry me", "r")).await.expect("publish");
    let deliveries = [next(&mut rx).await, next(&mut rx).await, next(&mut rx).await];
    for (n, d) in (1..).zip(&deliveries) {
        assert_eq!(d.message_id, id);
        assert_eq!(d.data, b"retry me");
        assert!(d.attempt.is_none_or(|a| a == n), "attempt {:?} on delivery {n}", d.attempt);
    }
    f.bus().publish(message(&topic, b"after", "after")).await.expect("publish");
    let got = next(&mut rx).await;
    assert_eq!(got.attributes.get("tag").map(String::as_str), Some("after"), "the acked message came back");
}

/// After `max_attempts` nacks the message lands on the dead-letter topic with its data and
/// attributes, plus the source-subscription attribute.
pub async fn dead_letters_after_max_attempts(f: &dyn Fixture) {
    let topic = name("topic");
    let dead = name("dead");
    f.create_topic(&topic).await;
    f.create_topic(&dead).await;
    let (dead_handler, mut dead_rx) = recorder(0);
    f.subscribe(spec_with(f, &dead, None).await, dead_handler).await;
    let (handler, mut rx) = recorder(u32::MAX);
    let main = spec_with(f, &topic, Some(dead.clone())).await;
    let main_name = main.name.clone();
    f.subscribe(main, handler.clone()).await;
    f.bus().publish(message(&topic, b"poison", "p")).await.expect("publish");
    let landed = next(&mut dead_rx).await;
    assert_eq!(landed.data, b"poison");
    assert_eq!(landed.attributes.get("tag").map(String::as_str), Some("p"));
    let source = landed.attributes.get(DEAD_LETTER_SOURCE_ATTRIBUTE).cloned().unwrap_or_default();
    assert!(source.ends_with(main_name.as_str()), "source subscription attribute: {source:?}");
    let mut deliveries = 0u32;
    while let Ok(d) = rx.try_recv() {
        deliveries += 1;
        assert!(d.attempt.is_none_or(|a| a == deliveries), "attempt {:?} on delivery {deliveries}", d.attempt);
    }
    assert_eq!(deliveries, 5, "every attempt up to the limit, then none");
}

/// Every subscription of a topic gets its own copy.
pub async fn fans_out_to_every_subscription(f: &dyn Fixture) {
    let topic = name("topic");
    f.create_topic(&topic).await;
    let (a, mut rx_a) = recorder(0);
    let (b, mut rx_b) = recorder(0);
    f.subscribe(spec_with(f, &topic, None).await, a).await;
    f.subscribe(spec_with(f, &topic, None).await, b).await;
    let id = f.bus().publish(message(&topic, b"both", "fan")).await.expect("publish");
    let (got_a, got_b) = (next(&mut rx_a).await, next(&mut rx_b).await);
    assert_eq!((got_a.message_id.as_str(), got_b.message_id.as_str()), (id.as_str(), id.as_str()));
    assert_ne!(got_a.subscription, got_b.subscription);
}

/// Publishing to a topic that does not exist is refused, not silently dropped.
pub async fn unknown_topic_is_refused(f: &dyn Fixture) {
    let r = f.bus().publish(message(&name("missing"), b"x", "x")).await;
    assert!(matches!(r, Err(Error::UnknownTopic)), "{r:?}");
}

/// Instantiate every case as a `#[tokio::test]`, given an async expression producing a
/// `Box<dyn Fixture>`.
#[macro_export]
macro_rules! bus_conformance {
    ($make:expr) => {
        $crate::bus_conformance!(@cases $make;
            delivers_data_and_attributes,
            nack_redelivers_with_rising_attempts,
            dead_letters_after_max_attempts,
            fans_out_to_every_subscription,
            unknown_topic_is_refused,
        );
    };
    (@cases $make:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                let fixture = $make.await;
                $crate::conformance::$case(&*fixture).await;
            }
        )*
    };
}
