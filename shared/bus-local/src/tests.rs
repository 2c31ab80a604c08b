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
        let leased = bus.lease(&sub).await.expect("lease").leased().expect("a message");
        assert_eq!(leased.delivery.attempt, Some(1));
        // A crash runs no destructor: nothing is released.
        std::mem::forget(bus);
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
    let first = bus.lease(&sub).await.expect("lease").leased().expect("message");
    let second = harmonia_testkit::eventually("the message is redelivered after its ack deadline", || async {
        bus.lease(&sub).await.expect("lease").leased()
    })
    .await;
    assert_eq!(second.delivery.attempt, Some(2));
    bus.settle(&first, Outcome::Ack).await.expect("late ack");
    assert_eq!(bus.backlog(&sub).await.expect("backlog"), 1, "a stale lease cannot ack the redelivery");
    bus.settle(&second, Outcome::Ack).await.expect("ack");
    assert_eq!(bus.backlog(&sub).await.expect("backlog"), 0);
}

/// A queue file with one topic, a subscription whose ack deadline is a minute (so nothing comes
/// back by expiry during a test) and one message on it; two processes' buses on it.
async fn shared_queue() -> (harmonia_testkit::TempDir, LocalBus, LocalBus, Name) {
    let dir = harmonia_testkit::temp_dir();
    let path = dir.path().join("shared.sqlite");
    let first = LocalBus::open(&path).expect("open");
    let topic: Name = "held.topic".parse().expect("topic");
    first.create_topic(&topic).await.expect("topic");
    first.create_subscription(&spec("held.sub", "held.topic", Duration::from_secs(60))).await.expect("sub");
    first.publish(OutboundMessage { topic, data: b"w".to_vec(), attributes: BTreeMap::new() }).await.expect("publish");
    let second = LocalBus::open(&path).expect("open again");
    assert_ne!(first.holder(), second.holder());
    (dir, first, second, "held.sub".parse().expect("sub"))
}

#[tokio::test]
async fn a_live_holders_lease_stays_with_it() {
    let (_dir, first, second, sub) = shared_queue().await;
    let _held = first.lease(&sub).await.expect("lease").leased().expect("a message");
    assert!(second.lease(&sub).await.expect("lease").leased().is_none(), "leased by a live holder");
}

#[tokio::test]
async fn released_leases_are_due_at_once_for_another_process_without_counting_the_attempt() {
    let (_dir, first, second, sub) = shared_queue().await;
    first.lease(&sub).await.expect("lease").leased().expect("a message");
    assert_eq!(first.release().await.expect("release"), 1);
    let again = second.lease(&sub).await.expect("lease").leased().expect("due at once");
    assert_eq!(again.delivery.attempt, Some(1), "a release is not a failed delivery");
}

#[tokio::test]
async fn dropping_the_last_handle_of_a_bus_releases_what_it_holds() {
    let (_dir, first, second, sub) = shared_queue().await;
    let handle = first.clone();
    first.lease(&sub).await.expect("lease").leased().expect("a message");
    drop(first);
    assert!(second.lease(&sub).await.expect("lease").leased().is_none(), "another handle still holds it");
    drop(handle);
    let again = second.lease(&sub).await.expect("lease").leased().expect("due once the process's bus is gone");
    assert_eq!(again.delivery.attempt, Some(1));
}

#[tokio::test]
async fn a_dead_holders_lease_is_reclaimed_without_waiting_out_the_ack_deadline() {
    let (_dir, first, second, sub) = shared_queue().await;
    first.lease(&sub).await.expect("lease").leased().expect("a message");
    let dead = first.holder().to_owned();
    // Killed: no destructor runs, and its heartbeat stops; age it past the staleness limit.
    std::mem::forget(first);
    let stale = now_ms() - millis(HOLDER_STALE) - 1;
    second
        .with_conn(move |c| {
            c.execute("UPDATE bus_holders SET heartbeat_ms = ?2 WHERE holder = ?1", params![dead, stale])
                .map_err(unavailable)
        })
        .await
        .expect("age the heartbeat");
    let again = second.lease(&sub).await.expect("lease").leased().expect("reclaimed at once");
    assert_eq!(again.delivery.attempt, Some(2), "a crash counts as a failed delivery");
    assert_eq!(again.delivery.data, b"w");
}

#[tokio::test]
async fn a_subscribing_holder_keeps_its_heartbeat_fresh() {
    let (_dir, first, second, sub) = shared_queue().await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    // Never settles in time: the handler holds the message until the test ends.
    struct Hold(mpsc::UnboundedSender<Delivery>);
    #[async_trait]
    impl Handler for Hold {
        async fn handle(&self, d: Delivery) -> Outcome {
            let _ = self.0.send(d);
            std::future::pending::<()>().await;
            Outcome::Ack
        }
    }
    let worker = first.spawn_subscriber(sub.clone(), Arc::new(Hold(tx)), 1);
    rx.recv().await.expect("delivered");
    let holder = first.holder().to_owned();
    let beats = || {
        let holder = holder.clone();
        second.with_conn(move |c| {
            c.query_row("SELECT heartbeat_ms FROM bus_holders WHERE holder = ?1", [&holder], |r| r.get::<_, i64>(0))
                .map_err(unavailable)
        })
    };
    let first_beat = beats().await.expect("a heartbeat row");
    harmonia_testkit::eventually("the heartbeat is refreshed", || async {
        match beats().await.expect("heartbeat") {
            later if later > first_beat => Ok(()),
            _ => Err("not yet refreshed"),
        }
    })
    .await;
    assert!(second.lease(&sub).await.expect("lease").leased().is_none(), "a beating holder keeps its lease");
    worker.abort();
}

/// Whether `future` has resolved, polled once.
async fn resolved(future: &mut std::pin::Pin<&mut impl std::future::Future<Output = ()>>) -> bool {
    std::future::poll_fn(|cx| std::task::Poll::Ready(future.as_mut().poll(cx).is_ready())).await
}

/// A follower of some attribute values is woken by a publish or a settle of a message carrying
/// one of them, and by nothing else; a follower that is gone is forgotten.
#[tokio::test]
async fn a_follower_is_woken_by_its_own_messages_only() {
    let dir = harmonia_testkit::temp_dir();
    let bus = LocalBus::open(dir.path().join("follow.sqlite")).expect("open");
    let topic: Name = "follow-topic".parse().expect("topic");
    bus.create_topic(&topic).await.expect("topic");
    bus.create_subscription(&spec("follow-sub", "follow-topic", Duration::from_secs(30))).await.expect("subscription");
    let message = |job: &str| OutboundMessage {
        topic: topic.clone(),
        data: b"{}".to_vec(),
        attributes: [("job".to_owned(), job.to_owned())].into(),
    };
    let mine = bus.follow("job", ["j1", "j2"]);
    let other = bus.follow("job", ["j3"]);
    {
        let (mut mine_changed, mut other_changed) = (std::pin::pin!(mine.changed()), std::pin::pin!(other.changed()));
        bus.publish(message("j2")).await.expect("publish");
        assert!(resolved(&mut mine_changed).await, "a publish of a followed job wakes its follower");
        assert!(!resolved(&mut other_changed).await, "and no one else");

        // Settling it wakes the follower again.
        let mut mine_changed = std::pin::pin!(mine.changed());
        let leased = bus.lease(&"follow-sub".parse().expect("sub")).await.expect("lease").leased().expect("a message");
        assert!(!resolved(&mut mine_changed).await, "a lease changes nothing a follower sees");
        bus.settle(&leased, Outcome::Ack).await.expect("ack");
        assert!(resolved(&mut mine_changed).await, "an ack of a followed job wakes its follower");
        assert!(!resolved(&mut other_changed).await);
    }

    // (A pending `changed` holds its follower too; those above are gone with their block.)
    drop(mine);
    let _third = bus.follow("job", ["j4"]);
    let followed = bus.wakes.followed.lock().expect("lock");
    let values: Vec<&String> = followed.get("job").map(|t| t.keys().collect()).unwrap_or_default();
    assert!(!values.iter().any(|v| *v == "j1" || *v == "j2"), "a follower that is gone is forgotten: {values:?}");
}
