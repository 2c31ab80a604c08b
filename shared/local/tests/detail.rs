//! The job detail of a verified job holds every stage's record: the strategy, the selected
//! plan item, the drafts with their counts, seven assessments per review pass, every policy
//! rule with its reason, both decisions and the receipt.

use harmonia_contracts::domain::{ApprovalSubject, Decision, Job, JobStatus, PolicyOutcome, ReceiptOutcome};
use harmonia_contracts::ids::WorkspaceId;
use harmonia_contracts::{Code, Role};
use harmonia_local::{Local, Wrap};
use harmonia_pipeline::detail;

mod common;

/// The sample submitted in a fresh demo workspace and driven until it waits for a human or,
/// approving as the operator, until it is done.
async fn driven(approve: bool) -> (tempfile::TempDir, Local, WorkspaceId, Job) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (local, ws, _, job) = common::sample_driven(dir.path(), Wrap::default(), approve).await;
    (dir, local, ws, job)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_detail_of_a_verified_job_holds_every_stage() {
    let (_dir, local, ws, done) = driven(true).await;
    let job = &done;
    assert_eq!(done.status, JobStatus::Verified, "{:?}", done.failure);

    let d = detail::job(&local.env, &ws, &job.id).await.expect("detail");
    assert_eq!(d.job.status, JobStatus::Verified);
    let source = d.source.as_ref().expect("source");
    assert!(source.segments > 0 && source.duration_ms > 0);
    let analysis = d.analysis.as_ref().expect("analysis");
    assert!(!analysis.moments.is_empty());

    let strategy = d.strategy.as_ref().expect("strategy");
    assert_eq!(strategy.content_hash.len(), 64);
    assert!(!strategy.briefs.is_empty());
    // Every brief's evidence is quoted inline from Nimi's moments.
    for brief in &strategy.briefs {
        assert!(!brief.evidence.is_empty());
        for cited in &brief.evidence {
            let moment = analysis.moments.iter().find(|m| m.evidence_id == cited.evidence_id).expect("a moment");
            assert_eq!(cited.quote.as_deref(), Some(moment.quote.as_str()));
            assert_eq!((cited.start_ms, cited.end_ms), (Some(moment.start_ms), Some(moment.end_ms)));
        }
    }

    let plan = d.plan.as_ref().expect("plan");
    let selected = d.selected_item.as_ref().expect("selected item");
    assert!(plan.items.contains(selected));

    assert!(!d.drafts.is_empty());
    let last = d.drafts.last().expect("a draft");
    assert_eq!(last.item, selected.id);
    let (used, limit, unit) = harmonia_policy::length(last.platform, &last.body);
    assert_eq!((last.length.used, last.length.limit, last.length.unit.as_str()), (used, limit, unit));
    assert!(last.claims.iter().all(|c| c.evidence.iter().all(|e| e.quote.is_some())));

    // One review per pass, each with all seven assessments.
    assert_eq!(d.reviews.len(), d.drafts.len());
    for review in &d.reviews {
        let assessments = serde_json::to_value(&review.assessments).expect("assessments");
        assert_eq!(assessments.as_object().map(|o| o.len()), Some(7), "{assessments}");
    }

    // The approved version passed policy, every rule reported with its reason.
    let policy = d.policy.last().expect("policy result");
    assert_eq!(policy.content_hash, last.content_hash);
    assert_eq!(policy.outcome, PolicyOutcome::Passed);
    assert_eq!(policy.rules.len(), 15);
    assert!(policy.rules.iter().all(|r| r.passed && !r.reason.is_empty()));

    // Nothing is awaited any more; both decisions are recorded, naming the exact versions.
    assert_eq!(d.awaiting, None);
    let subjects: Vec<_> = d.decisions.iter().map(|a| (a.subject, a.decision.clone())).collect();
    assert_eq!(
        subjects,
        vec![(ApprovalSubject::Strategy, Decision::Approved), (ApprovalSubject::Draft, Decision::Approved)]
    );
    assert_eq!(d.decisions[0].subject_hash, strategy.content_hash);
    assert_eq!(d.decisions[1].subject_hash, last.content_hash);

    let publication = d.publication.as_ref().expect("publication");
    assert_eq!(publication.body, last.body);
    let receipt = publication.receipt.as_ref().expect("receipt");
    assert!(matches!(receipt.outcome, ReceiptOutcome::Applied { .. }));
    assert!(publication.verified_post().is_some());

    // The JSON keys are the documented ones.
    let json = serde_json::to_value(&d).expect("json");
    let keys: Vec<&str> = json.as_object().expect("object").keys().map(String::as_str).collect();
    let mut expected = vec![
        "job",
        "source",
        "flags",
        "analysis",
        "strategy",
        "strategy_versions",
        "plan",
        "selected_item",
        "drafts",
        "reviews",
        "policy",
        "awaiting",
        "decisions",
        "publication",
        "retries",
        "model_use",
        "budget",
    ];
    expected.sort_unstable();
    assert_eq!(keys, expected);
    // The model use of the job, role by role: every specialist of a verified job is there.
    let roles: Vec<Role> = d.model_use.iter().map(|u| u.role).collect();
    assert_eq!(roles, [Role::Harmonia, Role::Nimi, Role::Ryan, Role::Temi, Role::Noni, Role::Dara]);
    assert!(d.model_use.iter().all(|u| u.model_calls >= u.invocations && u.input_tokens > 0));
}

#[tokio::test]
async fn the_detail_of_an_unknown_job_is_not_found() {
    let dir = tempfile::tempdir().expect("temp dir");
    let local = Local::open(dir.path()).await.expect("open");
    let ws = local.workspace().await.expect("workspace");
    let e = detail::job(&local.env, &ws, &"job-nothing".parse().expect("job")).await.expect_err("unknown");
    assert_eq!(e.code, Code::NotFound);
}

#[tokio::test]
async fn the_detail_of_a_job_awaiting_its_strategy_names_the_version_and_nothing_later() {
    let (_dir, local, ws, waiting) = driven(false).await;
    let job = &waiting;
    assert_eq!(waiting.status, JobStatus::AwaitingStrategyApproval, "{:?}", waiting.failure);
    let d = detail::job(&local.env, &ws, &job.id).await.expect("detail");
    let strategy = d.strategy.as_ref().expect("strategy");
    let awaiting = d.awaiting.as_ref().expect("awaiting");
    assert_eq!(awaiting.subject, ApprovalSubject::Strategy);
    assert_eq!(awaiting.version, strategy.content_hash);
    assert_eq!(awaiting.prefix, strategy.content_hash[..detail::VERSION_PREFIX_CHARS]);
    assert!(d.plan.is_none() && d.selected_item.is_none() && d.drafts.is_empty() && d.reviews.is_empty());
    assert!(d.policy.is_empty() && d.decisions.is_empty() && d.publication.is_none());
}
