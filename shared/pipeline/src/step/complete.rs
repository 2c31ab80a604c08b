//! Completing a step: its outputs, the job's new status and the stage-completed marker in one
//! transaction, then the next events. A failed job gets its typed failure and a marker too.

use std::marker::PhantomData;

use chrono::Utc;
use harmonia_bus::OutboundMessage;
use harmonia_contracts::domain::{FailedStep, Job, JobFailure, JobStatus};
use harmonia_contracts::event::{Pass, Round, Stage, StageEvent};
use harmonia_contracts::ids::{DocId, JobId, WorkspaceId};
use harmonia_contracts::{Code, Role};
use harmonia_store::{Collection, Tx, encode, run_transaction};
use serde::Serialize;
use serde_json::{Map, Value};

use super::{Error, claim, stage_of};
use crate::Env;
use crate::records::{JOBS, MARKERS, Marker, PendingMessage, doc_id, marker_id};
use crate::registry::{Emitted, StageKind, Subscribed, consumers};

/// Where in the pipeline something happened: a job's stage, operator round and pass.
#[derive(Clone, Copy, Debug)]
pub struct StageRef<'a> {
    /// Workspace.
    pub workspace: &'a WorkspaceId,
    /// Job.
    pub job: &'a JobId,
    /// Stage.
    pub stage: Stage,
    /// Operator round.
    pub round: Round,
    /// Pass.
    pub pass: Pass,
}

impl<'a> StageRef<'a> {
    /// The step consuming `event`: its stage is the payload's consumer.
    pub fn of<P: Subscribed>(event: &'a StageEvent<P>) -> Self {
        Self {
            workspace: &event.workspace,
            job: &event.job,
            stage: stage_of::<P>(),
            round: event.round,
            pass: event.pass,
        }
    }
}

/// The outputs of a completed step of the stage `S`. It publishes only events `S` emits
/// ([`Emitted`]), and [`complete`] takes it only for an event `S` consumes, so a stage can
/// neither emit another stage's event nor complete another stage's step.
pub struct Completion<S: StageKind> {
    /// Documents to write: (collection, id, data).
    pub writes: Vec<(Collection, DocId, Map<String, Value>)>,
    /// The job's status after the step.
    pub status: JobStatus,
    /// The job's pass after the step.
    pub pass: Pass,
    /// Events to publish, each one `S` emits.
    next: Vec<OutboundMessage>,
    stage: PhantomData<S>,
}

impl<S: StageKind> Completion<S> {
    /// A completion moving the job to `status` in `pass`, writing and publishing nothing yet.
    pub fn new(status: JobStatus, pass: Pass) -> Self {
        Self { writes: Vec::new(), status, pass, next: Vec::new(), stage: PhantomData }
    }

    /// Also write `value` at (`collection`, `id`).
    pub fn write(mut self, collection: Collection, id: DocId, value: &impl Serialize) -> Result<Self, Error> {
        self.writes.push((collection, id, encode(value)?));
        Ok(self)
    }

    /// Also write the grounded-search results an invocation accepted (in the same
    /// transaction as its output), so that policy resolves the `web-*` ids it cites.
    pub fn research(mut self, found: &[harmonia_contracts::domain::ResearchEvidence]) -> Result<Self, Error> {
        for result in found {
            self = self.write(
                crate::records::RESEARCH,
                crate::records::research_id(&result.job, &result.evidence_id),
                result,
            )?;
        }
        Ok(self)
    }

    /// Also publish `event`, one that this completion's stage emits.
    pub fn publish<Q: Emitted<Emitter = S>>(mut self, env: &Env, event: &StageEvent<Q>) -> Result<Self, Error> {
        self.next.push(env.message(event)?);
        Ok(self)
    }

    /// The events it publishes.
    pub fn next(&self) -> &[OutboundMessage] {
        &self.next
    }
}

/// The marker of (job, stage, round, pass), if the stage completed.
pub async fn marker(
    env: &Env,
    workspace: &WorkspaceId,
    job: &JobId,
    stage: Stage,
    round: Round,
    pass: Pass,
) -> Result<Option<Marker>, Error> {
    match env.store.get(workspace, MARKERS, &marker_id(job, stage, round, pass)).await? {
        Some(doc) => Ok(Some(doc.decode()?)),
        None => Ok(None),
    }
}

/// Publish what a marker recorded.
///
/// A message whose consuming stages have all completed already is not sent again: under heavy
/// duplication this keeps redeliveries from multiplying messages downstream.
pub async fn republish(env: &Env, marker: &Marker) -> Result<(), Error> {
    let mut messages = Vec::new();
    for pending in &marker.next {
        let message = pending.outbound().ok_or_else(|| Error::fail(Code::StoreCorrupt))?;
        if !consumed(env, marker, &message).await? {
            messages.push(message);
        }
    }
    env.publish(&messages).await
}

/// Whether every stage consuming `message` (by the registry's routes) has completed for its
/// job, round and pass.
async fn consumed(env: &Env, marker: &Marker, message: &OutboundMessage) -> Result<bool, Error> {
    let Some(topic) = message.topic.as_str().strip_prefix(env.topic_prefix.as_str()) else { return Ok(false) };
    let pass = message.attributes.get("pass").and_then(|p| p.parse::<u8>().ok()).and_then(|p| Pass::try_from(p).ok());
    let workspace = message.attributes.get("workspace").and_then(|w| w.parse::<WorkspaceId>().ok());
    // No round attribute is the original round.
    let round = match message.attributes.get("round") {
        None => Some(Round::ORIGINAL),
        Some(r) => r.parse::<u8>().ok().and_then(|r| Round::try_from(r).ok()),
    };
    let (Some(pass), Some(workspace), Some(round)) = (pass, workspace, round) else { return Ok(false) };
    let mut any = false;
    for stage in consumers(topic) {
        any = true;
        if self::marker(env, &workspace, &marker.job, stage, round, pass).await?.is_none() {
            return Ok(false);
        }
    }
    Ok(any)
}

/// Complete the step consuming `event` (in the stage its payload is bound to): write the outputs, the job's new status and the marker in
/// one transaction that also deletes the step's claim, then publish. If the marker already
/// exists (a concurrent duplicate finished first), publish its events.
pub async fn complete<P: Subscribed>(
    env: &Env,
    event: &StageEvent<P>,
    completion: Completion<P::Consumer>,
) -> Result<(), Error> {
    let at = StageRef::of(event);
    let next: Vec<PendingMessage> = completion.next.iter().map(PendingMessage::from).collect();
    let marker =
        Marker { job: at.job.clone(), stage: at.stage, round: at.round, pass: at.pass, next, completed_at: Utc::now() };
    let marker_data = &encode(&marker)?;
    let store = &*env.store;
    let (at, writes, status, new_pass) = (&at, &completion.writes, completion.status, completion.pass);
    let done = run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
        let mut tx = Tx::begin(store, at.workspace);
        claim::delete_in(&mut tx, at).await?;
        let marker_doc = marker_id(at.job, at.stage, at.round, at.pass);
        if tx.get(MARKERS, &marker_doc).await?.is_some() {
            tx.commit().await?;
            return Ok(false);
        }
        let mut job: Job = tx.get(JOBS, &doc_id(at.job)).await?.ok_or(harmonia_store::Error::NotFound)?.decode()?;
        if job.status != status {
            job.advance(status, Utc::now()).map_err(|_| harmonia_store::Error::Aborted(Code::InvalidTransition))?;
        }
        // The step completed: whatever stalled it is over, whether or not the status moved.
        job.stalled = None;
        job.pass = new_pass;
        // A step works in its event's round; from `strategy.approved` on that is the draft's.
        job.round = at.round;
        tx.put(JOBS, &doc_id(at.job), encode(&job)?);
        for (collection, id, data) in writes {
            // Read first, so an existing document (a publication gaining its receipt) is
            // replaced at the version seen rather than created.
            tx.get(*collection, id).await?;
            tx.put(*collection, id, data.clone());
        }
        tx.put(MARKERS, &marker_doc, marker_data.clone());
        tx.commit().await.map(|()| true)
    })
    .await?;
    if done {
        tracing::info!(workspace = %at.workspace, job = %at.job, stage = %at.stage, pass = at.pass.get(), status = ?status, "stage completed");
        return env.publish(&completion.next).await;
    }
    match self::marker(env, at.workspace, at.job, at.stage, at.round, at.pass).await? {
        Some(m) => republish(env, &m).await,
        // Another delivery's transaction wrote the claim away but not yet the marker.
        None => Err(Error::Retry(harmonia_contracts::Error::from_code(Code::TransactionConflict))),
    }
}

/// Record on the job that the step at `at` is waiting for a dependency (`code`, a model
/// failure): the job keeps its status and the step is retried; the next completion clears it.
/// Best effort: a stall that cannot be recorded changes nothing else.
pub async fn record_stall(env: &Env, at: &StageRef<'_>, role: Option<Role>, code: Code) -> Result<(), Error> {
    let store = &*env.store;
    run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
        let mut tx = Tx::begin(store, at.workspace);
        let Some(doc) = tx.get(JOBS, &doc_id(at.job)).await? else { return tx.commit().await };
        let mut job: Job = doc.decode()?;
        if job.status.is_terminal() {
            return tx.commit().await;
        }
        // Retried whatever the code's default: the step's message is redelivered.
        job.stalled = Some(JobFailure { retryable: true, ..JobFailure::of(at.stage, role, code, Utc::now()) });
        tx.put(JOBS, &doc_id(at.job), encode(&job)?);
        tx.commit().await
    })
    .await
    .map_err(Error::from)
}

/// Record the job's typed failure and a marker (so redeliveries ack), deleting the step's
/// claim in the same transaction.
pub async fn fail_job(
    env: &Env,
    at: &StageRef<'_>,
    role: Option<Role>,
    code: Code,
    schema_path: Option<String>,
) -> Result<(), Error> {
    let store = &*env.store;
    let marker = Marker {
        job: at.job.clone(),
        stage: at.stage,
        round: at.round,
        pass: at.pass,
        next: Vec::new(),
        completed_at: Utc::now(),
    };
    let (marker, schema_path) = (&encode(&marker)?, &schema_path);
    run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
        let mut tx = Tx::begin(store, at.workspace);
        claim::delete_in(&mut tx, at).await?;
        let Some(doc) = tx.get(JOBS, &doc_id(at.job)).await? else { return tx.commit().await };
        let mut job: Job = doc.decode()?;
        if job.status.is_terminal() {
            return tx.commit().await;
        }
        let now = Utc::now();
        // Where the step stood, for an operator's retry to put the job back.
        let step = FailedStep { status: job.status, round: at.round, pass: at.pass };
        job.advance(JobStatus::Failed, now).map_err(|_| harmonia_store::Error::Aborted(Code::InvalidTransition))?;
        job.failure = Some(JobFailure {
            schema_path: schema_path.clone(),
            step: Some(step),
            ..JobFailure::of(at.stage, role, code, now)
        });
        tx.put(JOBS, &doc_id(at.job), encode(&job)?);
        let marker_doc = marker_id(at.job, at.stage, at.round, at.pass);
        if tx.get(MARKERS, &marker_doc).await?.is_none() {
            tx.put(MARKERS, &marker_doc, marker.clone());
        }
        tx.commit().await
    })
    .await?;
    Ok(())
}
