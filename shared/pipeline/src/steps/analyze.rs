use async_trait::async_trait;
use harmonia_agents::io::{NimiInput, RoleInput};
use harmonia_contracts::domain::{Analysis, JobStatus, Source};
use harmonia_contracts::event::{AnalysisCompleted, SourceIngested, Stage, StageEvent};
use harmonia_store::encode;

use super::{load, seed};
use crate::Env;
use crate::records::{ANALYSES, AnalysisRecord, SOURCES, doc_id};
use crate::step::{Completion, Step, StepError, complete};

/// `analyze`: Harmonia routes to Nimi over the source, verified performance and eligible memory.
pub(crate) struct Analyze;

#[async_trait]
impl Step for Analyze {
    type Payload = SourceIngested;
    const STAGE: Stage = Stage::Analyze;

    async fn run(&self, env: &Env, event: &StageEvent<SourceIngested>) -> Result<(), StepError> {
        let ws = &event.workspace;
        let source: Source = load(env, ws, SOURCES, &doc_id(&event.payload.source)).await?;
        let (performance, memory) = super::context(env, ws).await?;
        let input = RoleInput::Nimi(NimiInput::new(&source, performance, memory));
        let invocation = env.runtime.run_task(&seed(env, event, Stage::Analyze, input)).await?;
        let analysis: Analysis = invocation.state_delta.require("analysis")?;
        let moments = u32::try_from(analysis.moments.len()).unwrap_or(u32::MAX);
        let record = AnalysisRecord { job: event.job.clone(), analysis };
        let next = StageEvent::new(
            ws.clone(),
            event.job.clone(),
            event.pass,
            &event.traceparent,
            AnalysisCompleted { moments },
        );
        let completion = Completion {
            writes: vec![(ANALYSES, doc_id(&event.job), encode(&record)?)],
            status: JobStatus::Analyzed,
            pass: event.pass,
            next: vec![env.message(&next)?],
        };
        complete(env, ws, &event.job, Stage::Analyze, event.pass, completion).await
    }
}
