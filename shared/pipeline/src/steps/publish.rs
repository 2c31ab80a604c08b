use async_trait::async_trait;
use chrono::Utc;
use harmonia_contracts::Code;
use harmonia_contracts::domain::{
    ApprovalSubject, Decision, Draft, Job, JobStatus, Publication, PublicationClaim, PublicationReceipt, ReceiptOutcome,
};
use harmonia_contracts::event::{DraftApproved, PostPublished, Stage, StageEvent};
use harmonia_store::{Tx, encode, run_transaction};

use super::load;
use crate::Env;
use crate::connector::{Outgoing, Sent};
use crate::operator::{ApprovalRecord, approval_id};
use crate::records::{APPROVALS, DRAFTS, JOBS, PUBLICATIONS, doc_id};
use crate::step::{Completion, Step, StepError, complete};

/// `publish`: claim (transaction) → call the connector once with the idempotency key →
/// record the receipt. A claim found without a receipt means a previous attempt may have
/// posted: the outcome is recorded as unknown and left to verification, never retried blind.
pub(crate) struct Publish;

#[async_trait]
impl Step for Publish {
    type Payload = DraftApproved;
    const STAGE: Stage = Stage::Publish;

    async fn run(&self, env: &Env, event: &StageEvent<DraftApproved>) -> Result<(), StepError> {
        let ws = &event.workspace;
        let draft: Draft = load(env, ws, DRAFTS, &doc_id(&event.payload.draft)).await?;
        if draft.content_hash != event.payload.content_hash || !draft.hash_is_current() {
            return Err(StepError::fail(Code::StaleVersion));
        }
        let approval: ApprovalRecord =
            load(env, ws, APPROVALS, &approval_id(&event.job, ApprovalSubject::Draft)).await?;
        if approval.approval.decision != Decision::Approved || approval.approval.subject_hash != draft.content_hash {
            return Err(StepError::fail(Code::Authorization));
        }
        let claim = PublicationClaim {
            job: event.job.clone(),
            draft: draft.id.clone(),
            content_hash: draft.content_hash.clone(),
            platform: draft.platform,
            connector: env.connector.kind(),
            idempotency_key: format!("{ws}:{}:{}", draft.id, &draft.content_hash[..16]),
            claimed_at: Utc::now(),
        };
        let fresh = Publication {
            job: event.job.clone(),
            draft: draft.id.clone(),
            platform: draft.platform,
            body: draft.body.clone(),
            content_hash: draft.content_hash.clone(),
            claim,
            receipt: None,
            verification: None,
        };
        let fresh_data = encode(&fresh)?;
        let store = &*env.store;
        let (job, draft_id, fresh_data) = (&event.job, &draft.id, &fresh_data);
        let existing = run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
            let mut tx = Tx::begin(store, ws);
            if let Some(existing) = tx.get(PUBLICATIONS, &doc_id(draft_id)).await? {
                return Ok(Some(existing.decode::<Publication>()?));
            }
            let mut current: Job =
                tx.get(JOBS, &doc_id(job)).await?.ok_or(harmonia_store::Error::NotFound)?.decode()?;
            current
                .advance(JobStatus::Publishing, Utc::now())
                .map_err(|_| harmonia_store::Error::Invalid("transition"))?;
            tx.put(JOBS, &doc_id(job), encode(&current)?);
            tx.put(PUBLICATIONS, &doc_id(draft_id), fresh_data.clone());
            tx.commit().await.map(|()| None)
        })
        .await
        .map_err(|e| match e {
            harmonia_store::Error::Invalid("transition") => StepError::Stale,
            other => other.into(),
        })?;
        let claimed_now = existing.is_none();
        let publication = existing.unwrap_or(fresh);
        let outcome = match (&publication.receipt, claimed_now) {
            (Some(receipt), _) => receipt.outcome.clone(),
            (None, false) => ReceiptOutcome::Unknown,
            (None, true) => {
                let outgoing = Outgoing {
                    idempotency_key: publication.claim.idempotency_key.clone(),
                    platform: draft.platform,
                    body: draft.body.clone(),
                };
                match env.connector.send(ws, &outgoing).await {
                    Sent::Applied(post) => ReceiptOutcome::Applied { post, url: None },
                    Sent::Unknown => ReceiptOutcome::Unknown,
                    Sent::Refused => ReceiptOutcome::Failed { code: Code::ConnectorFailed },
                }
            }
        };
        let receipt = PublicationReceipt {
            job: event.job.clone(),
            draft: draft.id.clone(),
            connector: publication.claim.connector,
            outcome: outcome.clone(),
            recorded_at: Utc::now(),
        };
        let recorded = Publication { receipt: Some(receipt), ..publication };
        if matches!(outcome, ReceiptOutcome::Failed { .. }) {
            harmonia_store::update(
                store,
                ws,
                PUBLICATIONS,
                &doc_id(&draft.id),
                encode(&recorded)?,
                current_version(env, ws, &draft).await?,
            )
            .await?;
            return Err(StepError::fail(Code::ConnectorFailed));
        }
        let status = if matches!(outcome, ReceiptOutcome::Applied { .. }) {
            JobStatus::Published
        } else {
            JobStatus::PublishUnknown
        };
        let next = StageEvent::new(
            ws.clone(),
            event.job.clone(),
            event.pass,
            &event.traceparent,
            PostPublished { draft: draft.id.clone(), platform: draft.platform },
        );
        let completion = Completion {
            writes: vec![(PUBLICATIONS, doc_id(&draft.id), encode(&recorded)?)],
            status,
            pass: event.pass,
            next: vec![env.message(&next)?],
        };
        complete(env, ws, &event.job, Stage::Publish, event.pass, completion).await
    }
}

async fn current_version(
    env: &Env,
    ws: &harmonia_contracts::ids::WorkspaceId,
    draft: &Draft,
) -> Result<u64, StepError> {
    Ok(env
        .store
        .get(ws, PUBLICATIONS, &doc_id(&draft.id))
        .await?
        .ok_or_else(|| StepError::fail(Code::NotFound))?
        .version)
}
