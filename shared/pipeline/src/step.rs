//! The completion protocol every stage follows, and the bus handler that runs a stage.

use std::sync::Arc;

use async_trait::async_trait;
use base64::Engine as _;
use chrono::Utc;
use harmonia_agents::InvokeError;
use harmonia_bus::{Delivery, Handler, Name, OutboundMessage, Outcome};
use harmonia_contracts::domain::{Job, JobFailure, JobStatus};
use harmonia_contracts::event::{EventPayload, Pass, Stage, StageEvent};
use harmonia_contracts::ids::{DocId, JobId, WorkspaceId};
use harmonia_contracts::{AgentContractError, Code, Role};
use harmonia_store::{Collection, Created, Tx, create_if_absent, encode, run_transaction, update};
use serde_json::{Map, Value};
use tracing::Instrument as _;

use crate::Env;
use crate::records::{JOBS, MARKERS, Marker, PendingMessage, RUNNING, Running, doc_id, marker_id};

/// Why a step did not complete.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// Transient (store, bus or model unavailable): nack and let the bus retry.
    #[error("transient failure; will be retried")]
    Retry,
    /// The job fails with this typed failure (recorded; the message is acked).
    #[error("job failed: {code}")]
    Fail {
        /// Role, when a specialist's contract failed.
        role: Option<Role>,
        /// Stable code.
        code: Code,
        /// Schema location, for schema violations.
        schema_path: Option<String>,
    },
    /// The job is no longer in a state this event applies to (e.g. rejected meanwhile): ack.
    #[error("event no longer applies")]
    Stale,
}

impl StepError {
    /// A failure with a code and no role.
    pub fn fail(code: Code) -> Self {
        StepError::Fail { role: None, code, schema_path: None }
    }
}

impl From<harmonia_store::Error> for StepError {
    fn from(e: harmonia_store::Error) -> Self {
        if e.retryable() { StepError::Retry } else { StepError::fail(e.code()) }
    }
}

impl From<AgentContractError> for StepError {
    fn from(e: AgentContractError) -> Self {
        if e.code == Code::ModelUnavailable {
            StepError::Retry
        } else {
            StepError::Fail { role: Some(e.role), code: e.code, schema_path: e.schema_path }
        }
    }
}

impl From<InvokeError> for StepError {
    fn from(e: InvokeError) -> Self {
        match e {
            InvokeError::Contract(c) => c.into(),
            InvokeError::Store(s) => s.into(),
        }
    }
}

/// One stage consuming one topic.
#[async_trait]
pub trait Step: Send + Sync + 'static {
    /// The payload it consumes.
    type Payload: EventPayload;
    /// The stage it completes.
    const STAGE: Stage;
    /// Do the step; it ends with [`complete`].
    async fn run(&self, env: &Env, event: &StageEvent<Self::Payload>) -> Result<(), StepError>;
}

fn pending(m: &OutboundMessage) -> PendingMessage {
    PendingMessage {
        topic: m.topic.to_string(),
        data: base64::engine::general_purpose::STANDARD.encode(&m.data),
        attributes: m.attributes.clone(),
    }
}

fn outbound(p: &PendingMessage) -> Option<OutboundMessage> {
    Some(OutboundMessage {
        topic: p.topic.parse::<Name>().ok()?,
        data: base64::engine::general_purpose::STANDARD.decode(&p.data).ok()?,
        attributes: p.attributes.clone(),
    })
}

/// The marker of (job, stage, pass), if the stage completed.
pub async fn marker(
    env: &Env,
    workspace: &WorkspaceId,
    job: &JobId,
    stage: Stage,
    pass: Pass,
) -> Result<Option<Marker>, StepError> {
    match env.store.get(workspace, MARKERS, &marker_id(job, stage, pass)).await? {
        Some(doc) => Ok(Some(doc.decode()?)),
        None => Ok(None),
    }
}

/// Publish what a marker recorded.
///
/// A message whose consuming stages have all completed already is not sent again: under heavy
/// duplication this keeps redeliveries from multiplying messages downstream.
pub async fn republish(env: &Env, marker: &Marker) -> Result<(), StepError> {
    let mut messages = Vec::new();
    for m in marker.next.iter().filter_map(outbound) {
        if !consumed(env, marker, &m).await? {
            messages.push(m);
        }
    }
    env.publish(&messages).await
}

/// Whether every stage consuming `message` has completed for its job and pass.
async fn consumed(env: &Env, marker: &Marker, message: &OutboundMessage) -> Result<bool, StepError> {
    let topic = message.topic.as_str().strip_prefix(env.topic_prefix.as_str()).unwrap_or_default();
    let pass = message.attributes.get("pass").and_then(|p| p.parse::<u8>().ok()).and_then(|p| Pass::try_from(p).ok());
    let workspace = message.attributes.get("workspace").and_then(|w| w.parse::<WorkspaceId>().ok());
    let (Some(pass), Some(workspace)) = (pass, workspace) else { return Ok(false) };
    let consumers: Vec<Stage> = crate::registry::ROUTES
        .iter()
        .filter(|r| r.topic == topic)
        .filter_map(|r| Stage::ALL.into_iter().find(|s| s.as_str() == r.function))
        .collect();
    if consumers.is_empty() {
        return Ok(false);
    }
    for stage in consumers {
        if self::marker(env, &workspace, &marker.job, stage, pass).await?.is_none() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The outputs of a completed step.
pub struct Completion {
    /// Documents to write: (collection, id, data).
    pub writes: Vec<(Collection, DocId, Map<String, Value>)>,
    /// The job's status after the step.
    pub status: JobStatus,
    /// The job's pass after the step.
    pub pass: Pass,
    /// Events to publish.
    pub next: Vec<OutboundMessage>,
}

/// Write the outputs, the job's new status and the marker in one transaction, then publish.
/// If the marker already exists (a concurrent duplicate finished first), publish its events.
pub async fn complete(
    env: &Env,
    workspace: &WorkspaceId,
    job: &JobId,
    stage: Stage,
    pass: Pass,
    completion: Completion,
) -> Result<(), StepError> {
    let next: Vec<PendingMessage> = completion.next.iter().map(pending).collect();
    let marker = Marker { job: job.clone(), stage, pass, next, completed_at: Utc::now() };
    let marker_data = encode(&marker)?;
    let store = &*env.store;
    let (writes, marker_data, status, new_pass) =
        (&completion.writes, &marker_data, completion.status, completion.pass);
    let done = run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
        let mut tx = Tx::begin(store, workspace);
        let marker_doc = marker_id(job, stage, pass);
        if tx.get(MARKERS, &marker_doc).await?.is_some() {
            return Ok(false);
        }
        let job_doc = tx.get(JOBS, &doc_id(job)).await?.ok_or(harmonia_store::Error::NotFound)?;
        let mut current: Job = job_doc.decode()?;
        if current.status != status {
            current.advance(status, Utc::now()).map_err(|_| harmonia_store::Error::Invalid("transition"))?;
        }
        current.pass = new_pass;
        tx.put(JOBS, &doc_id(job), encode(&current)?);
        for (collection, id, data) in writes {
            // Read first, so an existing document (a publication gaining its receipt) is
            // replaced at the version seen rather than created.
            tx.get(*collection, id).await?;
            tx.put(*collection, id, data.clone());
        }
        tx.put(MARKERS, &marker_doc, marker_data.clone());
        tx.commit().await.map(|()| true)
    })
    .await;
    match done {
        Ok(true) => {
            tracing::info!(workspace = %workspace, job = %job, stage = %stage, pass = pass.get(), status = ?status, "stage completed");
            env.publish(&completion.next).await
        }
        Ok(false) => match self::marker(env, workspace, job, stage, pass).await? {
            Some(m) => republish(env, &m).await,
            None => Err(StepError::Retry),
        },
        // The job moved on (rejected, failed) in a way this step cannot follow.
        Err(harmonia_store::Error::Invalid("transition")) => Err(StepError::Stale),
        Err(e) => Err(e.into()),
    }
}

/// Where in the pipeline something happened: a job's stage and pass.
#[derive(Clone, Copy, Debug)]
pub struct StageRef<'a> {
    /// Workspace.
    pub workspace: &'a WorkspaceId,
    /// Job.
    pub job: &'a JobId,
    /// Stage.
    pub stage: Stage,
    /// Pass.
    pub pass: Pass,
}

/// Record the job's typed failure (and a marker, so redeliveries ack).
pub async fn fail_job(
    env: &Env,
    at: &StageRef<'_>,
    role: Option<Role>,
    code: Code,
    schema_path: Option<String>,
) -> Result<(), StepError> {
    let StageRef { workspace, job, stage, pass } = *at;
    let store = &*env.store;
    let marker = encode(&Marker { job: job.clone(), stage, pass, next: Vec::new(), completed_at: Utc::now() })?;
    let (marker, schema_path) = (&marker, &schema_path);
    run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
        let mut tx = Tx::begin(store, workspace);
        let Some(doc) = tx.get(JOBS, &doc_id(job)).await? else { return Ok(()) };
        let mut current: Job = doc.decode()?;
        if current.status.is_terminal() {
            return Ok(());
        }
        let now = Utc::now();
        current.advance(JobStatus::Failed, now).map_err(|_| harmonia_store::Error::Invalid("transition"))?;
        current.failure = Some(JobFailure {
            stage,
            role,
            code,
            category: code.category(),
            safe_message: code.safe_message().to_owned(),
            retryable: code.default_retryable(),
            schema_path: schema_path.clone(),
            at: now,
        });
        tx.put(JOBS, &doc_id(job), encode(&current)?);
        let marker_doc = marker_id(job, stage, pass);
        if tx.get(MARKERS, &marker_doc).await?.is_none() {
            tx.put(MARKERS, &marker_doc, marker.clone());
        }
        tx.commit().await
    })
    .await
    .map_err(StepError::from)
}

/// Claim (job, stage, pass) for this delivery. `false` when another delivery holds a live
/// claim: the caller nacks and the message returns after backoff, by when the step has
/// usually completed and the marker answers it.
pub async fn acquire(env: &Env, at: &StageRef<'_>) -> Result<bool, StepError> {
    let id = doc_id(format!("{}.{}.{}.running", at.job, at.stage, at.pass.get()));
    let now = Utc::now();
    let lease = chrono::Duration::from_std(env.step_lease).unwrap_or_else(|_| chrono::Duration::seconds(60));
    let mine = Running { owner: uuid::Uuid::new_v4().simple().to_string(), until: now + lease };
    match create_if_absent(&*env.store, at.workspace, RUNNING, &id, encode(&mine)?).await? {
        Created::New(_) => Ok(true),
        Created::Existing(doc) => {
            let held: Running = doc.decode()?;
            if held.until > now {
                return Ok(false);
            }
            // The holder is gone (crashed, or its lease lapsed): take over at the version seen.
            match update(&*env.store, at.workspace, RUNNING, &id, encode(&mine)?, doc.version).await {
                Ok(_) => Ok(true),
                Err(harmonia_store::Error::PreconditionFailed) => Ok(false),
                Err(e) => Err(e.into()),
            }
        }
    }
}

/// Runs a [`Step`] for each delivery: decode, skip-if-completed, claim, run, settle.
pub struct StageHandler<S> {
    env: Arc<Env>,
    step: S,
}

impl<S: Step> StageHandler<S> {
    /// A handler for `step`.
    pub fn new(env: Arc<Env>, step: S) -> Self {
        Self { env, step }
    }
}

#[async_trait]
impl<S: Step> Handler for StageHandler<S> {
    async fn handle(&self, delivery: Delivery) -> Outcome {
        let Ok(event) = StageEvent::<S::Payload>::decode(&delivery.data) else {
            tracing::warn!(subscription = %delivery.subscription, message_id = %delivery.message_id, "undecodable stage event; leaving it to the dead-letter policy");
            return Outcome::Nack;
        };
        // Exported as the messaging conventions name a consumer's span; its parent is the
        // event's exported `create` span.
        let span = tracing::info_span!(
            "process",
            otel.name = %format_args!("process {}", S::Payload::TOPIC),
            otel.kind = "consumer",
            "messaging.operation.type" = "process",
            messaging.operation.name = "process",
            messaging.destination.name = %format_args!("{}{}", self.env.topic_prefix, S::Payload::TOPIC),
            messaging.destination.subscription.name = %delivery.subscription,
            harmonia.stage = %S::STAGE,
            job = %event.job,
            pass = event.pass.get(),
            trace_id = %event.traceparent.trace_id(),
        );
        let t = &event.traceparent;
        harmonia_telemetry::continue_trace(&span, &t.trace_id(), &t.span_id(), t.sampled());
        self.handle_event(event).instrument(span).await
    }
}

impl<S: Step> StageHandler<S> {
    async fn handle_event(&self, event: StageEvent<S::Payload>) -> Outcome {
        let env = &*self.env;
        match marker(env, &event.workspace, &event.job, S::STAGE, event.pass).await {
            Ok(Some(m)) => {
                return if republish(env, &m).await.is_ok() { Outcome::Ack } else { Outcome::Nack };
            }
            Ok(None) => {}
            Err(_) => return Outcome::Nack,
        }
        let at = StageRef { workspace: &event.workspace, job: &event.job, stage: S::STAGE, pass: event.pass };
        match acquire(env, &at).await {
            Ok(true) => {}
            Ok(false) | Err(_) => return Outcome::Nack,
        }
        match self.step.run(env, &event).await {
            Ok(()) | Err(StepError::Stale) => Outcome::Ack,
            Err(StepError::Retry) => Outcome::Nack,
            Err(StepError::Fail { role, code, schema_path }) => {
                tracing::warn!(workspace = %event.workspace, job = %event.job, stage = %S::STAGE, pass = event.pass.get(), role = ?role, code = %code, "stage failed");
                match fail_job(env, &at, role, code, schema_path).await {
                    Ok(()) => Outcome::Ack,
                    Err(_) => Outcome::Nack,
                }
            }
        }
    }
}
