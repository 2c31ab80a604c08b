use std::collections::HashMap;

use async_trait::async_trait;
use harmonia_contracts::Code;
use harmonia_contracts::domain::{Draft, JobStatus, PolicyOutcome, Publication, Review, Workspace};
use harmonia_contracts::event::{PolicyPassed, ReviewPassed, Stage, StageEvent};
use harmonia_contracts::ids::EvidenceId;
use harmonia_contracts::tool::Provenance;
use harmonia_store::{Query, encode};

use super::load;
use crate::Env;
use crate::policy::{PolicyInput, check};
use crate::records::{ANALYSES, AnalysisRecord, DRAFTS, POLICY_RESULTS, PUBLICATIONS, REVIEWS, WORKSPACES, doc_id};
use crate::step::{Completion, Step, StepError, complete};

/// `policy`: the deterministic rules over the exact draft version.
pub(crate) struct PolicyStep;

#[async_trait]
impl Step for PolicyStep {
    type Payload = ReviewPassed;
    const STAGE: Stage = Stage::Policy;

    async fn run(&self, env: &Env, event: &StageEvent<ReviewPassed>) -> Result<(), StepError> {
        let ws = &event.workspace;
        let draft: Draft = load(env, ws, DRAFTS, &doc_id(&event.payload.draft)).await?;
        if !draft.hash_is_current() {
            return Err(StepError::fail(Code::StaleVersion));
        }
        let review: Review = load(env, ws, REVIEWS, &doc_id(&draft.id)).await?;
        let workspace: Workspace = load(env, ws, WORKSPACES, &doc_id(ws)).await?;
        let analysis: AnalysisRecord = load(env, ws, ANALYSES, &doc_id(&event.job)).await?;
        let mut evidence: HashMap<EvidenceId, Provenance> =
            analysis.analysis.moments.iter().map(|m| (m.evidence_id.clone(), analysis.analysis.provenance)).collect();
        for doc in env.store.query(ws, PUBLICATIONS, &Query::all(1000)).await? {
            if let Ok(p) = doc.decode::<Publication>()
                && let Some(post) = p.verified_post()
                && let Ok(id) = format!("pub-{post}").parse()
            {
                evidence.insert(id, Provenance::Live);
            }
        }
        let result =
            check(&PolicyInput { workspace: &workspace, draft: &draft, review: Some(&review), evidence: &evidence });
        let (status, next) = match result.outcome {
            PolicyOutcome::Passed => {
                let e = StageEvent::new(
                    ws.clone(),
                    event.job.clone(),
                    event.pass,
                    &event.traceparent,
                    PolicyPassed { draft: draft.id.clone(), content_hash: draft.content_hash.clone() },
                );
                (JobStatus::AwaitingDraftApproval, vec![env.message(&e)?])
            }
            PolicyOutcome::Blocked => (JobStatus::PolicyBlocked, Vec::new()),
        };
        let completion = Completion {
            writes: vec![(POLICY_RESULTS, doc_id(&draft.id), encode(&result)?)],
            status,
            pass: event.pass,
            next,
        };
        complete(env, ws, &event.job, Stage::Policy, event.pass, completion).await
    }
}
