//! The one registry of functions, topics and subscriptions. The local runner, the
//! provisioning command and the Terraform all derive from it.

use std::time::Duration;

use harmonia_bus::{Name, SubscriptionSpec};
use harmonia_contracts::event::TOPICS;

/// Every deployable function.
pub const FUNCTIONS: &[&str] = &[
    "ingest",
    "analyze",
    "strategize",
    "plan",
    "draft",
    "review",
    "policy",
    "publish",
    "verify",
    "operator",
    "deadletter",
    "nova",
];

/// Which function consumes which topic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// The consuming function.
    pub function: &'static str,
    /// The topic it subscribes to.
    pub topic: &'static str,
    /// Whether it calls a model (longer ack deadline).
    pub calls_model: bool,
}

/// Every subscription of the pipeline (besides the dead-letter recorder's).
pub const ROUTES: &[Route] = &[
    Route { function: "analyze", topic: "source.ingested", calls_model: true },
    Route { function: "strategize", topic: "analysis.completed", calls_model: true },
    Route { function: "plan", topic: "strategy.approved", calls_model: true },
    Route { function: "draft", topic: "plan.item_selected", calls_model: true },
    Route { function: "draft", topic: "review.revise", calls_model: true },
    Route { function: "review", topic: "draft.written", calls_model: true },
    Route { function: "policy", topic: "review.passed", calls_model: false },
    Route { function: "publish", topic: "draft.approved", calls_model: false },
    Route { function: "verify", topic: "post.published", calls_model: false },
];

/// Delivery attempts before a message is dead-lettered.
pub const MAX_ATTEMPTS: u32 = 5;

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
}

impl Timing {
    /// Pub/Sub in production: 10 s to 10 min backoff; 5 min for model stages, 1 min otherwise.
    pub const CLOUD: Timing = Timing {
        min_backoff: Duration::from_secs(10),
        max_backoff: Duration::from_secs(600),
        model_ack_deadline: Duration::from_secs(300),
        ack_deadline: Duration::from_secs(60),
    };
    /// The embedded runner (offline model): quick retries, and a message held by a crashed
    /// process comes back within 30 s.
    pub const LOCAL: Timing = Timing {
        min_backoff: Duration::from_millis(200),
        max_backoff: Duration::from_secs(5),
        model_ack_deadline: Duration::from_secs(30),
        ack_deadline: Duration::from_secs(15),
    };
}

fn name(text: String) -> Name {
    // Registry names are static and valid; a test checks every one.
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

/// Every topic: each stage topic and its dead-letter topic.
pub fn topics(prefix: &str) -> Vec<Name> {
    TOPICS.iter().flat_map(|(t, _)| [topic(prefix, t), dead_letter_topic(prefix, t)]).collect()
}

/// The pipeline's subscriptions, each with its function.
pub fn subscriptions(prefix: &str, timing: Timing) -> Vec<(&'static str, SubscriptionSpec)> {
    ROUTES
        .iter()
        .map(|r| {
            let spec = SubscriptionSpec {
                name: name(format!("{prefix}{}.{}", r.topic, r.function)),
                topic: topic(prefix, r.topic),
                max_attempts: MAX_ATTEMPTS,
                dead_letter_topic: Some(dead_letter_topic(prefix, r.topic)),
                ack_deadline: if r.calls_model { timing.model_ack_deadline } else { timing.ack_deadline },
                min_backoff: timing.min_backoff,
                max_backoff: timing.max_backoff,
            };
            (r.function, spec)
        })
        .collect()
}

/// The dead-letter recorder's subscriptions: one per dead-letter topic. Its own failures are
/// retried without a further dead letter.
pub fn dead_letter_subscriptions(prefix: &str, timing: Timing) -> Vec<SubscriptionSpec> {
    TOPICS
        .iter()
        .map(|(t, _)| SubscriptionSpec {
            name: name(format!("{prefix}{t}.dead-letter.deadletter")),
            topic: dead_letter_topic(prefix, t),
            max_attempts: 100,
            dead_letter_topic: None,
            ack_deadline: timing.ack_deadline,
            min_backoff: timing.min_backoff,
            max_backoff: timing.max_backoff,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_are_valid_and_every_route_is_a_known_topic_and_function() {
        for prefix in ["", "harmonia-"] {
            assert_eq!(topics(prefix).len(), TOPICS.len() * 2);
            for (function, spec) in subscriptions(prefix, Timing::CLOUD) {
                assert!(FUNCTIONS.contains(&function));
                assert!(topics(prefix).contains(&spec.topic));
                assert!(spec.dead_letter_topic.as_ref().is_some_and(|d| topics(prefix).contains(d)));
            }
            assert_eq!(dead_letter_subscriptions(prefix, Timing::LOCAL).len(), TOPICS.len());
        }
        for r in ROUTES {
            assert!(TOPICS.iter().any(|(t, _)| *t == r.topic), "{}", r.topic);
        }
    }
}
