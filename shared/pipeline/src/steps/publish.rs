use chrono::Utc;
use harmonia_contracts::Code;
use harmonia_contracts::domain::{
    ApprovalSubject, ConnectorKind, Decision, Draft, Job, JobStatus, Publication, PublicationClaim, PublicationReceipt,
    ReceiptOutcome,
};
use harmonia_contracts::event::{DraftApproved, PostPublished, StageEvent};
use harmonia_contracts::ids::{DraftId, JobId, WorkspaceId};
use harmonia_contracts::tool::Provenance;
use harmonia_store::{Tx, encode, run_transaction};

use super::read::{channel_connector, load};
use crate::Env;
use crate::records::{ANALYSES, APPROVALS, AnalysisRecord, DRAFTS, JOBS, PUBLICATIONS, doc_id};
use crate::records::{ApprovalRecord, approval_id};
use crate::step::{self, Completion, Step, complete, next_event};
use harmonia_connectors::{Connector, Outgoing, Posted, Sent};

/// `publish`: claim (transaction) → call the connector once with the idempotency key →
/// record the receipt. A claim found without a receipt means a previous attempt may have
/// posted: the outcome is recorded as unknown and left to verification, never retried blind.
impl Step for DraftApproved {
    async fn run(env: &Env, event: &StageEvent<DraftApproved>) -> Result<(), step::Error> {
        let draft = approved_draft(env, event).await?;
        let connector = channel_connector(env, &event.workspace, &event.job, draft.platform).await?;
        let (publication, claimed_now) = claim(env, event, &draft, connector.kind()).await?;
        if !publication.thread.is_empty() && publication.receipt.is_none() {
            let provenance = provenance(env, &event.workspace, &publication.job, &publication.draft).await?;
            let (publication, outcome) =
                super::thread::publish(env, &*connector, event, publication, provenance).await?;
            return record(env, event, publication, outcome).await;
        }
        let outcome = match (&publication.receipt, claimed_now) {
            (Some(receipt), _) => receipt.outcome.clone(),
            (None, false) => ReceiptOutcome::Unknown,
            (None, true) => call_once(env, &*connector, event, &publication).await?,
        };
        record(env, event, publication, outcome).await
    }
}

/// The draft the event names, if it is still the current version and a human approved exactly
/// that version.
async fn approved_draft(env: &Env, event: &StageEvent<DraftApproved>) -> Result<Draft, step::Error> {
    let ws = &event.workspace;
    let draft: Draft = load(env, ws, DRAFTS, &doc_id(&event.payload.draft)).await?;
    if draft.content_hash != event.payload.content_hash || !draft.hash_is_current() {
        return Err(step::Error::fail(Code::StaleVersion));
    }
    let approval: ApprovalRecord = load(env, ws, APPROVALS, &approval_id(&event.job, ApprovalSubject::Draft)).await?;
    if approval.approval.decision != Decision::Approved || approval.approval.subject_hash != draft.content_hash {
        return Err(step::Error::fail(Code::Authorization));
    }
    Ok(draft)
}

/// Claim the publication of `draft` in one transaction with the job's move to `publishing`.
/// Returns the publication and whether this call made the claim; a publication that already
/// exists (an earlier attempt's) is returned as it is, unless the platform refused it, which
/// posted nothing: that one is claimed again.
async fn claim(
    env: &Env,
    event: &StageEvent<DraftApproved>,
    draft: &Draft,
    connector: ConnectorKind,
) -> Result<(Publication, bool), step::Error> {
    let ws = &event.workspace;
    let claim_key = format!("{ws}:{}:{}", draft.id, &draft.content_hash[..16]);
    let claim = PublicationClaim {
        job: event.job.clone(),
        draft: draft.id.clone(),
        content_hash: draft.content_hash.clone(),
        platform: draft.platform,
        connector,
        idempotency_key: claim_key.clone(),
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
        thread: super::thread::parts(&claim_key, &draft.thread),
    };
    let store = &*env.store;
    let (job, id, fresh) = (&doc_id(&event.job), &doc_id(&draft.id), &fresh);
    let (publication, claimed_now) = run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
        let mut tx = Tx::begin(store, ws);
        let mut claimed = fresh.clone();
        if let Some(existing) = tx.get(PUBLICATIONS, id).await? {
            let existing: Publication = existing.decode()?;
            // A refusal made nothing more: an operator's retry of the step claims afresh (the
            // failure's marker keeps redeliveries from reaching here), keeping the posts of a
            // thread that were made before the refusal.
            if !matches!(existing.receipt.as_ref().map(|r| &r.outcome), Some(ReceiptOutcome::Failed { .. })) {
                return Ok((existing, false));
            }
            for (part, before) in claimed.thread.iter_mut().zip(existing.thread) {
                if matches!(before.receipt, Some(ReceiptOutcome::Applied { .. })) {
                    *part = before;
                }
            }
        }
        let mut current: Job = tx.get(JOBS, job).await?.ok_or(harmonia_store::Error::NotFound)?.decode()?;
        // A retried refusal finds the job still publishing, where its failure left it.
        if current.status != JobStatus::Publishing {
            current
                .advance(JobStatus::Publishing, Utc::now())
                .map_err(|_| harmonia_store::Error::Aborted(Code::InvalidTransition))?;
            tx.put(JOBS, job, encode(&current)?);
        }
        tx.put(PUBLICATIONS, id, encode(&claimed)?);
        tx.commit().await.map(|()| (claimed, true))
    })
    .await?;
    Ok((publication, claimed_now))
}

/// The one connector call, with the claim's idempotency key.
async fn call_once(
    env: &Env,
    connector: &dyn Connector,
    event: &StageEvent<DraftApproved>,
    publication: &Publication,
) -> Result<ReceiptOutcome, step::Error> {
    let outgoing = Outgoing {
        idempotency_key: publication.claim.idempotency_key.clone(),
        platform: publication.platform,
        body: publication.body.clone(),
        provenance: provenance(env, &event.workspace, &publication.job, &publication.draft).await?,
        reply: None,
    };
    Ok(outcome_of(connector.send(&event.workspace, &outgoing).await))
}

/// What a connector's answer to one post records: the post made, unknown, or a refusal that
/// made nothing (with when the platform allows posting again, when it says).
pub(super) fn outcome_of(sent: Sent) -> ReceiptOutcome {
    match sent {
        Sent::Applied(Posted { post, url, record }) => ReceiptOutcome::Applied { post, url, record },
        Sent::Unknown => ReceiptOutcome::Unknown,
        Sent::Refused(refusal) => ReceiptOutcome::Failed { code: refusal.code(), retry_after: refusal.retry_after() },
        Sent::Rejected(code) => ReceiptOutcome::Failed { code, retry_after: None },
    }
}

/// What a post rests on: `live` only when its draft is not mock and every piece of evidence
/// its claims cite resolves to a record that is not mock either (a live moment, a live search
/// result, a post verified on a real platform; [`crate::policy::evidence::load`]). Evidence
/// that no longer resolves cannot vouch for anything and counts as mock.
pub(super) async fn provenance(
    env: &Env,
    ws: &WorkspaceId,
    job: &JobId,
    draft: &DraftId,
) -> Result<Provenance, step::Error> {
    let draft: Draft = load(env, ws, DRAFTS, &doc_id(draft)).await?;
    let analysis: AnalysisRecord = load(env, ws, ANALYSES, &doc_id(job)).await?;
    let cites = draft.claims.iter().flat_map(|c| &c.evidence);
    let evidence = crate::policy::evidence::load(&*env.store, ws, &analysis, cites, env.clock.now()).await?;
    let cites_mock = draft
        .claims
        .iter()
        .flat_map(|c| &c.evidence)
        .any(|e| evidence.get(e).is_none_or(|e| e.provenance == Provenance::Mock));
    Ok(if draft.provenance == Provenance::Mock || cites_mock { Provenance::Mock } else { Provenance::Live })
}

/// Record the receipt. A refusal is stored and fails the job; otherwise the step completes
/// (published, or unknown until verification reads back) and `post.published` follows.
async fn record(
    env: &Env,
    event: &StageEvent<DraftApproved>,
    publication: Publication,
    outcome: ReceiptOutcome,
) -> Result<(), step::Error> {
    let ws = &event.workspace;
    let receipt = PublicationReceipt {
        job: event.job.clone(),
        draft: publication.draft.clone(),
        connector: publication.claim.connector,
        outcome: outcome.clone(),
        recorded_at: env.clock.now(),
    };
    let recorded = Publication { receipt: Some(receipt), ..publication };
    let id = doc_id(&recorded.draft);
    let status = match outcome {
        ReceiptOutcome::Applied { .. } => JobStatus::Published,
        ReceiptOutcome::Unknown => JobStatus::PublishUnknown,
        ReceiptOutcome::Failed { code, .. } => {
            let version =
                env.store.get(ws, PUBLICATIONS, &id).await?.ok_or_else(|| step::Error::fail(Code::NotFound))?;
            harmonia_store::update(&*env.store, ws, PUBLICATIONS, &id, encode(&recorded)?, version.version).await?;
            return Err(step::Error::fail(code));
        }
    };
    let published = PostPublished { draft: recorded.draft.clone(), platform: recorded.platform };
    let completion = Completion::new(status, event.pass)
        .write(PUBLICATIONS, id, &recorded)?
        .publish(env, &next_event(event, published))?;
    complete(env, event, completion).await
}
