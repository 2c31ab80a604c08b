//! What steps read besides their own inputs.

use harmonia_contracts::Code;
use harmonia_contracts::domain::{Job, MemoryFact, PostMetrics, WorkspaceConfig};
use harmonia_contracts::ids::{DocId, JobId, WorkspaceId};
use harmonia_store::{Collection, decode_each, scan_all};
use serde::de::DeserializeOwned;

use crate::Env;
use crate::records::{JOBS, POST_METRICS, doc_id};
use crate::step;

/// How many eligible memory facts a specialist sees (the newest).
const MEMORY_FACTS: u32 = 20;

/// Read a document the step needs; a missing one fails the job with `not_found`.
pub(crate) async fn load<T: DeserializeOwned>(
    env: &Env,
    workspace: &WorkspaceId,
    collection: Collection,
    id: &DocId,
) -> Result<T, step::Error> {
    let doc = env.store.get(workspace, collection, id).await?.ok_or_else(|| step::Error::fail(Code::NotFound))?;
    Ok(doc.decode()?)
}

/// The context Nimi and Ryan may use beyond the job: verified performance of earlier posts
/// (all of it: a page limit must not silently drop some) and the workspace's newest eligible
/// memory facts.
pub(crate) async fn context(
    env: &Env,
    workspace: &WorkspaceId,
) -> Result<(Vec<PostMetrics>, Vec<MemoryFact>), step::Error> {
    let performance = decode_each(POST_METRICS, &scan_all(&*env.store, workspace, POST_METRICS).await?);
    let memory = harmonia_agents::research::eligible_memory(&*env.store, workspace, MEMORY_FACTS).await?;
    Ok((performance, memory))
}

/// The workspace configuration the job recorded when it was created (never the current one,
/// which may have changed since).
pub(crate) async fn job_config(
    env: &Env,
    workspace: &WorkspaceId,
    job: &JobId,
) -> Result<WorkspaceConfig, step::Error> {
    let job: Job = load(env, workspace, JOBS, &doc_id(job)).await?;
    match crate::workspace::version_of_job(&*env.store, &job).await {
        Ok(version) => Ok(version.config),
        Err(e) if e.code.default_retryable() => Err(step::Error::Retry),
        Err(e) => Err(step::Error::fail(e.code)),
    }
}
