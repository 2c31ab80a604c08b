use chrono::Utc;
use harmonia_contracts::domain::{Job, JobStatus, SourceInput, Workspace};
use harmonia_contracts::event::{Pass, SourceIngested, Stage, StageEvent};
use harmonia_contracts::ids::{JobId, SourceId, WorkspaceId};
use harmonia_contracts::trace::TraceParent;
use harmonia_contracts::{Code, Error};
use harmonia_store::{Tx, encode, run_transaction};

use crate::Env;
use crate::records::{JOBS, MARKERS, Marker, PendingMessage, SOURCES, WORKSPACES, doc_id, marker_id};

/// Validate a source and create its job: source, job and the ingest marker in one
/// transaction, then `source.ingested`. A source that fails validation stores nothing.
pub async fn ingest(
    env: &Env,
    workspace: &WorkspaceId,
    input: SourceInput,
    trace: Option<TraceParent>,
) -> Result<Job, Error> {
    let now = Utc::now();
    let source = input.validate(SourceId::generate(), workspace.clone(), now)?;
    let ws_doc = env.store.get(workspace, WORKSPACES, &doc_id(workspace)).await.map_err(Error::from)?;
    let _: Workspace = ws_doc
        .ok_or_else(|| Error::new(Code::NotFound, "the workspace does not exist"))?
        .decode()
        .map_err(Error::from)?;
    let job = Job {
        id: JobId::generate(),
        workspace: workspace.clone(),
        source: source.id.clone(),
        title: source.title.clone(),
        status: JobStatus::Ingested,
        pass: Pass::FIRST,
        created_at: now,
        updated_at: now,
        failure: None,
    };
    let trace = trace.unwrap_or_else(TraceParent::new_root);
    let event = StageEvent::new(
        workspace.clone(),
        job.id.clone(),
        Pass::FIRST,
        &trace,
        SourceIngested { source: source.id.clone() },
    );
    let message = env.message(&event).map_err(|_| Error::from_code(Code::BusUnavailable))?;
    let marker = Marker {
        job: job.id.clone(),
        stage: Stage::Ingest,
        pass: Pass::FIRST,
        next: vec![PendingMessage {
            topic: message.topic.to_string(),
            data: base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &message.data),
            attributes: message.attributes.clone(),
        }],
        completed_at: now,
    };
    let (source_data, job_data, marker_data) = (
        encode(&source).map_err(Error::from)?,
        encode(&job).map_err(Error::from)?,
        encode(&marker).map_err(Error::from)?,
    );
    let store = &*env.store;
    let (src, jb, mk) = (&source_data, &job_data, &marker_data);
    let job_id = &job.id;
    let source_id = &source.id;
    run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
        let mut tx = Tx::begin(store, workspace);
        tx.put(SOURCES, &doc_id(source_id), src.clone());
        tx.put(JOBS, &doc_id(job_id), jb.clone());
        tx.put(MARKERS, &marker_id(job_id, Stage::Ingest, Pass::FIRST), mk.clone());
        tx.commit().await
    })
    .await
    .map_err(Error::from)?;
    env.bus.publish(message).await.map_err(|e| Error::from_code(e.code()))?;
    Ok(job)
}
