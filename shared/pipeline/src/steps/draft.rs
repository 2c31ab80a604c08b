use async_trait::async_trait;
use chrono::Utc;
use harmonia_agents::io::{DraftOutput, NoniInput, Revision, RoleInput};
use harmonia_contracts::Code;
use harmonia_contracts::domain::{Brief, Draft, JobStatus, PlanItem, Review};
use harmonia_contracts::event::{DraftWritten, EventPayload, ItemSelected, Pass, RevisionRequested, Stage, StageEvent};
use harmonia_contracts::ids::{DraftId, JobId};
use harmonia_store::encode;

use super::{load, seed};
use crate::Env;
use crate::records::{
    ANALYSES, AnalysisRecord, DRAFTS, PLANS, PlanRecord, REVIEWS, STRATEGIES, StrategyRecord, doc_id,
};
use crate::step::{Completion, Step, StepError, complete};

/// The id of a job's draft for a pass.
pub fn draft_id(job: &JobId, pass: Pass) -> DraftId {
    format!("draft-{job}-{}", pass.get()).parse().unwrap_or_else(|_| DraftId::generate())
}

/// The selected item and its brief.
pub(crate) async fn selected(
    env: &Env,
    ws: &harmonia_contracts::ids::WorkspaceId,
    job: &JobId,
) -> Result<(PlanItem, Brief, AnalysisRecord), StepError> {
    let plan: PlanRecord = load(env, ws, PLANS, &doc_id(job)).await?;
    let item = plan
        .plan
        .items
        .iter()
        .find(|i| i.id == plan.selected)
        .cloned()
        .ok_or_else(|| StepError::fail(Code::NotFound))?;
    let strategy: StrategyRecord = load(env, ws, STRATEGIES, &doc_id(job)).await?;
    let brief = strategy
        .strategy
        .briefs
        .iter()
        .find(|b| b.id == item.brief)
        .cloned()
        .ok_or_else(|| StepError::fail(Code::NotFound))?;
    let analysis: AnalysisRecord = load(env, ws, ANALYSES, &doc_id(job)).await?;
    Ok((item, brief, analysis))
}

async fn write<P: EventPayload>(
    env: &Env,
    event: &StageEvent<P>,
    pass: Pass,
    revision: Option<Revision>,
) -> Result<(), StepError> {
    let ws = &event.workspace;
    let (item, brief, analysis) = selected(env, ws, &event.job).await?;
    let input = RoleInput::Noni(NoniInput::new(pass, item.clone(), brief, &analysis.analysis.moments, revision));
    let output: DraftOutput =
        env.runtime.run_task(&seed(env, event, Stage::Draft, input)).await?.state_delta.require("draft")?;
    let id = draft_id(&event.job, pass);
    let draft = Draft {
        id: id.clone(),
        job: event.job.clone(),
        item: item.id,
        pass,
        platform: item.channel,
        content_hash: Draft::compute_hash(item.channel, &output.body, &output.claims),
        body: output.body,
        claims: output.claims,
        provenance: output.provenance,
        created_at: Utc::now(),
    };
    let next = StageEvent::new(
        ws.clone(),
        event.job.clone(),
        pass,
        &event.traceparent,
        DraftWritten { draft: id.clone(), content_hash: draft.content_hash.clone() },
    );
    let completion = Completion {
        writes: vec![(DRAFTS, doc_id(&id), encode(&draft)?)],
        status: JobStatus::Drafted,
        pass,
        next: vec![env.message(&next)?],
    };
    complete(env, ws, &event.job, Stage::Draft, pass, completion).await
}

/// `draft`, pass 1: Noni writes the selected item.
pub(crate) struct FirstDraft;

#[async_trait]
impl Step for FirstDraft {
    type Payload = ItemSelected;
    const STAGE: Stage = Stage::Draft;

    async fn run(&self, env: &Env, event: &StageEvent<ItemSelected>) -> Result<(), StepError> {
        write(env, event, Pass::FIRST, None).await
    }
}

/// `draft`, pass 2: Noni's single revision, with the first draft and Dara's issues.
pub(crate) struct Revise;

#[async_trait]
impl Step for Revise {
    type Payload = RevisionRequested;
    const STAGE: Stage = Stage::Draft;

    async fn run(&self, env: &Env, event: &StageEvent<RevisionRequested>) -> Result<(), StepError> {
        if event.pass != Pass::REVISION {
            return Err(StepError::fail(Code::InvalidTransition));
        }
        let ws = &event.workspace;
        let previous: Draft = load(env, ws, DRAFTS, &doc_id(&event.payload.draft)).await?;
        let review: Review = load(env, ws, REVIEWS, &doc_id(&event.payload.draft)).await?;
        let revision =
            Revision { previous_body: previous.body, previous_claims: previous.claims, issues: review.issues };
        write(env, event, Pass::REVISION, Some(revision)).await
    }
}
