//! Topic and subscription names, their timing, and the handler serving each subscription.

use std::sync::Arc;
use std::time::Duration;

use harmonia_bus::{Handler, Name, SubscriptionSpec};
use harmonia_contracts::event::TOPICS;

use super::{Function, ROUTES};
use crate::Env;
use crate::steps::{DeadLetterRecorder, UploadIngest};

/// The longest step lease a deployment may set (`HARMONIA_STEP_LEASE_SECS`): Pub/Sub's
/// longest ack deadline.
pub const MAX_STEP_LEASE: Duration = Duration::from_secs(600);

/// The topic the sources bucket's notification publishes to: Cloud Storage's own messages (an
/// object's JSON API resource), not a stage event. The ingest function consumes it
/// ([`UploadIngest`](crate::steps::UploadIngest)); like every topic it has a dead-letter topic.
pub const SOURCE_UPLOADS: &str = "source.uploaded";

/// Every topic the pipeline consumes: each stage event's, then [`SOURCE_UPLOADS`].
fn consumed_topics() -> impl Iterator<Item = &'static str> {
    TOPICS.iter().map(|(t, _)| *t).chain(std::iter::once(SOURCE_UPLOADS))
}

/// Retry timing and ack deadlines of the subscriptions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// First retry delay.
    pub min_backoff: Duration,
    /// Longest retry delay.
    pub max_backoff: Duration,
    /// How long a model-calling stage may hold a message before it is redelivered.
    pub model_ack_deadline: Duration,
    /// The same for the other stages.
    pub ack_deadline: Duration,
    /// Delivery attempts before a message is dead-lettered. A step whose process died holds
    /// its claim until the lease lapses, and every redelivery until then is refused: where no
    /// one can tell that the holder died (the deployment), the retries must outlast the
    /// longest lease, or the job's message is dead-lettered while nothing is wrong with it.
    pub max_attempts: u32,
}

impl Timing {
    /// Pub/Sub in production: 10 s to 10 min backoff; 5 min for model stages, 1 min otherwise;
    /// 10 attempts, whose retries span about 40 minutes (past [`MAX_STEP_LEASE`]).
    pub const CLOUD: Timing = Timing {
        min_backoff: Duration::from_secs(10),
        max_backoff: Duration::from_secs(600),
        model_ack_deadline: Duration::from_secs(300),
        ack_deadline: Duration::from_secs(60),
        max_attempts: 10,
    };
    /// The embedded runner (offline model): quick retries, and a message held by a crashed
    /// process comes back within 30 s; 5 attempts (the local queue knows which processes are
    /// alive, so a dead one's claim is taken over at once).
    pub const LOCAL: Timing = Timing {
        min_backoff: Duration::from_millis(200),
        max_backoff: Duration::from_secs(5),
        model_ack_deadline: Duration::from_secs(30),
        ack_deadline: Duration::from_secs(15),
        max_attempts: 5,
    };

    /// Retries 20 ms to 200 ms apart with `ack_deadline` for every stage and 5 attempts: for
    /// tests and drills, where a failure must come back at once.
    pub const fn quick(ack_deadline: Duration) -> Timing {
        Timing {
            min_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_millis(200),
            model_ack_deadline: ack_deadline,
            ack_deadline,
            max_attempts: 5,
        }
    }

    /// How long after the first delivery the last attempt comes, at the longest (each
    /// redelivery after its backoff).
    pub fn retry_span(&self) -> Duration {
        (1..self.max_attempts).map(|attempt| harmonia_bus::backoff(self.min_backoff, self.max_backoff, attempt)).sum()
    }
}

fn name(text: String) -> Name {
    // The prefix is validated where configuration is read, and the rest of every name is a
    // registry constant; a test checks them all, so this cannot fail at run time.
    text.parse().unwrap_or_else(|_| panic!("invalid registry name {text}"))
}

/// A topic's full name.
pub fn topic(prefix: &str, topic: &str) -> Name {
    name(format!("{prefix}{topic}"))
}

/// A topic's dead-letter topic.
pub fn dead_letter_topic(prefix: &str, topic: &str) -> Name {
    name(format!("{prefix}{topic}.dead-letter"))
}

/// Every topic: each stage topic and [`SOURCE_UPLOADS`], each with its dead-letter topic.
pub fn topics(prefix: &str) -> Vec<Name> {
    consumed_topics().flat_map(|t| [topic(prefix, t), dead_letter_topic(prefix, t)]).collect()
}

/// The ingest function's subscription to [`SOURCE_UPLOADS`].
pub fn upload_subscription(prefix: &str, timing: Timing) -> SubscriptionSpec {
    SubscriptionSpec {
        name: name(format!("{prefix}{SOURCE_UPLOADS}.{}", Function::Ingest)),
        topic: topic(prefix, SOURCE_UPLOADS),
        max_attempts: timing.max_attempts,
        dead_letter_topic: Some(dead_letter_topic(prefix, SOURCE_UPLOADS)),
        ack_deadline: timing.ack_deadline,
        min_backoff: timing.min_backoff,
        max_backoff: timing.max_backoff,
    }
}

/// The pipeline's subscriptions, each with its function: one per route, in [`ROUTES`]'
/// order, then the ingest function's [`upload_subscription`].
pub fn subscriptions(prefix: &str, timing: Timing) -> Vec<(Function, SubscriptionSpec)> {
    let mut all: Vec<_> = ROUTES
        .iter()
        .map(|r| {
            let spec = SubscriptionSpec {
                name: name(format!("{prefix}{}.{}", r.topic(), r.function())),
                topic: topic(prefix, r.topic()),
                max_attempts: timing.max_attempts,
                dead_letter_topic: Some(dead_letter_topic(prefix, r.topic())),
                ack_deadline: if r.calls_model() { timing.model_ack_deadline } else { timing.ack_deadline },
                min_backoff: timing.min_backoff,
                max_backoff: timing.max_backoff,
            };
            (r.function(), spec)
        })
        .collect();
    all.push((Function::Ingest, upload_subscription(prefix, timing)));
    all
}

/// The dead-letter recorder's subscriptions: one per dead-letter topic. Its own failures are
/// retried without a further dead letter.
pub fn dead_letter_subscriptions(prefix: &str, timing: Timing) -> Vec<SubscriptionSpec> {
    consumed_topics()
        .map(|t| SubscriptionSpec {
            name: name(format!("{prefix}{t}.dead-letter.{}", Function::Deadletter)),
            topic: dead_letter_topic(prefix, t),
            max_attempts: 100,
            dead_letter_topic: None,
            ack_deadline: timing.ack_deadline,
            min_backoff: timing.min_backoff,
            max_backoff: timing.max_backoff,
        })
        .collect()
}

/// One subscription with the function that owns it and the handler that serves it.
pub struct Subscriber {
    /// The function it belongs to.
    pub function: Function,
    /// The subscription.
    pub spec: SubscriptionSpec,
    /// What handles its deliveries.
    pub handler: Arc<dyn Handler>,
}

/// Every subscription of the pipeline with the handler that serves it: each route's step,
/// the ingest of uploads, and the dead-letter recorder on every dead-letter topic.
pub fn handlers(env: &Arc<Env>, timing: Timing) -> Vec<Subscriber> {
    // `subscriptions` lists the routes in order, then the uploads.
    let routed = ROUTES
        .iter()
        .zip(subscriptions(&env.topic_prefix, timing))
        .map(|(route, (function, spec))| Subscriber { function, spec, handler: route.handler(env.clone()) });
    let uploads = std::iter::once(Subscriber {
        function: Function::Ingest,
        spec: upload_subscription(&env.topic_prefix, timing),
        handler: Arc::new(UploadIngest::new(env.clone())),
    });
    let recorder: Arc<dyn Handler> = Arc::new(DeadLetterRecorder::new(env.clone()));
    let dead_letters = dead_letter_subscriptions(&env.topic_prefix, timing).into_iter().map(|spec| Subscriber {
        function: Function::Deadletter,
        spec,
        handler: recorder.clone(),
    });
    routed.chain(uploads).chain(dead_letters).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::consumers;

    #[test]
    fn a_deployed_message_is_retried_past_the_longest_step_lease() {
        // The first redelivery that can take a crashed holder's claim over comes after the
        // lease; it must come before the message is dead-lettered.
        assert!(Timing::CLOUD.retry_span() > MAX_STEP_LEASE, "{:?}", Timing::CLOUD.retry_span());
        assert_eq!(Timing::CLOUD.retry_span(), Duration::from_secs(10 + 20 + 40 + 80 + 160 + 320 + 600 * 3));
        for (_, spec) in subscriptions("", Timing::CLOUD) {
            assert_eq!(spec.max_attempts, Timing::CLOUD.max_attempts, "{}", spec.name);
            assert!((5..=100).contains(&spec.max_attempts), "Pub/Sub takes 5 to 100 attempts: {}", spec.name);
        }
    }

    #[test]
    fn registry_names_are_valid_and_every_route_is_a_known_topic() {
        for prefix in ["", "harmonia-"] {
            assert_eq!(topics(prefix).len(), (TOPICS.len() + 1) * 2);
            let subscribed = subscriptions(prefix, Timing::CLOUD);
            assert_eq!(subscribed.len(), ROUTES.len() + 1);
            for (function, spec) in subscribed {
                // Stages consume stage events; only ingest consumes the uploads.
                let uploads = spec.topic == topic(prefix, SOURCE_UPLOADS);
                assert!(function.is_stage() != uploads && (!uploads || function == Function::Ingest), "{function}");
                assert!(spec.name.as_str().ends_with(&format!(".{function}")));
                assert!(topics(prefix).contains(&spec.topic));
                assert!(spec.dead_letter_topic.as_ref().is_some_and(|d| topics(prefix).contains(d)));
            }
            assert_eq!(dead_letter_subscriptions(prefix, Timing::LOCAL).len(), TOPICS.len() + 1);
        }
        for r in ROUTES {
            assert!(TOPICS.iter().any(|(t, _)| *t == r.topic()), "{}", r.topic());
            assert_eq!(r.function().as_str(), r.stage().as_str());
        }
    }

    #[test]
    fn a_topic_s_consumers_come_from_the_typed_routes() {
        use harmonia_contracts::event::{EventPayload, ItemSelected, PolicyPassed, RevisionRequested, Stage};
        assert_eq!(consumers(ItemSelected::TOPIC).collect::<Vec<_>>(), [Stage::Draft]);
        assert_eq!(consumers(RevisionRequested::TOPIC).collect::<Vec<_>>(), [Stage::Draft]);
        // A human gate: nothing consumes it.
        assert_eq!(consumers(PolicyPassed::TOPIC).count(), 0);
    }
}
