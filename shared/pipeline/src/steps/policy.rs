use harmonia_contracts::Code;
use harmonia_contracts::domain::{Draft, JobStatus, PolicyOutcome, PolicyRule, Review};
use harmonia_contracts::event::{PolicyPassed, ReviewPassed, StageEvent};

use super::read::{job_config, load};
use crate::Env;
use crate::policy::{PolicyInput, check};
use crate::records::{ANALYSES, AnalysisRecord, DRAFTS, POLICY_RESULTS, REVIEWS, doc_id};
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
        let cites = draft.claims.iter().flat_map(|c| &c.evidence);
        let evidence = crate::policy::evidence::load(&*env.store, ws, &analysis, cites, env.clock.now()).await?;
        let result = check(&PolicyInput {
            now: env.clock.now(),
            workspace: &config,
            draft: &draft,
            review: Some(&review),
            evidence: &evidence,
            flagged: &analysis.flagged,
            connector: env.reach.connector,
            account: has_account(env, &config, &draft),
        });
        let completion = match result.outcome {
            PolicyOutcome::Passed => {
                let passed = PolicyPassed { draft: draft.id.clone(), content_hash: draft.content_hash.clone() };
                Completion::new(JobStatus::AwaitingDraftApproval, event.pass)
                    .publish(env, &next_event(event, passed))?
            }
            // A line that reads as an order to the system is not a rule to fix by rewording:
            // it may be an attack carried in from the source, so a person looks at it.
            PolicyOutcome::Blocked if result.violations.iter().any(|v| v.rule == PolicyRule::NoInstructionText) => {
                Completion::new(JobStatus::NeedsHuman, event.pass)
            }
            PolicyOutcome::Blocked => Completion::new(JobStatus::PolicyBlocked, event.pass),
        };
        complete(env, event, completion.write(POLICY_RESULTS, doc_id(&draft.id), &result)?).await
    }
}

/// Whether this deployment holds the credentials of `draft`'s channel in `config`.
pub(crate) fn has_account(env: &Env, config: &harmonia_contracts::domain::WorkspaceConfig, draft: &Draft) -> bool {
    config.channels.iter().find(|c| c.platform == draft.platform).is_some_and(|c| env.reach.holds_account(c))
}
