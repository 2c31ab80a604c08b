//! Google Cloud Pub/Sub backend of the Harmonia event bus.
//!
//! [`PubSubBus`] publishes through the official client (gRPC) and provisions topics and push
//! subscriptions through its admin client (REST). [`push`] is the receiving side, as Cloud Run
//! gets it: an axum route that decodes the push body, calls a [`Handler`], and answers 204 to
//! ack or 503 to have Pub/Sub redeliver (and eventually dead-letter) the message. Both sides
//! count the messages and their sizes on the process's meter (`harmonia.pubsub.messages`,
//! `harmonia.pubsub.bytes`).
//!
//! The client ignores `PUBSUB_EMULATOR_HOST`, so [`PubSubConfig::from_env`] maps it to an
//! `http://` endpoint with anonymous credentials; otherwise Application Default Credentials
//! and the public endpoint are used.

pub mod push;
mod usage;

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use google_cloud_gax::error::rpc::Code as RpcCode;
use google_cloud_pubsub::client::{BasePublisher, Publisher, SubscriptionAdmin, TopicAdmin};
use google_cloud_pubsub::model::{DeadLetterPolicy, Message, PushConfig, RetryPolicy, Subscription};
use harmonia_bus::{Bus, Error, Name, OutboundMessage, SubscriptionSpec};
use tokio::sync::Mutex;

/// Where and how to reach Pub/Sub.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PubSubConfig {
    /// Google Cloud project id.
    pub project: String,
    /// `http://host:port` of an emulator; `None` for the real service.
    pub emulator_endpoint: Option<String>,
}

impl PubSubConfig {
    /// `project`, with `PUBSUB_EMULATOR_HOST` (when set) as an emulator endpoint.
    pub fn from_env(project: impl Into<String>) -> Self {
        let emulator_endpoint = std::env::var("PUBSUB_EMULATOR_HOST")
            .ok()
            .filter(|h| !h.is_empty())
            .map(|h| if h.contains("://") { h } else { format!("http://{h}") });
        Self { project: project.into(), emulator_endpoint }
    }

    /// `projects/{project}/topics/{topic}`.
    pub fn topic_path(&self, topic: &Name) -> String {
        format!("projects/{}/topics/{topic}", self.project)
    }

    /// `projects/{project}/subscriptions/{subscription}`.
    pub fn subscription_path(&self, subscription: &Name) -> String {
        format!("projects/{}/subscriptions/{subscription}", self.project)
    }
}

fn rpc_error(e: &google_cloud_pubsub::Error) -> Error {
    match e.status().map(|s| s.code) {
        Some(RpcCode::NotFound) => Error::UnknownTopic,
        Some(RpcCode::InvalidArgument) => Error::Invalid("Pub/Sub refused the request as invalid"),
        Some(code) => Error::Unavailable { kind: format!("{code:?}").to_lowercase() },
        None if e.is_timeout() => Error::Unavailable { kind: "timeout".into() },
        None => Error::Unavailable { kind: "transport".into() },
    }
}

fn already_exists(e: &google_cloud_pubsub::Error) -> bool {
    e.status().is_some_and(|s| s.code == RpcCode::AlreadyExists)
}

fn wkt_duration(d: Duration) -> Result<google_cloud_wkt::Duration, Error> {
    google_cloud_wkt::Duration::try_from(d).map_err(|_| Error::Invalid("duration out of range"))
}

/// The Pub/Sub bus: a publisher per topic (created on first use) and the admin clients.
pub struct PubSubBus {
    config: PubSubConfig,
    base: BasePublisher,
    publishers: Mutex<HashMap<Name, Publisher>>,
    topics: TopicAdmin,
    subscriptions: SubscriptionAdmin,
}

impl std::fmt::Debug for PubSubBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PubSubBus").field("config", &self.config).finish_non_exhaustive()
    }
}

macro_rules! client {
    ($builder:expr, $config:expr) => {{
        let builder = $builder;
        let built = match &$config.emulator_endpoint {
            Some(endpoint) => {
                builder
                    .with_endpoint(endpoint.clone())
                    .with_credentials(google_cloud_auth::credentials::anonymous::Builder::new().build())
                    .build()
                    .await
            }
            None => builder.build().await,
        };
        built.map_err(|_| Error::Unavailable { kind: "pubsub_connect".into() })?
    }};
}

impl PubSubBus {
    /// Connect the publisher and admin clients.
    pub async fn connect(config: PubSubConfig) -> Result<Self, Error> {
        let base = client!(BasePublisher::builder(), config);
        let topics = client!(TopicAdmin::builder(), config);
        let subscriptions = client!(SubscriptionAdmin::builder(), config);
        Ok(Self { config, base, publishers: Mutex::new(HashMap::new()), topics, subscriptions })
    }

    /// The configuration.
    pub fn config(&self) -> &PubSubConfig {
        &self.config
    }

    /// Create a topic; an existing one is left as it is.
    pub async fn create_topic(&self, topic: &Name) -> Result<(), Error> {
        match self.topics.create_topic().set_name(self.config.topic_path(topic)).send().await {
            Ok(_) => Ok(()),
            Err(e) if already_exists(&e) => Ok(()),
            Err(e) => Err(rpc_error(&e)),
        }
    }

    /// Create a push subscription delivering to `push_endpoint`, with the spec's ack
    /// deadline, retry backoff and dead-letter policy. An existing one is left as it is.
    pub async fn create_push_subscription(&self, spec: &SubscriptionSpec, push_endpoint: &str) -> Result<(), Error> {
        if !(5..=100).contains(&spec.max_attempts) {
            return Err(Error::Invalid("Pub/Sub allows 5-100 delivery attempts"));
        }
        let ack_deadline = i32::try_from(spec.ack_deadline.as_secs().clamp(10, 600)).unwrap_or(600);
        let mut subscription = Subscription::new()
            .set_name(self.config.subscription_path(&spec.name))
            .set_topic(self.config.topic_path(&spec.topic))
            .set_push_config(PushConfig::new().set_push_endpoint(push_endpoint))
            .set_ack_deadline_seconds(ack_deadline)
            .set_retry_policy(
                RetryPolicy::new()
                    .set_minimum_backoff(wkt_duration(spec.min_backoff)?)
                    .set_maximum_backoff(wkt_duration(spec.max_backoff)?),
            );
        if let Some(dead) = &spec.dead_letter_topic {
            subscription = subscription.set_dead_letter_policy(
                DeadLetterPolicy::new()
                    .set_dead_letter_topic(self.config.topic_path(dead))
                    .set_max_delivery_attempts(i32::try_from(spec.max_attempts).unwrap_or(5)),
            );
        }
        match self.subscriptions.create_subscription().with_request(subscription).send().await {
            Ok(_) => Ok(()),
            Err(e) if already_exists(&e) => Ok(()),
            Err(e) => Err(rpc_error(&e)),
        }
    }

    async fn publisher(&self, topic: &Name) -> Publisher {
        let mut publishers = self.publishers.lock().await;
        publishers
            .entry(topic.clone())
            .or_insert_with(|| {
                // One message per request: stage events are few and latency matters more
                // than batching.
                self.base.publisher(self.config.topic_path(topic)).set_message_count_threshold(1).build()
            })
            .clone()
    }
}

#[async_trait]
impl Bus for PubSubBus {
    async fn publish(&self, message: OutboundMessage) -> Result<String, Error> {
        let publisher = self.publisher(&message.topic).await;
        let (topic, size) = (message.topic.clone(), usage::size(&message.data, &message.attributes));
        let msg = Message::new().set_data(message.data).set_attributes(message.attributes);
        let id = publisher.publish(msg).await.map_err(|e| match e {
            google_cloud_pubsub::error::PublishError::Rpc(inner) => rpc_error(&inner),
            _ => Error::Unavailable { kind: "publisher_shutdown".into() },
        })?;
        usage::usage().published(topic.as_str(), size);
        Ok(id)
    }
}

#[cfg(test)]
mod tests;
