//! What the embedded-default tests share: the bundled sample run through a whole pipeline.

use std::time::Duration;

use harmonia_contracts::domain::{Job, SourceInput};
use harmonia_contracts::ids::WorkspaceId;
use harmonia_local::{Local, Wrap};
use harmonia_pipeline::registry::Timing;
use harmonia_pipeline::steps::ingest;

/// The bundled sample source.
pub(crate) const SAMPLE: &str = include_str!("../../../../examples/launch-talk.json");

/// How long a test waits for a job to settle.
pub(crate) const WAIT: Duration = Duration::from_secs(120);

/// The sample submitted in a fresh workspace of a deployment at `dir` whose model is wrapped by
/// `wrap`, and driven until it waits for a human or, approving both gates as the operator when
/// `approve`, until it is done: the deployment, its workspace, the job as created and where it
/// ended.
pub(crate) async fn sample_driven(dir: &std::path::Path, wrap: Wrap, approve: bool) -> (Local, WorkspaceId, Job, Job) {
    let local = Local::open_with(dir, Timing::LOCAL, wrap).await.expect("open");
    let ws = local.workspace().await.expect("workspace");
    let sample: SourceInput = serde_json::from_str(SAMPLE).expect("sample parses");
    let job = ingest(&local.env, &ws, sample, None, None).await.expect("ingest");
    let done = local.drive(&ws, &job.id, approve, WAIT, |_| {}).await.expect("drive");
    local.settle(WAIT).await.expect("settle");
    (local, ws, job, done)
}
