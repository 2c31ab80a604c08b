use chrono::{DateTime, Utc};
use harmonia_bus::OutboundMessage;
use harmonia_contracts::domain::{Job, SourceInput, StoredSource};
use harmonia_contracts::event::{Pass, Round, SourceIngested, Stage, StageEvent};
use harmonia_contracts::ids::{JobId, SourceId, WorkspaceId};
use harmonia_contracts::trace::TraceParent;
use harmonia_contracts::{Code, Error};
use harmonia_store::{Tx, encode, run_transaction};
use sha2::Digest as _;

use crate::Env;
use crate::records::{JOBS, MARKERS, Marker, PendingMessage, SOURCES, doc_id, marker_id};

/// Longest client idempotency key.
const MAX_KEY_LEN: usize = 200;

/// Validate a source and create its job: source, job and the ingest marker in one
/// transaction, then `source.ingested`. A source that fails validation stores nothing; so does
/// one for a workspace without a configuration (`workspace_not_configured`). The job records
/// the workspace's current configuration version and uses it to the end.
///
/// A long source's transcript and frames are stored first, as a blob
/// ([`crate::records::store_source_blob`]); the source document names it. Should the
/// transaction then fail, the blob stays unreferenced, and a retry of the same source finds
/// it already there (blobs are content-addressed).
///
/// With an idempotency key (1-200 printable ASCII characters, e.g. a client's
/// `Idempotency-Key` header), the ids derive from (workspace, key): a retried submission —
/// after a lost response or a crash — returns the job the first one created, re-publishing its
/// event, and creates nothing new. The same key with a different source is refused with
/// `idempotency_conflict`, and nothing is stored.
pub async fn ingest(
    env: &Env,
    workspace: &WorkspaceId,
    input: SourceInput,
    trace: Option<TraceParent>,
    idempotency_key: Option<&str>,
) -> Result<Job, Error> {
    let now = Utc::now();
    let (source_id, job_id) = submission_ids(workspace, idempotency_key)?;
    let source = input.validate(source_id, workspace.clone(), now)?;
    let version = crate::workspace::current(&*env.store, workspace).await?.version;
    let source = crate::records::store_source_blob(&*env.blobs, source).await?;
    let job = new_job(job_id, &source, version, now);
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
    let message =
        span.in_scope(|| env.message(&event)).map_err(|e| Error::from_code(Code::BusUnavailable).with_cause(e))?;
    match store_new_job(env, &source, &job, &message, now).await? {
        Some(first) => {
            republish_first(env, &first).await?;
            Ok(first)
        }
        None => {
            env.bus.publish(message).await.map_err(Error::from)?;
            Ok(job)
        }
    }
}

/// Fresh ids, or — with a client's idempotency key — ids derived from (workspace, key).
fn submission_ids(workspace: &WorkspaceId, idempotency_key: Option<&str>) -> Result<(SourceId, JobId), Error> {
    let Some(key) = idempotency_key else { return Ok((SourceId::generate(), JobId::generate())) };
    if key.is_empty() || key.len() > MAX_KEY_LEN || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::new(Code::InvalidRequest, "an idempotency key is 1-200 printable ASCII characters"));
    }
    let h = hex::encode(sha2::Sha256::digest(format!("{workspace}\n{key}").as_bytes()));
    Ok((format!("src-{}", &h[..32]).parse()?, format!("job-{}", &h[..32]).parse()?))
}

/// A new job over `source`, waiting for analysis, using configuration `version` throughout.
fn new_job(id: JobId, source: &StoredSource, version: u32, now: DateTime<Utc>) -> Job {
    Job::ingested(id, source.workspace.clone(), version, source.id.clone(), source.title.clone(), now)
}

/// Store the source, the job and the ingest marker (holding `message`) in one transaction.
/// Returns the job a first submission with the same ids already created, storing nothing.
async fn store_new_job(
    env: &Env,
    source: &StoredSource,
    job: &Job,
    message: &OutboundMessage,
    now: DateTime<Utc>,
) -> Result<Option<Job>, Error> {
    let marker = Marker {
        job: job.id.clone(),
        stage: Stage::Ingest,
        round: Round::ORIGINAL,
        pass: Pass::FIRST,
        next: vec![PendingMessage::from(message)],
        completed_at: now,
    };
    let (src, jb, mk) = (&encode(source)?, &encode(job)?, &encode(&marker)?);
    let store = &*env.store;
    let workspace = &job.workspace;
    run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
        let mut tx = Tx::begin(store, workspace);
        if let Some(doc) = tx.get(JOBS, &doc_id(&job.id)).await? {
            let first: Job = doc.decode()?;
            // The same key means the same request: a retry of another source is refused.
            let stored = tx.get(SOURCES, &doc_id(&first.source)).await?;
            if !stored.map(|d| d.decode::<StoredSource>()).transpose()?.is_some_and(|s| same_submission(&s, source)) {
                return Err(harmonia_store::Error::Aborted(Code::IdempotencyConflict));
            }
            return Ok(Some(first));
        }
        tx.put(SOURCES, &doc_id(&source.id), src.clone());
        tx.put(JOBS, &doc_id(&job.id), jb.clone());
        tx.put(MARKERS, &marker_id(&job.id, Stage::Ingest, Round::ORIGINAL, Pass::FIRST), mk.clone());
        tx.commit().await.map(|()| None)
    })
    .await
    .map_err(Error::from)
}

/// Whether two sources are the same submission: everything but when each arrived (a long
/// source's blob reference names its whole content).
fn same_submission(a: &StoredSource, b: &StoredSource) -> bool {
    (&a.title, &a.url, &a.language, &a.segments, &a.frames, &a.body)
        == (&b.title, &b.url, &b.language, &b.segments, &b.frames, &b.body)
}

/// Publish the first submission's event again: it may have stopped between its commit and
/// its publish.
async fn republish_first(env: &Env, first: &Job) -> Result<(), Error> {
    let marker = crate::step::marker(env, &first.workspace, &first.id, Stage::Ingest, Round::ORIGINAL, Pass::FIRST)
        .await
        .map_err(|e| Error::from_code(Code::StoreUnavailable).with_cause(e))?;
    if let Some(m) = marker {
        crate::step::republish(env, &m).await.map_err(crate::step::Error::into_error)?;
    }
    Ok(())
}
