use chrono::Utc;
use harmonia_agents::io::{DraftOutput, DraftView, NoniInput, OperatorRound, Revision};
use harmonia_agents::role;
use harmonia_contracts::Code;
use harmonia_contracts::domain::{ApprovalSubject, Brief, Draft, Job, JobStatus, PlanItem, Review};
use harmonia_contracts::event::{DraftWritten, EventPayload, ItemSelected, Pass, RevisionRequested, Round, StageEvent};
use harmonia_contracts::ids::{DraftId, JobId, WorkspaceId};

use super::read::{load, operator_feedback};
use super::seed::seed;
use crate::Env;
use crate::records::{
    ANALYSES, AnalysisRecord, DRAFTS, PLANS, PlanRecord, REVIEWS, STRATEGIES, StrategyRecord, doc_id,
};
use crate::registry::{Subscribed, stage};
use crate::step::{self, Completion, Step, complete, next_event};

/// The id of a job's draft for a round and pass: `draft-<job>-<pass>` for the original round,
/// `draft-<job>-r<round>-<pass>` in an operator round, or its stable shortening when a long
/// job id makes that too long, so a redelivery finds the same draft.
pub fn draft_id(job: &JobId, round: Round, pass: Pass) -> DraftId {
    match round.is_original() {
        true => DraftId::stable(&format!("draft-{job}-{}", pass.get())),
        false => DraftId::stable(&format!("draft-{job}-r{}-{}", round.get(), pass.get())),
    }
}

/// The ids every draft version of `job` can have, in the order they are written: by round,
/// then pass.
pub fn every_draft_id(job: &JobId) -> impl Iterator<Item = DraftId> + '_ {
    Round::all().flat_map(move |round| [Pass::FIRST, Pass::REVISION].map(|pass| draft_id(job, round, pass)))
}

/// The id of the job's current draft: the one of its round and pass.
pub fn current_draft_id(job: &Job) -> DraftId {
    draft_id(&job.id, job.round, job.pass)
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

/// Noni writes the selected item in the event's round and pass (with the revision, on pass 2;
/// with the operator's feedback and the draft it is about, in an operator round).
async fn write<P: Subscribed<Consumer = stage::Draft>>(
    env: &Env,
    event: &StageEvent<P>,
    revision: Option<Revision>,
    operator: Option<OperatorRound<DraftView>>,
) -> Result<(), step::Error> {
    let (ws, pass) = (&event.workspace, event.pass);
    let (item, brief, analysis) = selected(env, ws, &event.job).await?;
    let config = super::read::job_config(env, ws, &event.job).await?;
    let max_characters = config.channels.iter().find(|c| c.platform == item.channel).and_then(|c| c.max_characters);
    let mut noni = NoniInput::new(pass, item.clone(), brief, &analysis.analysis.moments, revision)
        .with_max_characters(max_characters);
    if let Some(operator) = operator {
        noni = noni.in_round(operator);
    }
    let invocation = env.runtime.invoke::<role::Noni>(&seed(env, event, noni, &config).await?).await?;
    let mut output: DraftOutput = invocation.output;
    // What the post quotes, it quotes in the source's own characters.
    let cited: Vec<&str> = analysis
        .analysis
        .moments
        .iter()
        .filter(|m| output.claims.iter().any(|c| c.evidence.contains(&m.evidence_id)))
        .map(|m| m.quote.as_str())
        .collect();
    output.body = harmonia_grounding::as_said(&output.body, &cited);
    // A thread's text is its posts joined: written by deterministic code, never taken apart.
    output.thread = output.thread.iter().map(|post| harmonia_grounding::as_said(post, &cited)).collect();
    if !output.thread.is_empty() {
        output.body = Draft::thread_body(&output.thread);
    }
    let id = draft_id(&event.job, event.round, pass);
    let draft = Draft {
        id: id.clone(),
        job: event.job.clone(),
        item: item.id,
        pass,
        round: event.round,
        platform: item.channel,
        content_hash: Draft::compute_hash(item.channel, &output.body, &output.claims, &output.thread),
        thread: output.thread,
        body: output.body,
        claims: output.claims,
        provenance: output.provenance,
        created_at: Utc::now(),
    };
    let written = DraftWritten { draft: id.clone(), content_hash: draft.content_hash.clone() };
    let completion = Completion::new(JobStatus::Drafted, pass)
        .write(DRAFTS, doc_id(&id), &draft)?
        .research(&invocation.research)?
        .publish(env, &next_event(event, written))?;
    complete(env, event, completion).await
}

/// Refuses an event for the other pass: each draft step handles exactly one.
fn require_pass<P: EventPayload>(event: &StageEvent<P>, pass: Pass) -> Result<(), step::Error> {
    if event.pass == pass { Ok(()) } else { Err(step::Error::fail(Code::InvalidTransition)) }
}

/// `draft`, pass 1: Noni writes the selected item — in an operator round, the next version of
/// the draft the operator's feedback is about.
impl Step for ItemSelected {
    async fn run(env: &Env, event: &StageEvent<ItemSelected>) -> Result<(), step::Error> {
        require_pass(event, Pass::FIRST)?;
        let ws = &event.workspace;
        let operator = match operator_feedback(env, ws, &event.job, ApprovalSubject::Draft, event.round).await? {
            Some((feedback, version)) => {
                let before = event.round.previous().ok_or_else(|| step::Error::fail(Code::InvalidTransition))?;
                let previous = draft_with_hash(env, ws, &event.job, before, &version).await?;
                let view = DraftView {
                    platform: previous.platform,
                    body: previous.body,
                    claims: previous.claims,
                    thread: previous.thread,
                };
                Some(OperatorRound { round: event.round, feedback, previous: view })
            }
            None => None,
        };
        write(env, event, None, operator).await
    }
}

/// The draft of `round` (either pass) whose version is `hash`: the one an operator decided on.
async fn draft_with_hash(
    env: &Env,
    ws: &WorkspaceId,
    job: &JobId,
    round: Round,
    hash: &str,
) -> Result<Draft, step::Error> {
    for pass in [Pass::REVISION, Pass::FIRST] {
        if let Some(doc) = env.store.get(ws, DRAFTS, &doc_id(draft_id(job, round, pass))).await? {
            let draft: Draft = doc.decode()?;
            if draft.content_hash == hash {
                return Ok(draft);
            }
        }
    }
    Err(step::Error::fail(Code::StaleVersion))
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
        write(env, event, Some(revision), None).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draft_id_is_stable_for_its_job_and_pass_even_for_a_long_job_id() {
        let short: JobId = "job-1".parse().expect("job");
        let r0 = Round::ORIGINAL;
        assert_eq!(draft_id(&short, r0, Pass::REVISION).as_str(), "draft-job-1-2");
        assert_eq!(draft_id(&short, Round::MAX, Pass::FIRST).as_str(), "draft-job-1-r3-1");
        let long: JobId = "j".repeat(128).parse().expect("job");
        let first = draft_id(&long, r0, Pass::FIRST);
        assert_eq!(first, draft_id(&long, r0, Pass::FIRST));
        assert_ne!(first, draft_id(&long, r0, Pass::REVISION));
        assert_ne!(first, draft_id(&long, Round::MAX, Pass::FIRST));
        let every: Vec<DraftId> = every_draft_id(&short).collect();
        assert_eq!(every.len(), 8, "two passes in each of four rounds");
        assert_eq!((every[0].as_str(), every[7].as_str()), ("draft-job-1-1", "draft-job-1-r3-2"));
        assert!(first.as_str().starts_with("draft-j"));
    }
}
