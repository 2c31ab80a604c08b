use chrono::Utc;
use harmonia_agents::io::{DraftOutput, NoniInput, Revision, RoleInput};
use harmonia_contracts::Code;
use harmonia_contracts::domain::{Brief, Draft, JobStatus, PlanItem, Review};
use harmonia_contracts::event::{DraftWritten, EventPayload, ItemSelected, Pass, RevisionRequested, StageEvent};
use harmonia_contracts::ids::{DraftId, JobId, WorkspaceId};

use super::read::load;
use super::seed::seed;
use crate::Env;
use crate::records::{
    ANALYSES, AnalysisRecord, DRAFTS, PLANS, PlanRecord, REVIEWS, STRATEGIES, StrategyRecord, doc_id,
};
use crate::registry::{Subscribed, stage};
use crate::step::{self, Completion, Step, complete, next_event};

/// The id of a job's draft for a pass: `draft-<job>-<pass>`, or its stable shortening when a
/// long job id makes that too long, so a redelivery finds the same draft.
pub fn draft_id(job: &JobId, pass: Pass) -> DraftId {
    DraftId::stable(&format!("draft-{job}-{}", pass.get()))
}

/// The selected item and its brief.
pub(crate) async fn selected(
    env: &Env,
    ws: &WorkspaceId,
    job: &JobId,
) -> Result<(PlanItem, Brief, AnalysisRecord), step::Error> {
    let plan: PlanRecord = load(env, ws, PLANS, &doc_id(job)).await?;
    let item = found(plan.plan.items.iter().find(|i| i.id == plan.selected))?;
    let strategy: StrategyRecord = load(env, ws, STRATEGIES, &doc_id(job)).await?;
    let brief = found(strategy.strategy.briefs.iter().find(|b| b.id == item.brief))?;
    let analysis: AnalysisRecord = load(env, ws, ANALYSES, &doc_id(job)).await?;
    Ok((item, brief, analysis))
}

/// An entry a stored record must hold; a missing one fails the step as not found.
fn found<T: Clone>(entry: Option<&T>) -> Result<T, step::Error> {
    entry.cloned().ok_or_else(|| step::Error::fail(Code::NotFound))
}

/// Noni writes the selected item in the event's pass (with the revision, on pass 2).
async fn write<P: Subscribed<Consumer = stage::Draft>>(
    env: &Env,
    event: &StageEvent<P>,
    revision: Option<Revision>,
) -> Result<(), step::Error> {
    let (ws, pass) = (&event.workspace, event.pass);
    let (item, brief, analysis) = selected(env, ws, &event.job).await?;
    let input = RoleInput::Noni(NoniInput::new(pass, item.clone(), brief, &analysis.analysis.moments, revision));
    let output: DraftOutput = env.runtime.run_task(&seed(env, event, input)).await?.state_delta.require("draft")?;
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
    let written = DraftWritten { draft: id.clone(), content_hash: draft.content_hash.clone() };
    let completion = Completion::new(JobStatus::Drafted, pass)
        .write(DRAFTS, doc_id(&id), &draft)?
        .publish(env.message(&next_event(event, written))?);
    complete(env, event, completion).await
}

/// Refuses an event for the other pass: each draft step handles exactly one.
fn require_pass<P: EventPayload>(event: &StageEvent<P>, pass: Pass) -> Result<(), step::Error> {
    if event.pass == pass { Ok(()) } else { Err(step::Error::fail(Code::InvalidTransition)) }
}

/// `draft`, pass 1: Noni writes the selected item.
impl Step for ItemSelected {
    async fn run(env: &Env, event: &StageEvent<ItemSelected>) -> Result<(), step::Error> {
        require_pass(event, Pass::FIRST)?;
        write(env, event, None).await
    }
}

/// `draft`, pass 2: Noni's single revision, with the first draft and Dara's issues.
impl Step for RevisionRequested {
    async fn run(env: &Env, event: &StageEvent<RevisionRequested>) -> Result<(), step::Error> {
        require_pass(event, Pass::REVISION)?;
        let ws = &event.workspace;
        let previous: Draft = load(env, ws, DRAFTS, &doc_id(&event.payload.draft)).await?;
        let review: Review = load(env, ws, REVIEWS, &doc_id(&event.payload.draft)).await?;
        let revision =
            Revision { previous_body: previous.body, previous_claims: previous.claims, issues: review.issues };
        write(env, event, Some(revision)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draft_id_is_stable_for_its_job_and_pass_even_for_a_long_job_id() {
        let short: JobId = "job-1".parse().expect("job");
        assert_eq!(draft_id(&short, Pass::REVISION).as_str(), "draft-job-1-2");
        let long: JobId = "j".repeat(128).parse().expect("job");
        let first = draft_id(&long, Pass::FIRST);
        assert_eq!(first, draft_id(&long, Pass::FIRST));
        assert_ne!(first, draft_id(&long, Pass::REVISION));
        assert!(first.as_str().starts_with("draft-j"));
    }
}
