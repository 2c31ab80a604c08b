use std::collections::HashMap;

use harmonia_agents::research::publication_evidence_id;
use harmonia_contracts::Code;
use harmonia_contracts::domain::{Draft, JobStatus, PolicyOutcome, Publication, Review};
use harmonia_contracts::event::{PolicyPassed, ReviewPassed, StageEvent};
use harmonia_contracts::ids::{EvidenceId, WorkspaceId};
use harmonia_contracts::tool::Provenance;
use harmonia_store::{decode_each, scan_all};

use super::read::{job_config, load};
use crate::Env;
use crate::policy::{Evidence, PolicyInput, check};
use crate::records::{ANALYSES, AnalysisRecord, DRAFTS, POLICY_RESULTS, PUBLICATIONS, REVIEWS, doc_id};
use crate::step::{self, Completion, Step, complete, next_event};

/// `policy`: the deterministic rules (of the job's workspace configuration version) over the
/// exact draft version.
impl Step for ReviewPassed {
    async fn run(env: &Env, event: &StageEvent<ReviewPassed>) -> Result<(), step::Error> {
        let ws = &event.workspace;
        let draft: Draft = load(env, ws, DRAFTS, &doc_id(&event.payload.draft)).await?;
        if !draft.hash_is_current() {
            return Err(step::Error::fail(Code::StaleVersion));
        }
        let review: Review = load(env, ws, REVIEWS, &doc_id(&draft.id)).await?;
        let config = job_config(env, ws, &event.job).await?;
        let analysis: AnalysisRecord = load(env, ws, ANALYSES, &doc_id(&event.job)).await?;
        let evidence = evidence(env, ws, &analysis).await?;
        let result = check(&PolicyInput {
            workspace: &config,
            draft: &draft,
            review: Some(&review),
            evidence: &evidence,
            connector: env.connector.kind(),
        });
        let completion = match result.outcome {
            PolicyOutcome::Passed => {
                let passed = PolicyPassed { draft: draft.id.clone(), content_hash: draft.content_hash.clone() };
                Completion::new(JobStatus::AwaitingDraftApproval, event.pass)
                    .publish(env.message(&next_event(event, passed))?)
            }
            PolicyOutcome::Blocked => Completion::new(JobStatus::PolicyBlocked, event.pass),
        };
        complete(env, event, completion.write(POLICY_RESULTS, doc_id(&draft.id), &result)?).await
    }
}

/// The evidence a post may cite, with its provenance and text: the analysis's moments (their
/// exact quotes), and every verified publication of the workspace (its body; read page by
/// page, so none is missed).
async fn evidence(
    env: &Env,
    ws: &WorkspaceId,
    analysis: &AnalysisRecord,
) -> Result<HashMap<EvidenceId, Evidence>, step::Error> {
    let provenance = analysis.analysis.provenance;
    let mut evidence: HashMap<EvidenceId, Evidence> = analysis
        .analysis
        .moments
        .iter()
        .map(|m| (m.evidence_id.clone(), Evidence { provenance, text: m.quote.clone() }))
        .collect();
    let publications: Vec<Publication> = decode_each(PUBLICATIONS, &scan_all(&*env.store, ws, PUBLICATIONS).await?);
    for publication in &publications {
        if let Some(post) = publication.verified_post() {
            let text = publication.body.clone();
            evidence.insert(publication_evidence_id(post), Evidence { provenance: Provenance::Live, text });
        }
    }
    Ok(evidence)
}
