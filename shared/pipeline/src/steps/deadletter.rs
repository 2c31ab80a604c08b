use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine as _;
use chrono::Utc;
use harmonia_bus::{DEAD_LETTER_SOURCE_ATTRIBUTE, Delivery, Handler, Outcome};
use harmonia_contracts::ids::WorkspaceId;
use harmonia_store::{create_if_absent, encode};
use sha2::Digest;

use crate::Env;
use crate::records::{DEAD_LETTERS, DeadLetter, doc_id};

/// Records every dead-lettered message durably, under the workspace its attributes name (or
/// the `system` workspace for messages too broken to name one). Nothing is dropped silently.
pub struct DeadLetterRecorder {
    env: Arc<Env>,
}

impl DeadLetterRecorder {
    /// A recorder writing through `env`'s store.
    pub fn new(env: Arc<Env>) -> Self {
        Self { env }
    }
}

/// The workspace dead letters without a readable workspace are filed under
/// ([`harmonia_contracts::ids::SYSTEM_WORKSPACE`]).
pub fn system_workspace() -> WorkspaceId {
    WorkspaceId::from_literal(harmonia_contracts::ids::SYSTEM_WORKSPACE)
}

#[async_trait]
impl Handler for DeadLetterRecorder {
    async fn handle(&self, delivery: Delivery) -> Outcome {
        let workspace =
            delivery.attributes.get("workspace").and_then(|w| w.parse().ok()).unwrap_or_else(system_workspace);
        let digest = hex::encode(sha2::Sha256::digest(&delivery.data));
        let source = delivery.attributes.get(DEAD_LETTER_SOURCE_ATTRIBUTE).cloned().unwrap_or_default();
        let record = DeadLetter {
            message_id: delivery.message_id.clone(),
            source_subscription: source.clone(),
            subscription: delivery.subscription.to_string(),
            attributes: delivery.attributes.clone(),
            data: base64::engine::general_purpose::STANDARD.encode(&delivery.data),
            data_sha256: digest,
            published_at: delivery.published_at,
            recorded_at: Utc::now(),
        };
        let id_hash = hex::encode(sha2::Sha256::digest(format!("{source}\n{}", delivery.message_id).as_bytes()));
        let id = doc_id(format!("dl-{}", &id_hash[..40]));
        let Ok(data) = encode(&record) else { return Outcome::Nack };
        match create_if_absent(&*self.env.store, &workspace, DEAD_LETTERS, &id, data).await {
            Ok(_) => {
                tracing::error!(subscription = %source, message_id = %delivery.message_id, "dead-lettered message recorded");
                Outcome::Ack
            }
            Err(_) => Outcome::Nack,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_workspace_is_always_system() {
        assert_eq!(system_workspace().as_str(), "system");
        assert_eq!(system_workspace(), system_workspace());
    }
}
