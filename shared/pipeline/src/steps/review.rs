use async_trait::async_trait;
use harmonia_agents::io::{DaraInput, DraftView, ReviewOutput, RoleInput};
use harmonia_contracts::Code;
use harmonia_contracts::domain::{Draft, JobStatus, Review, Verdict};
use harmonia_contracts::event::{DraftWritten, Pass, ReviewPassed, RevisionRequested, Stage, StageEvent};
use harmonia_store::encode;

use super::draft::selected;
use super::{load, seed};
use crate::Env;
use crate::records::{DRAFTS, REVIEWS, doc_id};
use crate::step::{Completion, Step, StepError, complete};

/// `review`: Dara assesses the exact draft. `revise` on pass 1 sends it back to Noni once;
/// `revise` on pass 2 parks the job for a human — there is no third pass.
pub(crate) struct ReviewStep;

#[async_trait]
impl Step for ReviewStep {
    type Payload = DraftWritten;
    const STAGE: Stage = Stage::Review;

    async fn run(&self, env: &Env, event: &StageEvent<DraftWritten>) -> Result<(), StepError> {
        let ws = &event.workspace;
        let draft: Draft = load(env, ws, DRAFTS, &doc_id(&event.payload.draft)).await?;
        if draft.content_hash != event.payload.content_hash || !draft.hash_is_current() {
            return Err(StepError::fail(Code::StaleVersion));
        }
        let (item, brief, analysis) = selected(env, ws, &event.job).await?;
        let evidence =
            analysis.analysis.moments.into_iter().filter(|m| brief.evidence.contains(&m.evidence_id)).collect();
        let input = RoleInput::Dara(DaraInput {
            pass: draft.pass,
            draft: DraftView { platform: draft.platform, body: draft.body.clone(), claims: draft.claims.clone() },
            item,
            brief,
            evidence,
        });
        let out: ReviewOutput =
            env.runtime.run_task(&seed(env, event, Stage::Review, input)).await?.state_delta.require("review")?;
        let review = Review {
            draft: draft.id.clone(),
            pass: draft.pass,
            verdict: out.verdict,
            assessments: out.assessments,
            issues: out.issues,
            provenance: out.provenance,
        };
        let (status, pass, next) = match (review.verdict, draft.pass) {
            (Verdict::Pass, pass) => {
                let e = StageEvent::new(
                    ws.clone(),
                    event.job.clone(),
                    pass,
                    &event.traceparent,
                    ReviewPassed { draft: draft.id.clone() },
                );
                (JobStatus::Reviewed, pass, vec![env.message(&e)?])
            }
            (Verdict::Revise, p) if p == Pass::FIRST => {
                let e = StageEvent::new(
                    ws.clone(),
                    event.job.clone(),
                    Pass::REVISION,
                    &event.traceparent,
                    RevisionRequested { draft: draft.id.clone() },
                );
                (JobStatus::RevisionRequested, Pass::REVISION, vec![env.message(&e)?])
            }
            (Verdict::Revise, pass) => (JobStatus::NeedsHuman, pass, Vec::new()),
        };
        let completion =
            Completion { writes: vec![(REVIEWS, doc_id(&draft.id), encode(&review)?)], status, pass, next };
        complete(env, ws, &event.job, Stage::Review, draft.pass, completion).await
    }
}
