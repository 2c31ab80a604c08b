//! Durable local queue with Pub/Sub semantics, stored in SQLite: the embedded default bus.
//!
//! Topics and subscriptions are rows; publishing copies the message to every subscription of
//! its topic in one transaction, so an accepted message survives a crash. A subscriber leases
//! one message at a time per slot: the lease bumps the attempt counter and hides the message
//! until its ack deadline. Ack deletes it; nack (or an expired lease, e.g. after a crash)
//! makes it visible again after exponential backoff; a message leased after `max_attempts`
//! failed deliveries moves to the subscription's dead-letter topic instead, keeping its data
//! and attributes. The file may be the same one the SQLite store uses.
//!
//! Several processes may share the file (every CLI command runs the stages). Each open bus is
//! a *holder* with its own id, and every lease names its holder. A holder that subscribes
//! keeps a heartbeat row fresh ([`HEARTBEAT`]); [`LocalBus::release`] (or dropping the last
//! handle) gives back everything it holds at once, as if it had never been leased. A holder
//! that stops without releasing (killed, crashed) is dead once its heartbeat is older than
//! [`HOLDER_STALE`], and any other holder reclaims its leases then, instead of waiting out the
//! ack deadline.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, SecondsFormat, Utc};
use harmonia_bus::{
    Bus, DEAD_LETTER_SOURCE_ATTRIBUTE, Delivery, Error, Handler, Name, OutboundMessage, Outcome, SubscriptionSpec,
};
use harmonia_store_sqlite::{Blocking, exec_cached, row_cached};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinHandle;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS bus_topics (name TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS bus_subscriptions (
    name              TEXT PRIMARY KEY,
    topic             TEXT NOT NULL,
    max_attempts      INTEGER NOT NULL,
    dead_letter_topic TEXT,
    ack_deadline_ms   INTEGER NOT NULL,
    min_backoff_ms    INTEGER NOT NULL,
    max_backoff_ms    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS bus_messages (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id    TEXT NOT NULL,
    subscription  TEXT NOT NULL,
    data          BLOB NOT NULL,
    attributes    TEXT NOT NULL,
    published_at  TEXT NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    visible_at_ms INTEGER NOT NULL,
    lease         TEXT
);
CREATE INDEX IF NOT EXISTS bus_messages_due ON bus_messages (subscription, visible_at_ms);
CREATE TABLE IF NOT EXISTS bus_holders (
    holder       TEXT PRIMARY KEY,
    heartbeat_ms INTEGER NOT NULL
) WITHOUT ROWID;
";

/// When a message `m` of a subscription is due (given `?2`, now in ms, and `?3`, the oldest
/// heartbeat of a live holder): visible again, or leased by a holder that is gone.
macro_rules! due {
    () => {
        "(visible_at_ms <= ?2 OR (m.holder IS NOT NULL AND NOT EXISTS
           (SELECT 1 FROM bus_holders h WHERE h.holder = m.holder AND h.heartbeat_ms > ?3)))"
    };
}

/// What leasing found.
enum Leasing {
    /// A message, leased.
    Leased(Leased),
    /// Nothing due; the next message (leased or backing off) is due then, if any is waiting.
    Idle {
        /// Milliseconds since the epoch.
        next_due_ms: Option<i64>,
    },
}

#[cfg(test)]
impl Leasing {
    /// The message, if one was leased.
    fn leased(self) -> Option<Leased> {
        match self {
            Self::Leased(leased) => Some(leased),
            Self::Idle { .. } => None,
        }
    }
}

/// How often a subscribing holder refreshes its heartbeat.
pub const HEARTBEAT: Duration = Duration::from_secs(1);

/// How old a holder's heartbeat may be before other holders take it for dead and reclaim its
/// leases: three missed beats, so a busy process is not taken for a dead one.
pub const HOLDER_STALE: Duration = Duration::from_secs(3);

fn unavailable(e: rusqlite::Error) -> Error {
    Error::Unavailable { kind: harmonia_store_sqlite::error_kind(&e) }
}

/// The error of a call whose connection was lost (a panic in another call).
fn lost(kind: &'static str) -> Error {
    Error::Unavailable { kind: kind.into() }
}

/// `result`, with a failure to write the file that is a full or unwritable disk named as that.
fn named<T>(conn: &Blocking, result: Result<T, Error>) -> Result<T, Error> {
    fn kind(e: &Error) -> Option<&str> {
        match e {
            Error::Unavailable { kind } => Some(kind.as_str()),
            _ => None,
        }
    }
    conn.named(result, kind, Error::Storage)
}

fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The durable local bus.
#[derive(Clone)]
pub struct LocalBus {
    conn: Blocking,
    wakes: Arc<Wakes>,
    holder: Arc<Holder>,
    /// The last disk fault a call met, and when ([`LocalBus::fault_since`]).
    fault: Arc<harmonia_contracts::storage::Last<harmonia_contracts::storage::Fault>>,
}

/// Who to wake in this process when something changes on the queue: the subscribers of a
/// topic when a message arrives on it (so a publish wakes the one stage it is for, not every
/// subscriber), those following messages of one attribute value ([`LocalBus::follow`], say
/// one job's) when such a message is published or settled, and everyone following progress
/// ([`LocalBus::changed`]) on any change. Other processes' changes are found by bounded waits.
#[derive(Default)]
struct Wakes {
    /// Topic → the wake of each of this process's subscribers of it.
    by_topic: std::sync::Mutex<BTreeMap<String, Vec<Arc<Notify>>>>,
    /// Attribute → value → the wake of each follower (gone when the follower is).
    followed: std::sync::Mutex<HashMap<String, Followers>>,
    /// Any publish, settle or release in this process.
    any: Arc<Notify>,
}

/// Of one attribute: value → the wake of each follower of it.
type Followers = HashMap<String, Vec<Weak<Notify>>>;

/// Following the messages that carry one attribute value ([`LocalBus::follow`]).
#[derive(Clone, Debug)]
pub struct Follow(Arc<Notify>);

impl Follow {
    /// Resolves when this process next publishes or settles a followed message (created
    /// before looking, so a change made while looking is not missed). Other processes' changes
    /// do not wake it: bound the wait.
    pub fn changed(&self) -> tokio::sync::futures::OwnedNotified {
        self.0.clone().notified_owned()
    }
}

impl Wakes {
    /// A message arrived on `topic` (or every topic, when `None`).
    fn arrived(&self, topic: Option<&str>) {
        if let Ok(by_topic) = self.by_topic.lock() {
            match topic {
                Some(topic) => by_topic.get(topic).into_iter().flatten().for_each(|n| n.notify_one()),
                None => by_topic.values().flatten().for_each(|n| n.notify_one()),
            }
        }
        self.any.notify_waiters();
    }

    /// A followed message was published or settled: wake its followers.
    fn touched(&self, attributes: &BTreeMap<String, String>) {
        let Ok(followed) = self.followed.lock() else { return };
        for (key, values) in followed.iter() {
            let followers = attributes.get(key).and_then(|v| values.get(v)).into_iter().flatten();
            followers.filter_map(Weak::upgrade).for_each(|notify| notify.notify_waiters());
        }
    }

    /// Follow the messages whose `key` attribute is one of `values`.
    fn follow<'a>(&self, key: &str, values: impl IntoIterator<Item = &'a str>) -> Follow {
        let notify = Arc::new(Notify::new());
        if let Ok(mut followed) = self.followed.lock() {
            let table = followed.entry(key.to_owned()).or_default();
            // Forget followers that are gone, so the table stays as small as those following.
            table.retain(|_, followers| {
                followers.retain(|f| f.strong_count() > 0);
                !followers.is_empty()
            });
            for value in values {
                table.entry(value.to_owned()).or_default().push(Arc::downgrade(&notify));
            }
        }
        Follow(notify)
    }

    /// Register a subscriber of `topic`.
    fn subscribe(&self, topic: String) -> Arc<Notify> {
        let notify = Arc::new(Notify::new());
        if let Ok(mut by_topic) = self.by_topic.lock() {
            by_topic.entry(topic).or_default().push(notify.clone());
        }
        notify
    }
}

/// This bus's holder identity and heartbeat. Dropping the last handle releases what it holds.
struct Holder {
    id: String,
    conn: Blocking,
    heartbeat: std::sync::Mutex<Option<JoinHandle<()>>>,
    /// When this holder's heartbeat was last committed (ms since the epoch; 0: never).
    beaten_ms: std::sync::atomic::AtomicI64,
    /// On a file it cannot write: it never leased anything, so it has nothing to give back.
    reading: bool,
}

impl Holder {
    /// Note a committed heartbeat written at `at_ms`.
    fn beaten(&self, at_ms: i64) {
        self.beaten_ms.fetch_max(at_ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether a heartbeat committed within [`HEARTBEAT`] keeps this holder alive now: for at
    /// least [`HOLDER_STALE`] less that, with the heartbeat task writing the next meanwhile.
    fn fresh(&self, now_ms: i64) -> bool {
        now_ms - self.beaten_ms.load(std::sync::atomic::Ordering::Relaxed) < millis(HEARTBEAT)
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        if let Ok(mut beat) = self.heartbeat.lock()
            && let Some(task) = beat.take()
        {
            task.abort();
        }
        if self.reading {
            return;
        }
        // A process that ends without `release` still gives its leases back here.
        let id = &self.id;
        let released = named(&self.conn, self.conn.run_now(|c| release_rows(c, id), lost));
        if let Err(e) = released {
            tracing::warn!(error = %e, "leases could not be released on exit; other processes reclaim them once this one's heartbeat is stale");
        }
    }
}

impl std::fmt::Debug for LocalBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalBus").finish_non_exhaustive()
    }
}

/// A leased message.
struct Leased {
    seq: i64,
    lease: String,
    delivery: Delivery,
}

impl LocalBus {
    /// Open (creating if needed) the queue tables in the SQLite file at `path`, as a new
    /// holder, on a connection of its own.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        let conn = harmonia_store_sqlite::open_connection(path.as_ref()).map_err(unavailable)?;
        Self::on(Blocking::new(conn))
    }

    /// The queue, as a new holder, on `conn`: the connection the process's store uses, so
    /// the two share one page cache (a connection's cache is dropped whenever another
    /// connection has written the file) and never wait for each other's locks.
    pub fn on(conn: Blocking) -> Result<Self, Error> {
        named(&conn, conn.run_now(migrate, lost))?;
        Ok(Self::holding(conn, false))
    }

    /// The queue on `conn`, a connection to a file that cannot be written (see
    /// `SqliteStore::open_read_only`): its tables are not brought up to date, and whatever
    /// would change them (a publish, a lease, a subscription) fails as that file's disk fault.
    /// For the commands that only read a data directory.
    pub fn reading(conn: Blocking) -> Self {
        Self::holding(conn, true)
    }

    fn holding(conn: Blocking, reading: bool) -> Self {
        let holder = Holder {
            id: uuid::Uuid::new_v4().simple().to_string(),
            conn: conn.clone(),
            heartbeat: std::sync::Mutex::new(None),
            beaten_ms: std::sync::atomic::AtomicI64::new(0),
            reading,
        };
        Self { conn, wakes: Arc::default(), holder: Arc::new(holder), fault: Arc::default() }
    }

    /// The last full or unwritable disk a call on the queue met at or after `at` (a lease, an
    /// acknowledgement, a publish): a subscriber that cannot lease never reaches its handler,
    /// so a command following a job reads it here to stop and say so.
    pub fn fault_since(&self, at: std::time::Instant) -> Option<harmonia_contracts::storage::Fault> {
        self.fault.since(at)
    }

    /// This bus's holder id (what its leases name).
    pub fn holder(&self) -> &str {
        &self.holder.id
    }

    /// Give back every message this holder has leased, at once and without counting the
    /// attempt, and stop being a holder: for a process that is about to exit (or to stop
    /// subscribing). Deliveries still running here settle nothing afterwards; their messages
    /// are due again for any holder. Returns how many were released.
    pub async fn release(&self) -> Result<u64, Error> {
        let id = self.holder.id.clone();
        // Its heartbeat row goes: the next lease, if any, writes it again.
        self.holder.beaten_ms.store(0, std::sync::atomic::Ordering::Relaxed);
        let released = self.with_conn(move |c| release_rows(c, &id)).await?;
        self.wakes.arrived(None);
        Ok(released)
    }

    /// Start the heartbeat once, when this holder first subscribes.
    fn beat(&self) {
        let Ok(mut slot) = self.holder.heartbeat.lock() else { return };
        if slot.is_some() {
            return;
        }
        // The task holds the holder weakly, so dropping the last bus handle still releases.
        let conn = self.conn.clone();
        let holder = Arc::downgrade(&self.holder);
        *slot = Some(tokio::spawn(async move {
            loop {
                let Some(id) = holder.upgrade().map(|h| h.id.clone()) else { return };
                let at = now_ms();
                let beat = conn
                    .run(
                        move |c| heartbeat(c, &id, at).map_err(unavailable),
                        |kind| Error::Unavailable { kind: kind.into() },
                    )
                    .await;
                match beat {
                    Ok(_) => {
                        if let Some(holder) = holder.upgrade() {
                            holder.beaten(at);
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "the local queue's heartbeat could not be written"),
                }
                tokio::time::sleep(HEARTBEAT).await;
            }
        }));
    }

    async fn with_conn<T: Send + 'static>(
        &self,
        f: impl FnMut(&mut Connection) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        let result = named(&self.conn, self.conn.run(f, lost).await);
        if let Err(Error::Storage(fault)) = &result {
            self.fault.note(fault.clone());
        }
        result
    }

    /// Create a topic (idempotent).
    pub async fn create_topic(&self, topic: &Name) -> Result<(), Error> {
        let topic = topic.to_string();
        self.with_conn(move |c| {
            exec_cached(c, "INSERT OR IGNORE INTO bus_topics (name) VALUES (?1)", [&topic])
                .map(|_| ())
                .map_err(unavailable)
        })
        .await
    }

    /// Create or update a subscription. Its topic (and dead-letter topic) must exist.
    pub async fn create_subscription(&self, spec: &SubscriptionSpec) -> Result<(), Error> {
        if !(1..=100).contains(&spec.max_attempts) || spec.ack_deadline.is_zero() {
            return Err(Error::Invalid("max_attempts must be 1-100 and the ack deadline positive"));
        }
        let spec = spec.clone();
        self.with_conn(move |c| {
            for topic in std::iter::once(&spec.topic).chain(spec.dead_letter_topic.as_ref()) {
                let exists: Option<String> = row_cached(
                    c,
                    "SELECT name FROM bus_topics WHERE name = ?1", [topic.as_str()], |r| r.get(0))
                    .optional()
                    .map_err(unavailable)?;
                if exists.is_none() {
                    return Err(Error::UnknownTopic);
                }
            }
            exec_cached(c,
                "INSERT INTO bus_subscriptions (name, topic, max_attempts, dead_letter_topic, ack_deadline_ms, min_backoff_ms, max_backoff_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (name) DO UPDATE SET topic = excluded.topic, max_attempts = excluded.max_attempts,
                   dead_letter_topic = excluded.dead_letter_topic, ack_deadline_ms = excluded.ack_deadline_ms,
                   min_backoff_ms = excluded.min_backoff_ms, max_backoff_ms = excluded.max_backoff_ms",
                params![
                    spec.name.as_str(),
                    spec.topic.as_str(),
                    spec.max_attempts,
                    spec.dead_letter_topic.as_ref().map(Name::as_str),
                    millis(spec.ack_deadline),
                    millis(spec.min_backoff),
                    millis(spec.max_backoff),
                ],
            )
            .map_err(unavailable)?;
            Ok(())
        })
        .await
    }

    /// The count `sql` (one `COUNT(*)` with `params`) returns.
    async fn count(&self, sql: &'static str, params: Vec<String>) -> Result<u64, Error> {
        self.with_conn(move |c| {
            row_cached(c, sql, rusqlite::params_from_iter(&params), |r| r.get::<_, i64>(0))
                .map(|n| u64::try_from(n).unwrap_or(0))
                .map_err(unavailable)
        })
        .await
    }

    /// Messages waiting or in flight on `subscription`.
    pub async fn backlog(&self, subscription: &Name) -> Result<u64, Error> {
        self.count("SELECT COUNT(*) FROM bus_messages WHERE subscription = ?1", vec![subscription.to_string()]).await
    }

    /// Messages waiting or in flight on every subscription.
    pub async fn total_backlog(&self) -> Result<u64, Error> {
        self.count("SELECT COUNT(*) FROM bus_messages", Vec::new()).await
    }

    /// Whether `holder` (of this file) is alive: its heartbeat is fresher than
    /// [`HOLDER_STALE`]. A holder that released everything, or never leased, is not.
    pub async fn alive(&self, holder: &str) -> Result<bool, Error> {
        let (holder, stale) = (holder.to_owned(), now_ms() - millis(HOLDER_STALE));
        self.with_conn(move |c| {
            row_cached(
                c,
                "SELECT EXISTS (SELECT 1 FROM bus_holders WHERE holder = ?1 AND heartbeat_ms > ?2)",
                params![holder, stale],
                |r| r.get::<_, bool>(0),
            )
            .map_err(unavailable)
        })
        .await
    }

    /// Messages leased right now, by any holder (in flight, or held by a holder that is gone).
    pub async fn leased(&self) -> Result<u64, Error> {
        self.count("SELECT COUNT(*) FROM bus_messages WHERE lease IS NOT NULL", Vec::new()).await
    }

    /// Lease the next due message of `subscription`, dead-lettering any that ran out of
    /// attempts on the way. When nothing is due (checked first, without taking the file's
    /// write lock), says when the next message will be, if any is waiting.
    async fn lease(&self, subscription: &Name) -> Result<Leasing, Error> {
        let sub = subscription.clone();
        let holder = self.holder.id.clone();
        let asked_at = now_ms();
        let beat_needed = !self.holder.fresh(asked_at);
        let (leasing, dead_lettered) = self
            .with_conn(move |c| {
                let now = now_ms();
                let stale = now - millis(HOLDER_STALE);
                let (due, next): (bool, Option<i64>) = row_cached(
                    c,
                    concat!(
                        "SELECT EXISTS (SELECT 1 FROM bus_messages m WHERE subscription = ?1 AND ",
                        due!(),
                        "), (SELECT MIN(visible_at_ms) FROM bus_messages WHERE subscription = ?1)"
                    ),
                    params![sub.as_str(), now, stale],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .map_err(unavailable)?;
                if !due {
                    return Ok((Leasing::Idle { next_due_ms: next }, None));
                }
                let tx = c.transaction_with_behavior(TransactionBehavior::Immediate).map_err(unavailable)?;
                let (max_attempts, dead_letter, ack_deadline_ms): (u32, Option<String>, i64) = row_cached(
                    &tx,
                    "SELECT max_attempts, dead_letter_topic, ack_deadline_ms FROM bus_subscriptions WHERE name = ?1",
                    [sub.as_str()],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()
                .map_err(unavailable)?
                .ok_or(Error::UnknownTopic)?;
                let mut dead_lettered = None;
                loop {
                    // Due, or leased by a holder that is gone (no fresh heartbeat).
                    let row: Option<(i64, String, Vec<u8>, String, String, u32)> = row_cached(
                        &tx,
                        concat!(
                            "SELECT seq, message_id, data, attributes, published_at, attempts FROM bus_messages m
                             WHERE subscription = ?1 AND ",
                            due!(),
                            " ORDER BY visible_at_ms, seq LIMIT 1"
                        ),
                        params![sub.as_str(), now, stale],
                        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
                    )
                    .optional()
                    .map_err(unavailable)?;
                    let Some((seq, message_id, data, attributes, published_at, attempts)) = row else {
                        tx.commit().map_err(unavailable)?;
                        return Ok((Leasing::Idle { next_due_ms: None }, dead_lettered));
                    };
                    if attempts >= max_attempts {
                        // Its last lease expired unacknowledged: it is out of attempts.
                        if dead_letter_row(&tx, seq, None, &sub, dead_letter.as_deref())? {
                            dead_lettered.clone_from(&dead_letter);
                        }
                        continue;
                    }
                    let lease = uuid::Uuid::new_v4().simple().to_string();
                    // A lease names a holder that is alive now (its heartbeat task keeps it so):
                    // one beaten within the last second is, and is written again only then.
                    if beat_needed {
                        heartbeat(&tx, &holder, now).map_err(unavailable)?;
                    }
                    exec_cached(
                        &tx,
                        "UPDATE bus_messages SET attempts = attempts + 1, visible_at_ms = ?2, lease = ?3, holder = ?4
                         WHERE seq = ?1",
                        params![seq, now + ack_deadline_ms, lease, holder],
                    )
                    .map_err(unavailable)?;
                    tx.commit().map_err(unavailable)?;
                    let delivery = Delivery {
                        message_id,
                        subscription: sub.clone(),
                        data,
                        attributes: serde_json::from_str(&attributes).unwrap_or_default(),
                        attempt: Some(attempts + 1),
                        published_at: DateTime::parse_from_rfc3339(&published_at)
                            .map(|t| t.with_timezone(&Utc))
                            .unwrap_or_default(),
                    };
                    return Ok((Leasing::Leased(Leased { seq, lease, delivery }), dead_lettered));
                }
            })
            .await?;
        if beat_needed && matches!(leasing, Leasing::Leased(_)) {
            // Written at `now` inside the call, which is no earlier than this.
            self.holder.beaten(asked_at);
        }
        if let Some(topic) = dead_lettered {
            self.wakes.arrived(Some(&topic));
        }
        Ok(leasing)
    }

    /// Settle a lease. A stale lease (expired and re-leased elsewhere) changes nothing.
    async fn settle(&self, leased: &Leased, outcome: Outcome) -> Result<(), Error> {
        let (seq, lease, attempt, sub) = (
            leased.seq,
            leased.lease.clone(),
            leased.delivery.attempt.unwrap_or(1),
            leased.delivery.subscription.clone(),
        );
        let dead_lettered = self
            .with_conn(move |c| {
                let tx = c.transaction_with_behavior(TransactionBehavior::Immediate).map_err(unavailable)?;
                let mut dead_lettered = None;
                match outcome {
                    Outcome::Ack => {
                        exec_cached(&tx, "DELETE FROM bus_messages WHERE seq = ?1 AND lease = ?2", params![seq, lease])
                            .map_err(unavailable)?;
                    }
                    Outcome::Nack => {
                        let (max_attempts, dead_letter, min_ms, max_ms): (u32, Option<String>, i64, i64) = row_cached(
                            &tx,

                                "SELECT max_attempts, dead_letter_topic, min_backoff_ms, max_backoff_ms FROM bus_subscriptions WHERE name = ?1",
                                [sub.as_str()],
                                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                            )
                            .map_err(unavailable)?;
                        if attempt >= max_attempts {
                            if dead_letter_row(&tx, seq, Some(&lease), &sub, dead_letter.as_deref())? {
                                dead_lettered = dead_letter;
                            }
                        } else {
                            let factor = 2i64.saturating_pow(attempt.saturating_sub(1).min(16));
                            let backoff = min_ms.saturating_mul(factor).min(max_ms);
                            exec_cached(&tx,
                                "UPDATE bus_messages SET visible_at_ms = ?3, lease = NULL, holder = NULL
                                 WHERE seq = ?1 AND lease = ?2",
                                params![seq, lease, now_ms() + backoff],
                            )
                            .map_err(unavailable)?;
                        }
                    }
                }
                tx.commit().map_err(unavailable)?;
                Ok(dead_lettered)
            })
            .await?;
        if let Some(topic) = dead_lettered {
            self.wakes.arrived(Some(&topic));
        }
        self.wakes.touched(&leased.delivery.attributes);
        self.wakes.any.notify_waiters();
        Ok(())
    }

    /// Follow the messages whose attribute `key` is one of `values` (say, some jobs' stage
    /// events): [`Follow::changed`] resolves when this process publishes or settles one.
    pub fn follow<'a>(&self, key: &str, values: impl IntoIterator<Item = &'a str>) -> Follow {
        self.wakes.follow(key, values)
    }

    /// Resolves at the next change this process makes to the queue (a publish, a settled
    /// delivery, a release): for following progress without polling. Changes by other
    /// processes do not wake it; bound the wait.
    pub fn changed(&self) -> tokio::sync::futures::OwnedNotified {
        self.wakes.any.clone().notified_owned()
    }

    /// The topic of `subscription`.
    async fn topic_of(&self, subscription: &Name) -> Result<String, Error> {
        let sub = subscription.to_string();
        self.with_conn(move |c| {
            row_cached(c, "SELECT topic FROM bus_subscriptions WHERE name = ?1", [&sub], |r| r.get(0))
                .optional()
                .map_err(unavailable)?
                .ok_or(Error::UnknownTopic)
        })
        .await
    }

    /// Deliver `subscription` to `handler` with up to `concurrency` deliveries in flight,
    /// until the returned handle is aborted. The subscriber is woken by messages published to
    /// its topic in this process, and otherwise looks again when the next waiting message is
    /// due, and at least every [`HEARTBEAT`] (for other processes' messages).
    pub fn spawn_subscriber(
        &self,
        subscription: Name,
        handler: Arc<dyn Handler>,
        concurrency: usize,
    ) -> JoinHandle<()> {
        self.beat();
        let bus = self.clone();
        tokio::spawn(async move {
            let woken = loop {
                match bus.topic_of(&subscription).await {
                    Ok(topic) => break bus.wakes.subscribe(topic),
                    Err(e) => {
                        tracing::warn!(error = %e, subscription = %subscription, "the local subscription could not be read");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
            };
            let slots = Arc::new(Semaphore::new(concurrency.max(1)));
            loop {
                let Ok(permit) = slots.clone().acquire_owned().await else {
                    return;
                };
                match bus.lease(&subscription).await {
                    Ok(Leasing::Leased(leased)) => {
                        let (bus, handler, woken) = (bus.clone(), handler.clone(), woken.clone());
                        tokio::spawn(async move {
                            let outcome = handler.handle(leased.delivery.clone()).await;
                            if let Err(e) = bus.settle(&leased, outcome).await {
                                tracing::warn!(error = %e, "settling a local delivery failed; the lease will expire");
                            }
                            drop(permit);
                            // A nack changes when the next message is due: look again.
                            if outcome == Outcome::Nack {
                                woken.notify_one();
                            }
                        });
                    }
                    Ok(Leasing::Idle { next_due_ms }) => {
                        drop(permit);
                        let wait = match next_due_ms {
                            Some(due) => Duration::from_millis(
                                u64::try_from(due - now_ms()).unwrap_or(0).clamp(1, millis(HEARTBEAT) as u64),
                            ),
                            None => HEARTBEAT,
                        };
                        // A wake that came while leasing is kept (notify_one stores one permit).
                        let _ = tokio::time::timeout(wait, woken.notified()).await;
                    }
                    Err(e) => {
                        drop(permit);
                        tracing::warn!(error = %e, subscription = %subscription, "leasing from the local queue failed");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
            }
        })
    }
}

/// Create the tables, add the lease's holder to a queue file written before holders existed
/// (in one transaction, so two processes opening it at once cannot both add it), and forget
/// holders whose heartbeat stopped over an hour ago.
fn migrate(conn: &mut Connection) -> Result<(), Error> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(unavailable)?;
    tx.execute_batch(SCHEMA).map_err(unavailable)?;
    let has_holder = tx
        .prepare("SELECT 1 FROM pragma_table_info('bus_messages') WHERE name = 'holder'")
        .and_then(|mut q| q.exists([]))
        .map_err(unavailable)?;
    if !has_holder {
        tx.execute_batch("ALTER TABLE bus_messages ADD COLUMN holder TEXT").map_err(unavailable)?;
    }
    // Holders killed long ago: a missing row reads as dead just the same, so the table stays
    // as small as the processes that are running.
    exec_cached(&tx, "DELETE FROM bus_holders WHERE heartbeat_ms < ?1", [now_ms() - 3_600_000]).map_err(unavailable)?;
    tx.commit().map_err(unavailable)
}

/// Mark `holder` alive now.
fn heartbeat(c: &Connection, holder: &str, at_ms: i64) -> rusqlite::Result<usize> {
    exec_cached(
        c,
        "INSERT INTO bus_holders (holder, heartbeat_ms) VALUES (?1, ?2)
         ON CONFLICT (holder) DO UPDATE SET heartbeat_ms = MAX(heartbeat_ms, excluded.heartbeat_ms)",
        params![holder, at_ms],
    )
}

/// Give back `holder`'s leases as never leased (due now, the attempt not counted) and forget
/// the holder.
fn release_rows(c: &mut Connection, holder: &str) -> Result<u64, Error> {
    let tx = c.transaction_with_behavior(TransactionBehavior::Immediate).map_err(unavailable)?;
    let released = exec_cached(
        &tx,
        "UPDATE bus_messages SET lease = NULL, holder = NULL, visible_at_ms = ?2, attempts = MAX(attempts - 1, 0)
             WHERE holder = ?1",
        params![holder, now_ms()],
    )
    .map_err(unavailable)?;
    exec_cached(&tx, "DELETE FROM bus_holders WHERE holder = ?1", [holder]).map_err(unavailable)?;
    tx.commit().map_err(unavailable)?;
    Ok(u64::try_from(released).unwrap_or(0))
}

/// Move message `seq` (still held by `lease`, when given) to `dead_letter`'s subscriptions
/// with the source-subscription attribute, or drop it when there is no dead-letter topic.
/// Returns whether a message was moved.
fn dead_letter_row(
    tx: &rusqlite::Transaction<'_>,
    seq: i64,
    lease: Option<&str>,
    subscription: &Name,
    dead_letter: Option<&str>,
) -> Result<bool, Error> {
    // (message id, data, attributes, published at, lease holder)
    type Row = (String, Vec<u8>, String, String, Option<String>);
    let row: Option<Row> = row_cached(
        tx,
        "SELECT message_id, data, attributes, published_at, lease FROM bus_messages WHERE seq = ?1",
        [seq],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
    )
    .optional()
    .map_err(unavailable)?;
    let Some((message_id, data, attributes, published_at, held_by)) = row else {
        return Ok(false);
    };
    if lease.is_some() && held_by.as_deref() != lease {
        return Ok(false);
    }
    if let Some(dead) = dead_letter {
        let mut attrs: BTreeMap<String, String> = serde_json::from_str(&attributes).unwrap_or_default();
        attrs.insert(DEAD_LETTER_SOURCE_ATTRIBUTE.to_owned(), subscription.to_string());
        fan_out(tx, dead, &message_id, &data, &attrs, &published_at)?;
    }
    exec_cached(tx, "DELETE FROM bus_messages WHERE seq = ?1", [seq]).map_err(unavailable)?;
    Ok(true)
}

/// Copy a message to every subscription of `topic`, inside `tx`.
fn fan_out(
    tx: &rusqlite::Transaction<'_>,
    topic: &str,
    message_id: &str,
    data: &[u8],
    attributes: &BTreeMap<String, String>,
    published_at: &str,
) -> Result<usize, Error> {
    let attributes = serde_json::to_string(attributes).map_err(|_| Error::Invalid("attributes"))?;
    exec_cached(
        tx,
        "INSERT INTO bus_messages (message_id, subscription, data, attributes, published_at, attempts, visible_at_ms)
         SELECT ?1, name, ?2, ?3, ?4, 0, ?5 FROM bus_subscriptions WHERE topic = ?6",
        params![message_id, data, attributes, published_at, now_ms(), topic],
    )
    .map_err(unavailable)
}

#[async_trait]
impl Bus for LocalBus {
    async fn publish(&self, message: OutboundMessage) -> Result<String, Error> {
        let id = uuid::Uuid::now_v7().simple().to_string();
        let message_id = id.clone();
        let topic = message.topic.clone();
        let attributes = message.attributes.clone();
        self.with_conn(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate).map_err(unavailable)?;
            let known: Option<String> =
                row_cached(&tx, "SELECT name FROM bus_topics WHERE name = ?1", [message.topic.as_str()], |r| r.get(0))
                    .optional()
                    .map_err(unavailable)?;
            if known.is_none() {
                return Err(Error::UnknownTopic);
            }
            let published_at = Utc::now().to_rfc3339_opts(SecondsFormat::Micros, true);
            fan_out(&tx, message.topic.as_str(), &message_id, &message.data, &message.attributes, &published_at)?;
            tx.commit().map_err(unavailable)
        })
        .await?;
        self.wakes.arrived(Some(topic.as_str()));
        self.wakes.touched(&attributes);
        Ok(id)
    }
}

#[cfg(test)]
mod tests;
