use harmonia_agents::io::{DaraInput, DraftView, ReviewOutput};
use harmonia_agents::role;
use harmonia_contracts::Code;
use harmonia_contracts::domain::{Draft, JobStatus, Review, Verdict};
use harmonia_contracts::event::{DraftWritten, Pass, ReviewPassed, RevisionRequested, StageEvent};

use super::draft::selected;
use super::read::load;
use super::seed::seed;
use crate::Env;
use std::collections::HashSet;

use harmonia_contracts::ids::EvidenceId;

use crate::policy::{cited_evidence, review_findings};
use crate::records::{DRAFTS, REVIEWS, doc_id, research_of};
use crate::step::{self, Completion, Step, complete, next_event, next_event_in};

/// `review`: Dara assesses the exact draft. `revise` on pass 1 sends it back to Noni once;
/// `revise` on pass 2 parks the job for a human — there is no third pass.
impl Step for DraftWritten {
    async fn run(env: &Env, event: &StageEvent<DraftWritten>) -> Result<(), step::Error> {
        let ws = &event.workspace;
        let draft: Draft = load(env, ws, DRAFTS, &doc_id(&event.payload.draft)).await?;
        if draft.content_hash != event.payload.content_hash
            || !draft.hash_is_current()
            || draft.pass != event.pass
            || draft.round != event.round
        {
            return Err(step::Error::fail(Code::StaleVersion));
        }
        let (item, brief, analysis) = selected(env, ws, &event.job).await?;
        // The findings are policy's own, over the evidence the draft cites as policy resolves
        // it (moments, this job's search results, verified posts).
        let research = research_of(&*env.store, ws, &event.job).await?;
        let cites = draft.claims.iter().flat_map(|c| &c.evidence);
        let resolved =
            crate::policy::evidence::load_with(&*env.store, ws, &analysis, &research, cites, env.clock.now()).await?;
        let findings =
            review_findings(&draft.body, &cited_evidence(&draft, &resolved), brief.call_to_action.as_deref());
        let cited: HashSet<&EvidenceId> = draft.claims.iter().flat_map(|c| &c.evidence).collect();
        let research = research.into_iter().filter(|r| cited.contains(&r.evidence_id)).collect();
        let evidence: Vec<_> =
            analysis.analysis.moments.into_iter().filter(|m| brief.evidence.contains(&m.evidence_id)).collect();
        let input = DaraInput {
            pass: draft.pass,
            draft: DraftView {
                platform: draft.platform,
                body: draft.body.clone(),
                claims: draft.claims.clone(),
                thread: draft.thread.clone(),
            },
            item,
            brief,
            evidence,
            research,
            findings,
        };
        let config = super::read::job_config(env, ws, &event.job).await?;
        let out: ReviewOutput =
            env.runtime.invoke::<role::Dara>(&seed(env, event, input, &config).await?).await?.output;
        let review = Review {
            draft: draft.id.clone(),
            pass: draft.pass,
            verdict: out.verdict,
            assessments: out.assessments,
            issues: out.issues,
            provenance: out.provenance,
        };
        let draft_ref = draft.id.clone();
        let completion = match (review.verdict, draft.pass) {
            (Verdict::Pass, pass) => Completion::new(JobStatus::Reviewed, pass)
                .publish(env, &next_event(event, ReviewPassed { draft: draft_ref }))?,
            (Verdict::Revise, Pass::FIRST) => Completion::new(JobStatus::RevisionRequested, Pass::REVISION)
                .publish(env, &next_event_in(event, Pass::REVISION, RevisionRequested { draft: draft_ref }))?,
            (Verdict::Revise, pass) => Completion::new(JobStatus::NeedsHuman, pass),
        };
        complete(env, event, completion.write(REVIEWS, doc_id(&draft.id), &review)?).await
    }
}
