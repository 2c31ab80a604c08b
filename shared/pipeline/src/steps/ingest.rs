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
///
/// With an idempotency key (1-200 printable ASCII characters, e.g. a client's
/// `Idempotency-Key` header), the ids derive from (workspace, key): a retried submission —
/// after a lost response or a crash — returns the job the first one created, re-publishing its
/// event, and creates nothing new.
pub async fn ingest(
    env: &Env,
    workspace: &WorkspaceId,
    input: SourceInput,
    trace: Option<TraceParent>,
    idempotency_key: Option<&str>,
) -> Result<Job, Error> {
    let now = Utc::now();
    let (source_id, job_id) = match idempotency_key {
        None => (SourceId::generate(), JobId::generate()),
        Some(key) => {
            if key.is_empty() || key.len() > 200 || !key.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(Error::new(Code::InvalidRequest, "an idempotency key is 1-200 printable ASCII characters"));
            }
            use sha2::Digest;
            let h = hex::encode(sha2::Sha256::digest(format!("{workspace}\n{key}").as_bytes()));
            (format!("src-{}", &h[..32]).parse()?, format!("job-{}", &h[..32]).parse()?)
        }
    };
    let source = input.validate(source_id, workspace.clone(), now)?;
    let ws_doc = env.store.get(workspace, WORKSPACES, &doc_id(workspace)).await.map_err(Error::from)?;
    let _: Workspace = ws_doc
        .ok_or_else(|| Error::new(Code::NotFound, "the workspace does not exist"))?
        .decode()
        .map_err(Error::from)?;
    let job = Job {
        id: job_id,
        workspace: workspace.clone(),
        source: source.id.clone(),
        title: source.title.clone(),
        status: JobStatus::Ingested,
        pass: Pass::FIRST,
        created_at: now,
        updated_at: now,
        failure: None,
    };
    // The job's root span (or a child of the caller's); its first event is created under it.
    let span = tracing::info_span!("ingest", otel.name = "ingest", job = %job.id);
    let trace = crate::trace::origin(&span, trace.as_ref());
    let event = StageEvent::new(
        workspace.clone(),
        job.id.clone(),
        Pass::FIRST,
        &trace,
        SourceIngested { source: source.id.clone() },
    );
    let message = span.in_scope(|| env.message(&event)).map_err(|_| Error::from_code(Code::BusUnavailable))?;
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
    let existing = run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
        let mut tx = Tx::begin(store, workspace);
        if let Some(doc) = tx.get(JOBS, &doc_id(job_id)).await? {
            return Ok(Some(doc.decode::<Job>()?));
        }
        tx.put(SOURCES, &doc_id(source_id), src.clone());
        tx.put(JOBS, &doc_id(job_id), jb.clone());
        tx.put(MARKERS, &marker_id(job_id, Stage::Ingest, Pass::FIRST), mk.clone());
        tx.commit().await.map(|()| None)
    })
    .await
    .map_err(Error::from)?;
    if let Some(first) = existing {
        // The first submission may have stopped between its commit and its publish.
        if let Some(m) = crate::step::marker(env, workspace, &first.id, Stage::Ingest, Pass::FIRST)
            .await
            .map_err(|_| Error::from_code(Code::StoreUnavailable))?
        {
            crate::step::republish(env, &m).await.map_err(|_| Error::from_code(Code::BusUnavailable))?;
        }
        return Ok(first);
    }
    env.bus.publish(message).await.map_err(|e| Error::from_code(e.code()))?;
    Ok(job)
}
