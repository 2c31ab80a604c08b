//! What steps read besides their own inputs.

use chrono::Utc;
use harmonia_agents::eligibility::{self, EligibleMemory, VerifiedPerformance};
use harmonia_contracts::Code;
use harmonia_contracts::domain::Workspace;
use harmonia_contracts::ids::{DocId, WorkspaceId};
use harmonia_store::Collection;
use serde::de::DeserializeOwned;

use crate::Env;
use crate::records::{WORKSPACES, doc_id};
use crate::step;

/// How many eligible memory facts a specialist sees (the newest).
const MEMORY_FACTS: usize = 20;

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

/// The context Nimi and Ryan may use beyond the job, by the one eligibility rule: the
/// workspace's verified performance (all of it) and its newest eligible memory facts. The
/// workspace's mode decides whether mock metrics may count.
pub(crate) async fn context(
    env: &Env,
    workspace: &WorkspaceId,
) -> Result<(VerifiedPerformance, EligibleMemory), step::Error> {
    let record: Workspace = load(env, workspace, WORKSPACES, &doc_id(workspace)).await?;
    Ok(eligibility::context(&*env.store, workspace, record.mode, Utc::now(), MEMORY_FACTS).await?)
}
