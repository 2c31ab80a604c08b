use async_trait::async_trait;
use chrono::Utc;
use harmonia_contracts::Code;
use harmonia_contracts::domain::{JobStatus, Publication, ReceiptOutcome, Verification, VerificationOutcome};
use harmonia_contracts::event::{PostPublished, PostVerified, Stage, StageEvent};
use harmonia_store::encode;

use super::load;
use crate::Env;
use crate::connector::{Found, Outgoing};
use crate::records::{PUBLICATIONS, doc_id};
use crate::step::{Completion, Step, StepError, complete};

/// `verify`: read back by the idempotency key and record the verification. When the receipt
/// was unknown and read-back proves nothing was posted, the post is sent once more with the
/// same key (so the platform cannot post twice) and read back again.
pub(crate) struct Verify;

#[async_trait]
impl Step for Verify {
    type Payload = PostPublished;
    const STAGE: Stage = Stage::Verify;

    async fn run(&self, env: &Env, event: &StageEvent<PostPublished>) -> Result<(), StepError> {
        let ws = &event.workspace;
        let publication: Publication = load(env, ws, PUBLICATIONS, &doc_id(&event.payload.draft)).await?;
        let receipt = publication.receipt.as_ref().ok_or_else(|| StepError::fail(Code::NotFound))?;
        let key = publication.claim.idempotency_key.clone();
        let mut found = env.connector.read_back(ws, &key).await.map_err(|_| StepError::Retry)?;
        if found == Found::Missing && matches!(receipt.outcome, ReceiptOutcome::Unknown) {
            let outgoing = Outgoing {
                idempotency_key: key.clone(),
                platform: publication.platform,
                body: publication.body.clone(),
            };
            env.connector.send(ws, &outgoing).await;
            found = env.connector.read_back(ws, &key).await.map_err(|_| StepError::Retry)?;
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
            let version =
                env.store.get(ws, PUBLICATIONS, &doc_id(&recorded.draft)).await?.map(|d| d.version).unwrap_or(1);
            harmonia_store::update(
                &*env.store,
                ws,
                PUBLICATIONS,
                &doc_id(&recorded.draft),
                encode(&recorded)?,
                version,
            )
            .await?;
            return Err(StepError::fail(Code::PublishOutcomeUnknown));
        };
        let next = StageEvent::new(
            ws.clone(),
            event.job.clone(),
            event.pass,
            &event.traceparent,
            PostVerified { draft: recorded.draft.clone(), post },
        );
        let completion = Completion {
            writes: vec![(PUBLICATIONS, doc_id(&recorded.draft), encode(&recorded)?)],
            status: JobStatus::Verified,
            pass: event.pass,
            next: vec![env.message(&next)?],
        };
        complete(env, ws, &event.job, Stage::Verify, event.pass, completion).await
    }
}
