use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use harmonia_bus::conformance::Fixture;
use tokio::sync::mpsc;

use super::*;

struct LocalFixture {
    bus: LocalBus,
    workers: Mutex<Vec<JoinHandle<()>>>,
    /// Removes the queue file when the case ends.
    _dir: harmonia_testkit::TempDir,
}

impl Drop for LocalFixture {
    fn drop(&mut self) {
        if let Ok(workers) = self.workers.lock() {
            workers.iter().for_each(JoinHandle::abort);
        }
    }
}

#[async_trait]
impl Fixture for LocalFixture {
    fn bus(&self) -> Arc<dyn Bus> {
        Arc::new(self.bus.clone())
    }
    async fn create_topic(&self, topic: &Name) {
        self.bus.create_topic(topic).await.expect("create topic");
    }
    async fn subscribe(&self, spec: SubscriptionSpec, handler: Arc<dyn Handler>) {
        self.bus.create_subscription(&spec).await.expect("create subscription");
        let worker = self.bus.spawn_subscriber(spec.name, handler, 4);
        self.workers.lock().expect("lock").push(worker);
    }
}

async fn fixture() -> Box<dyn Fixture> {
    let dir = harmonia_testkit::temp_dir();
    let bus = LocalBus::open(dir.path().join("bus.sqlite")).expect("open");
    Box::new(LocalFixture { bus, workers: Mutex::new(Vec::new()), _dir: dir })
}

harmonia_bus::bus_conformance!(fixture());

fn spec(name: &str, topic: &str, ack_deadline: Duration) -> SubscriptionSpec {
    SubscriptionSpec {
        name: name.parse().expect("name"),
        topic: topic.parse().expect("topic"),
        max_attempts: 5,
        dead_letter_topic: None,
        ack_deadline,
        min_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(50),
    }
}

struct Channel(mpsc::UnboundedSender<Delivery>, Outcome, AtomicU32);

#[async_trait]
impl Handler for Channel {
    async fn handle(&self, d: Delivery) -> Outcome {
        self.2.fetch_add(1, Ordering::SeqCst);
        let _ = self.0.send(d);
        self.1
    }
}

#[tokio::test]
async fn unacked_messages_survive_a_restart_and_keep_their_attempt_count() {
    let dir = harmonia_testkit::temp_dir();
    let path = dir.path().join("queue.sqlite");
    let topic: Name = "jobs.topic".parse().expect("topic");
    {
        let bus = LocalBus::open(&path).expect("open");
        bus.create_topic(&topic).await.expect("topic");
        bus.create_subscription(&spec("jobs.sub", "jobs.topic", Duration::from_millis(50))).await.expect("sub");
        bus.publish(OutboundMessage { topic: topic.clone(), data: b"work".to_vec(), attributes: BTreeMap::new() })
            .await
            .expect("publish");
        // Lease it and "crash" without settling: the process holding the lease is gone.
        let sub: Name = "jobs.sub".parse().expect("sub");
        let leased = bus.lease(&sub).await.expect("lease").expect("a message");
        assert_eq!(leased.delivery.attempt, Some(1));
    }
    let bus = LocalBus::open(&path).expect("reopen");
    let sub: Name = "jobs.sub".parse().expect("sub");
    assert_eq!(bus.backlog(&sub).await.expect("backlog"), 1);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let worker = bus.spawn_subscriber(sub.clone(), Arc::new(Channel(tx, Outcome::Ack, AtomicU32::new(0))), 1);
    let d = tokio::time::timeout(Duration::from_secs(30), rx.recv()).await.expect("redelivered").expect("open");
    assert_eq!(d.data, b"work");
    assert_eq!(d.attempt, Some(2), "the expired lease counted as an attempt");
    // Ack settles after the handler returns; wait until the backlog drains.
    harmonia_testkit::eventually("the acked message leaves the backlog", || async {
        match bus.backlog(&sub).await.expect("backlog") {
            0 => Ok(()),
            n => Err(format!("{n} left")),
        }
    })
    .await;
    worker.abort();
}

#[tokio::test]
async fn a_slow_handler_past_its_deadline_is_redelivered_and_its_late_ack_is_ignored() {
    let dir = harmonia_testkit::temp_dir();
    let bus = LocalBus::open(dir.path().join("q.sqlite")).expect("open");
    let topic: Name = "slow.topic".parse().expect("topic");
    let sub: Name = "slow.sub".parse().expect("sub");
    bus.create_topic(&topic).await.expect("topic");
    bus.create_subscription(&spec("slow.sub", "slow.topic", Duration::from_millis(30))).await.expect("sub");
    bus.publish(OutboundMessage { topic, data: b"x".to_vec(), attributes: BTreeMap::new() }).await.expect("publish");
    let first = bus.lease(&sub).await.expect("lease").expect("message");
    let second = harmonia_testkit::eventually("the message is redelivered after its ack deadline", || async {
        bus.lease(&sub).await.expect("lease")
    })
    .await;
    assert_eq!(second.delivery.attempt, Some(2));
    bus.settle(&first, Outcome::Ack).await.expect("late ack");
    assert_eq!(bus.backlog(&sub).await.expect("backlog"), 1, "a stale lease cannot ack the redelivery");
    bus.settle(&second, Outcome::Ack).await.expect("ack");
    assert_eq!(bus.backlog(&sub).await.expect("backlog"), 0);
}
