//! What steps read besides their own inputs.

use harmonia_agents::eligibility::{self, EligibleMemory, VerifiedPerformance};
use harmonia_contracts::Code;
use harmonia_contracts::domain::{ApprovalSubject, Decision, WorkspaceConfig};
use harmonia_contracts::domain::{Job, WorkspaceMode};
use harmonia_contracts::event::Round;
use harmonia_contracts::ids::{DocId, JobId, WorkspaceId};
use harmonia_store::Collection;
use serde::de::DeserializeOwned;

use crate::Env;
use crate::records::{JOBS, doc_id};
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
/// mode of the job's configuration decides whether mock metrics may count.
pub(crate) async fn context(
    env: &Env,
    workspace: &WorkspaceId,
    mode: WorkspaceMode,
) -> Result<(VerifiedPerformance, EligibleMemory), step::Error> {
    Ok(eligibility::context(&*env.store, workspace, mode, env.clock.now(), MEMORY_FACTS).await?)
}

/// The workspace configuration the job recorded when it was created (never the current one,
/// which may have changed since).
pub(crate) async fn job_config(
    env: &Env,
    workspace: &WorkspaceId,
    job: &JobId,
) -> Result<WorkspaceConfig, step::Error> {
    let job: Job = load(env, workspace, JOBS, &doc_id(job)).await?;
    Ok(crate::workspace::version_of_job(&*env.store, &job).await?.config)
}

/// The connector the job's `platform` channel publishes through (the job's own workspace
/// version names the channel). Policy has checked it exists; a channel without one now (its
/// credentials removed since) fails the step with `invalid_config`, before any call.
pub(crate) async fn channel_connector(
    env: &Env,
    workspace: &WorkspaceId,
    job: &JobId,
    platform: harmonia_contracts::domain::Platform,
) -> Result<std::sync::Arc<dyn harmonia_connectors::Connector>, step::Error> {
    let config = job_config(env, workspace, job).await?;
    config
        .channels
        .iter()
        .find(|c| c.platform == platform)
        .and_then(|c| env.connector_for(c))
        .cloned()
        .ok_or_else(|| step::Error::fail(harmonia_contracts::Code::InvalidConfig))
}

/// What `connector` reads back for `lookup`; a read that fails leaves the step to be tried again
/// (`connector_failed`), never a conclusion about the post.
pub(crate) async fn read_back(
    connector: &dyn harmonia_connectors::Connector,
    lookup: harmonia_connectors::Lookup<'_>,
) -> Result<harmonia_connectors::Found, step::Error> {
    connector
        .read_back(lookup)
        .await
        .map_err(|e| step::Error::Retry(harmonia_contracts::Error::from_code(Code::ConnectorFailed).with_cause(e)))
}

/// The operator's feedback that opened `round` at `subject`'s gate, with the version it is
/// about (its content hash); `None` for the original round. A round without its request for
/// changes is a broken record: the step fails (`not_found`).
pub(crate) async fn operator_feedback(
    env: &Env,
    workspace: &WorkspaceId,
    job: &JobId,
    subject: ApprovalSubject,
    round: Round,
) -> Result<Option<(String, String)>, step::Error> {
    if round.is_original() {
        return Ok(None);
    }
    let record = crate::records::round_decision(&*env.store, workspace, job, subject, round)
        .await
        .map_err(|e| step::Error::fail(e.code))?;
    match record.map(|r| r.approval) {
        Some(a) => match a.decision {
            Decision::ChangesRequested { feedback } => Ok(Some((feedback, a.subject_hash))),
            _ => Err(step::Error::fail(Code::InvalidTransition)),
        },
        None => Err(step::Error::fail(Code::NotFound)),
    }
}
