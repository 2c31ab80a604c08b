//! A typed stage event survives the trip through each bus backend unchanged: the consumer
//! decodes exactly the event the producer built, and the routing attributes agree with it.

use std::time::Duration;

use harmonia_bus::{Bus, Delivery, Name, OutboundMessage, SubscriptionSpec};
use harmonia_bus_local::LocalBus;
use harmonia_bus_pubsub::{PubSubBus, PubSubConfig, push};
use harmonia_contracts::event::{Pass, SourceIngested, StageEvent};
use harmonia_contracts::trace::TraceParent;
use harmonia_e2e::forward;

fn event() -> StageEvent<SourceIngested> {
    StageEvent::new(
        "ws-e2e".parse().expect("ws"),
        "job-e2e".parse().expect("job"),
        Pass::FIRST,
        &TraceParent::new_root(),
        SourceIngested { source: "src-e2e".parse().expect("src") },
    )
}

fn spec(prefix: &str) -> SubscriptionSpec {
    SubscriptionSpec {
        name: format!("{prefix}source.ingested.analyze").parse().expect("name"),
        topic: format!("{prefix}source.ingested").parse().expect("topic"),
        max_attempts: 5,
        dead_letter_topic: Some(format!("{prefix}source.ingested.dead-letter").parse().expect("dlq")),
        ack_deadline: Duration::from_secs(30),
        min_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_secs(1),
    }
}

fn check(delivery: &Delivery, sent: &StageEvent<SourceIngested>) {
    let got = StageEvent::<SourceIngested>::decode(&delivery.data).expect("decodes as its topic's type");
    assert_eq!(&got, sent);
    let attr = |k: &str| delivery.attributes.get(k).map(String::as_str);
    assert_eq!(attr("job"), Some("job-e2e"));
    assert_eq!(attr("topic"), Some("source.ingested"));
    assert_eq!(attr("idempotency_key"), Some(sent.idempotency_key.as_str()));
    assert_eq!(attr("traceparent"), Some(sent.traceparent.to_string().as_str()));
}

async fn receive(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Delivery>) -> Delivery {
    tokio::time::timeout(Duration::from_secs(60), rx.recv()).await.expect("delivered in time").expect("open")
}

#[tokio::test]
async fn stage_event_round_trips_through_the_local_queue() {
    let dir = harmonia_testkit::temp_dir();
    let bus = LocalBus::open(dir.path().join("e2e.sqlite")).expect("open");
    let spec = spec("");
    for t in [&spec.topic, spec.dead_letter_topic.as_ref().expect("dlq")] {
        bus.create_topic(t).await.expect("topic");
    }
    bus.create_subscription(&spec).await.expect("subscription");
    let (handler, mut rx) = forward();
    let worker = bus.spawn_subscriber(spec.name.clone(), handler, 1);
    let sent = event();
    bus.publish(OutboundMessage::event("", &sent).expect("message")).await.expect("publish");
    check(&receive(&mut rx).await, &sent);
    worker.abort();
}

#[tokio::test]
async fn stage_event_round_trips_through_pubsub_push() {
    harmonia_testkit::pubsub_emulator();
    let bus = PubSubBus::connect(PubSubConfig::from_env(harmonia_testkit::unique("e2e"))).await.expect("connect");
    let prefix = "e2e.";
    let spec = spec(prefix);
    let dead: &Name = spec.dead_letter_topic.as_ref().expect("dlq");
    bus.create_topic(&spec.topic).await.expect("topic");
    bus.create_topic(dead).await.expect("dlq topic");
    let (handler, mut rx) = forward();
    let app = harmonia_testkit::spawn_app(push::router("/", handler)).await;
    bus.create_push_subscription(&spec, &format!("{}/", app.url())).await.expect("subscription");
    let sent = event();
    bus.publish(OutboundMessage::event(prefix, &sent).expect("message")).await.expect("publish");
    check(&receive(&mut rx).await, &sent);
}
