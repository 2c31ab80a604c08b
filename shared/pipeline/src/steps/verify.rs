use harmonia_contracts::Code;
use harmonia_contracts::domain::{JobStatus, Publication, ReceiptOutcome, Verification, VerificationOutcome};
use harmonia_contracts::event::{PostPublished, PostVerified, StageEvent};
use harmonia_store::encode;

use super::publish::provenance;
use super::read::{channel_connector, load, read_back};
use crate::Env;
use crate::records::{PUBLICATIONS, doc_id};
use crate::step::{self, Completion, Step, complete, next_event};
use harmonia_connectors::{Found, Lookup, Outgoing, Sent};

/// `verify`: read back by the idempotency key and record the verification. When the receipt
/// was unknown and read-back proves nothing was posted, the post is sent once more with the
/// same key (so the platform cannot post twice) and read back again. A thread is read back
/// post by post, each replying to the one before ([`super::thread::verify`]).
impl Step for PostPublished {
    async fn run(env: &Env, event: &StageEvent<PostPublished>) -> Result<(), step::Error> {
        let ws = &event.workspace;
        let publication: Publication = load(env, ws, PUBLICATIONS, &doc_id(&event.payload.draft)).await?;
        let receipt = publication.receipt.as_ref().ok_or_else(|| step::Error::fail(Code::NotFound))?;
        let connector = channel_connector(env, ws, &event.job, publication.platform).await?;
        // Read back where the claim says the post went, never anywhere else.
        if connector.kind() != publication.claim.connector {
            return Err(step::Error::fail(Code::InvalidConfig));
        }
        let outcome = match publication.thread.is_empty() {
            true => single(env, &*connector, event, &publication, receipt).await?,
            false => super::thread::verify(&*connector, ws, &publication).await?,
        };
        let verification = Verification {
            job: event.job.clone(),
            draft: publication.draft.clone(),
            outcome: outcome.clone(),
            checked_at: env.clock.now(),
        };
        let recorded = Publication { verification: Some(verification), ..publication };
        let VerificationOutcome::Verified { post } = outcome else {
            let id = doc_id(&recorded.draft);
            let stored =
                env.store.get(ws, PUBLICATIONS, &id).await?.ok_or_else(|| step::Error::fail(Code::NotFound))?;
            harmonia_store::update(&*env.store, ws, PUBLICATIONS, &id, encode(&recorded)?, stored.version).await?;
            return Err(step::Error::fail(Code::PublishOutcomeUnknown));
        };
        // Indexed for its engagement snapshots before the verification is recorded (see
        // `crate::engagement`): a crash between the two leaves an entry the tick lets go. A
        // store that may answer later retries the step; measuring never fails a post otherwise.
        match crate::engagement::on_verified(env, ws, &event.job, &recorded.draft, env.clock.now()).await {
            Err(e) if e.code.default_retryable() => return Err(step::Error::Retry(e)),
            Err(e) => {
                tracing::warn!(
                    code = e.code.as_str(),
                    "the post's engagement will not be measured: its snapshots could not be scheduled"
                )
            }
            Ok(()) => {}
        }
        let verified = PostVerified { draft: recorded.draft.clone(), post };
        let completion = Completion::new(JobStatus::Verified, event.pass)
            .write(PUBLICATIONS, doc_id(&recorded.draft), &recorded)?
            .publish(env, &next_event(event, verified))?;
        complete(env, event, completion).await
    }
}

/// Read back a single post: by the key, or by the post the receipt names; when the receipt was
/// unknown and read-back proves nothing was posted, the post is sent once more with the same
/// key (so the platform cannot post twice) and read back again.
async fn single(
    env: &Env,
    connector: &dyn harmonia_connectors::Connector,
    event: &StageEvent<PostPublished>,
    publication: &Publication,
    receipt: &harmonia_contracts::domain::PublicationReceipt,
) -> Result<VerificationOutcome, step::Error> {
    let ws = &event.workspace;
    let key = publication.claim.idempotency_key.clone();
    // What the receipt names: the post, and on the AT Protocol its record (the one read
    // back must be that record: a different one under the key is not this publication).
    let (posted, receipt_record) = match &receipt.outcome {
        ReceiptOutcome::Applied { post, record, .. } => (Some(post.clone()), record.clone()),
        _ => (None, None),
    };
    let sent = Lookup::key(ws, &key).sent(&publication.body, publication.claim.claimed_at);
    let mut found = read_back(connector, sent.posted(posted.as_ref())).await?;
    if found == Found::Missing && matches!(receipt.outcome, ReceiptOutcome::Unknown) {
        let outgoing = Outgoing {
            idempotency_key: key.clone(),
            platform: publication.platform,
            body: publication.body.clone(),
            provenance: provenance(env, ws, &event.job, &publication.draft).await?,
            reply: None,
        };
        // The same key: the platform answers with the first post if there was one. Its
        // answer names the post to read back where a platform cannot look one up by key.
        let resent = match connector.send(ws, &outgoing).await {
            Sent::Applied(posted) => Some(posted.post),
            _ => None,
        };
        found = read_back(connector, sent.posted(resent.as_ref())).await?;
    }
    let outcome = match &found {
        Found::Post { post, body, record, .. }
            if *body == publication.body && receipt_record.as_ref().is_none_or(|r| record.as_ref() == Some(r)) =>
        {
            VerificationOutcome::Verified { post: post.clone() }
        }
        Found::Post { post, .. } => VerificationOutcome::Mismatch { post: post.clone() },
        Found::Missing => VerificationOutcome::Missing,
    };
    Ok(outcome)
}
