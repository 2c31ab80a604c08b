//! The backends a step works with.

use std::sync::Arc;

use harmonia_agents::Runtime;
use harmonia_bus::{Bus, OutboundMessage};
use harmonia_contracts::event::{EventPayload, StageEvent};
use harmonia_contracts::ids::OperatorId;
use harmonia_store::Store;

use crate::step;
use harmonia_connectors::Connector;

/// Everything a step needs; cheap to share.
pub struct Env {
    /// State.
    pub store: Arc<dyn Store>,
    /// Blobs: long sources' transcripts and frames.
    pub blobs: Arc<dyn harmonia_blob::Blobs>,
    /// The bucket operators upload sources to, when this deployment takes uploads.
    pub uploads: Option<Arc<dyn harmonia_blob::Uploads>>,
    /// Events.
    pub bus: Arc<dyn Bus>,
    /// The agent runtime.
    pub runtime: Arc<Runtime>,
    /// The deployment's publishing connector (the sandbox, or a webhook).
    pub connector: Arc<dyn Connector>,
    /// Channel accounts: connectors holding one channel's own credentials (Bluesky).
    pub accounts: harmonia_connectors::accounts::Accounts,
    /// Where posts go from this deployment, which policy judges drafts against: derived from
    /// the connectors above where this function holds them, else as declared
    /// ([`harmonia_connectors::reach`]).
    pub reach: harmonia_connectors::reach::Reach,
    /// What time it is for the dispatcher, policy, planning and the window checks.
    pub clock: Arc<dyn crate::clock::Clock>,
    /// Prefix of every topic name (empty locally; e.g. `harmonia-` in a shared project).
    pub topic_prefix: String,
    /// The identity agent sessions run under.
    pub pipeline_user: OperatorId,
    /// How long a step's in-flight claim holds off duplicate deliveries (the longest ack
    /// deadline: after it, the message comes back anyway).
    pub step_lease: std::time::Duration,
    /// The step claims this process holds, given back when it stops
    /// ([`crate::step::claim::release_held`]).
    pub claims: crate::step::claim::Held,
    /// Whether another process holding a claim is alive, where that can be told (the
    /// embedded default); `None` leaves a crashed holder's claim to lapse with its lease.
    pub liveness: Option<Arc<dyn crate::step::claim::Liveness>>,
    /// The disk faults this process's steps met, for a command following a job to stop on.
    pub faults: crate::step::Faults,
    /// When this process last swept each workspace ([`crate::step::sweep::in_background`]).
    pub sweeps: crate::step::sweep::Sweeps,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env").field("topic_prefix", &self.topic_prefix).finish_non_exhaustive()
    }
}

impl Env {
    /// The connector `channel` publishes through here: the deployment's own when the channel
    /// names its kind, else the channel's account; `None` when this deployment has neither.
    pub fn connector_for(&self, channel: &harmonia_contracts::domain::Channel) -> Option<&Arc<dyn Connector>> {
        harmonia_connectors::accounts::resolve(&self.connector, &self.accounts, channel)
    }

    /// The bus message for a stage event. The event is created in an exported
    /// `create {topic}` span under the current span, whose context becomes its `traceparent`,
    /// so the stage consuming it has an exported parent. A message that cannot be built (an
    /// unencodable event, a bad topic name) fails the job with its code: retrying cannot help.
    pub fn message<P: EventPayload>(&self, event: &StageEvent<P>) -> Result<OutboundMessage, step::Error> {
        let mut event = event.clone();
        crate::trace::created(&self.topic_prefix, &mut event);
        OutboundMessage::event(&self.topic_prefix, &event).map_err(|e| step::Error::fail(e.code()))
    }

    /// Publish messages in order.
    pub async fn publish(&self, messages: &[OutboundMessage]) -> Result<(), step::Error> {
        for m in messages {
            self.bus.publish(m.clone()).await.map_err(|e| step::Error::from(harmonia_contracts::Error::from(e)))?;
        }
        Ok(())
    }
}
