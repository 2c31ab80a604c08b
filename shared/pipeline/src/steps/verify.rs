use chrono::Utc;
use harmonia_contracts::Code;
use harmonia_contracts::domain::{JobStatus, Publication, ReceiptOutcome, Verification, VerificationOutcome};
use harmonia_contracts::event::{PostPublished, PostVerified, StageEvent};
use harmonia_store::encode;

use super::publish::provenance;
use super::read::load;
use crate::Env;
use crate::connector::{Found, Outgoing};
use crate::records::{PUBLICATIONS, doc_id};
use crate::step::{self, Completion, Step, complete, next_event};

/// `verify`: read back by the idempotency key and record the verification. When the receipt
/// was unknown and read-back proves nothing was posted, the post is sent once more with the
/// same key (so the platform cannot post twice) and read back again.
impl Step for PostPublished {
    async fn run(env: &Env, event: &StageEvent<PostPublished>) -> Result<(), step::Error> {
        let ws = &event.workspace;
        let publication: Publication = load(env, ws, PUBLICATIONS, &doc_id(&event.payload.draft)).await?;
        let receipt = publication.receipt.as_ref().ok_or_else(|| step::Error::fail(Code::NotFound))?;
        let key = publication.claim.idempotency_key.clone();
        let mut found = env.connector.read_back(ws, &key).await.map_err(|_| step::Error::Retry)?;
        if found == Found::Missing && matches!(receipt.outcome, ReceiptOutcome::Unknown) {
            let outgoing = Outgoing {
                idempotency_key: key.clone(),
                platform: publication.platform,
                body: publication.body.clone(),
                provenance: provenance(env, ws, &event.job, &publication.draft).await?,
            };
            env.connector.send(ws, &outgoing).await;
            found = env.connector.read_back(ws, &key).await.map_err(|_| step::Error::Retry)?;
        }
        let outcome = match &found {
            Found::Post { post, body } if *body == publication.body => {
                VerificationOutcome::Verified { post: post.clone() }
            }
            Found::Post { post, .. } => VerificationOutcome::Mismatch { post: post.clone() },
            Found::Missing => VerificationOutcome::Missing,
        };
        let verification = Verification {
            job: event.job.clone(),
            draft: publication.draft.clone(),
            outcome: outcome.clone(),
            checked_at: Utc::now(),
        };
        let recorded = Publication { verification: Some(verification), ..publication };
        let VerificationOutcome::Verified { post } = outcome else {
            let id = doc_id(&recorded.draft);
            let stored =
                env.store.get(ws, PUBLICATIONS, &id).await?.ok_or_else(|| step::Error::fail(Code::NotFound))?;
            harmonia_store::update(&*env.store, ws, PUBLICATIONS, &id, encode(&recorded)?, stored.version).await?;
            return Err(step::Error::fail(Code::PublishOutcomeUnknown));
        };
        let verified = PostVerified { draft: recorded.draft.clone(), post };
        let completion = Completion::new(JobStatus::Verified, event.pass)
            .write(PUBLICATIONS, doc_id(&recorded.draft), &recorded)?
            .publish(env.message(&next_event(event, verified))?);
        complete(env, event, completion).await
    }
}
