//! The whole pipeline on the embedded default, in one process: the demo run, duplicated
//! delivery, unconfirmed publishing, a crash mid-job, and invalid sources.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use harmonia_bus::{Bus, OutboundMessage};
use harmonia_connectors::SandboxMode;
use harmonia_contracts::Code;
use harmonia_contracts::domain::{
    Job, JobStatus, Publication, ReceiptOutcome, Source, SourceInput, VerificationOutcome,
};
use harmonia_contracts::ids::{DocId, WorkspaceId};
use harmonia_local::{Local, Wrap};
use harmonia_pipeline::formats::{Format, parse};
use harmonia_pipeline::records::{
    ACTIVITY, ANALYSES, AnalysisRecord, DRAFTS, JOBS, MARKERS, PUBLICATIONS, REVIEWS, SOURCES, doc_id,
};
use harmonia_pipeline::registry::Timing;
use harmonia_pipeline::steps::{current_draft_id, ingest};
use harmonia_store::{Collection, Query};
use serde::de::DeserializeOwned;

use harmonia_testkit::TempDir;
use harmonia_testkit::samples::LAUNCH_TALK as SAMPLE;
const WAIT: Duration = Duration::from_secs(120);

/// Fast retries and a 2 s ack deadline, so a crashed process's leases come back quickly.
const FAST: Timing = Timing::quick(Duration::from_secs(2));

fn sample() -> SourceInput {
    serde_json::from_str(SAMPLE).expect("sample parses")
}

async fn count(local: &Local, ws: &WorkspaceId, collection: Collection) -> usize {
    local.env.store.query(ws, collection, &Query::all(1000)).await.expect("query").len()
}

/// The document `id` of `collection` in `ws`, which must be stored and decode as a `T`.
async fn stored<T: DeserializeOwned>(local: &Local, ws: &WorkspaceId, collection: Collection, id: &DocId) -> T {
    let doc = local.env.store.get(ws, collection, id).await.expect("get");
    doc.unwrap_or_else(|| panic!("{id} is stored")).decode().expect("decode")
}

async fn publication(local: &Local, ws: &WorkspaceId, job: &Job) -> Publication {
    stored(local, ws, PUBLICATIONS, &doc_id(current_draft_id(job))).await
}

/// The sample run to its end on a fresh embedded deployment whose sandbox connector answers
/// its first post as `mode`; the directory guard holds the deployment's files.
async fn run_with(mode: SandboxMode) -> (TempDir, Local, WorkspaceId, Job) {
    let dir = harmonia_testkit::temp_dir();
    let local = Local::open_with(dir.path(), FAST, Wrap::default()).await.expect("open");
    local.sandbox.next(mode);
    let (ws, job) = run_to_end(&local).await;
    (dir, local, ws, job)
}

async fn run_to_end(local: &Local) -> (WorkspaceId, Job) {
    let ws = local.workspace().await.expect("workspace");
    let job = ingest(&local.env, &ws, sample(), None, None).await.expect("ingest");
    let done = local.drive(&ws, &job.id, true, WAIT, |_| {}).await.expect("drive");
    local.settle(WAIT).await.expect("settle");
    (ws, done)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_sample_reaches_verified_with_one_receipt_and_grounded_claims() {
    let dir = harmonia_testkit::temp_dir();
    let local = Local::open_with(dir.path(), FAST, Wrap::default()).await.expect("open");
    let (ws, job) = run_to_end(&local).await;
    assert_eq!(job.status, JobStatus::Verified, "{:?}", job.failure);
    let p = publication(&local, &ws, &job).await;
    assert!(matches!(p.receipt.as_ref().map(|r| &r.outcome), Some(ReceiptOutcome::Applied { .. })));
    assert!(matches!(p.verification.as_ref().map(|v| &v.outcome), Some(VerificationOutcome::Verified { .. })));
    assert_eq!(local.sandbox.posts(&ws).await.expect("sandbox posts"), 1);
    assert_eq!(count(&local, &ws, PUBLICATIONS).await, 1, "one receipt per approved draft");

    let source: Source = stored(&local, &ws, SOURCES, &doc_id(&job.source)).await;
    let analysis: AnalysisRecord = stored(&local, &ws, ANALYSES, &doc_id(&job.id)).await;
    let draft: harmonia_contracts::domain::Draft = stored(&local, &ws, DRAFTS, &doc_id(&p.draft)).await;
    assert!(!draft.claims.is_empty());
    for claim in &draft.claims {
        for id in &claim.evidence {
            let m = analysis.analysis.moments.iter().find(|m| &m.evidence_id == id).expect("cited moment exists");
            assert!(
                source.quote_within(&m.quote, m.start_ms, m.end_ms),
                "claim evidence {id} is a transcript span in range"
            );
        }
    }
}

/// Publishes every message three times.
struct Triple(Arc<dyn Bus>);

#[async_trait]
impl Bus for Triple {
    async fn publish(&self, message: OutboundMessage) -> Result<String, harmonia_bus::Error> {
        self.0.publish(message.clone()).await?;
        self.0.publish(message.clone()).await?;
        self.0.publish(message).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_event_three_times_still_yields_one_of_each_output_and_one_post() {
    let dir = harmonia_testkit::temp_dir();
    let local = Local::open_with(
        dir.path(),
        FAST,
        Wrap { bus: Some(Box::new(|b| Arc::new(Triple(b)) as Arc<dyn Bus>)), ..Wrap::default() },
    )
    .await
    .expect("open");
    let (ws, job) = run_to_end(&local).await;
    assert_eq!(job.status, JobStatus::Verified, "{:?}", job.failure);
    assert_eq!(local.sandbox.posts(&ws).await.expect("sandbox posts"), 1, "one post");
    assert_eq!(count(&local, &ws, ANALYSES).await, 1);
    assert_eq!(count(&local, &ws, DRAFTS).await, 2, "the first draft and the single revision");
    assert_eq!(count(&local, &ws, REVIEWS).await, 2);
    assert_eq!(count(&local, &ws, PUBLICATIONS).await, 1);
    // 7 specialist invocations (Nimi, Ryan, Temi, Noni twice, Dara twice), the first three
    // routed by Harmonia: the model ran once per step despite every event arriving three times.
    assert_eq!(count(&local, &ws, ACTIVITY).await, 10);
    assert_eq!(count(&local, &ws, MARKERS).await, 11, "one marker per completed stage and pass");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_connector_timeout_is_unknown_then_resolved_by_verification_never_a_second_post() {
    let (_dir, local, ws, job) = run_with(SandboxMode::TimeOut).await;
    assert_eq!(job.status, JobStatus::Verified, "{:?}", job.failure);
    let p = publication(&local, &ws, &job).await;
    assert_eq!(p.receipt.map(|r| r.outcome), Some(ReceiptOutcome::Unknown));
    assert!(matches!(p.verification.map(|v| v.outcome), Some(VerificationOutcome::Verified { .. })));
    assert_eq!(local.sandbox.posts(&ws).await.expect("sandbox posts"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lost_request_is_read_back_as_missing_and_sent_once_more_with_the_same_key() {
    let (_dir, local, ws, job) = run_with(SandboxMode::Drop).await;
    assert_eq!(job.status, JobStatus::Verified, "{:?}", job.failure);
    assert_eq!(publication(&local, &ws, &job).await.receipt.map(|r| r.outcome), Some(ReceiptOutcome::Unknown));
    assert_eq!(local.sandbox.posts(&ws).await.expect("sandbox posts"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refusing_connector_fails_the_job_with_a_typed_failure() {
    let (_dir, local, ws, job) = run_with(SandboxMode::Fail).await;
    assert_eq!(job.status, JobStatus::Failed);
    assert_eq!(job.failure.map(|f| f.code), Some(Code::ConnectorFailed));
    assert_eq!(local.sandbox.posts(&ws).await.expect("sandbox posts"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stopping_the_process_mid_job_and_starting_again_completes_it_with_one_post() {
    let dir = harmonia_testkit::temp_dir();
    let (ws, job_id) = {
        let local = Local::open_with(dir.path(), FAST, Wrap::default()).await.expect("open");
        let ws = local.workspace().await.expect("workspace");
        let job = ingest(&local.env, &ws, sample(), None, None).await.expect("ingest");
        // A first job runs to the end in the first process.
        let done = local.drive(&ws, &job.id, true, WAIT, |_| {}).await.expect("drive");
        assert_eq!(done.status, JobStatus::Verified);
        (ws, job.id)
    };
    let _ = ws;
    // A second process approves a second job's strategy and is stopped while planning runs.
    let interrupted = {
        let local = Local::open_with(dir.path(), FAST, Wrap::default()).await.expect("open");
        let ws = local.workspace().await.expect("workspace");
        let job = ingest(&local.env, &ws, sample(), None, None).await.expect("ingest");
        let waiting = local.drive(&ws, &job.id, false, WAIT, |_| {}).await.expect("drive");
        assert_eq!(waiting.status, JobStatus::AwaitingStrategyApproval);
        let version = harmonia_pipeline::gates::current_version(
            &local.env,
            &ws,
            &waiting,
            harmonia_contracts::domain::ApprovalSubject::Strategy,
        )
        .await
        .expect("version");
        let request = harmonia_pipeline::gates::DecisionRequest {
            job: job.id.clone(),
            operator: "cli".parse().expect("op"),
            subject: harmonia_contracts::domain::ApprovalSubject::Strategy,
            decision: harmonia_contracts::domain::Decision::Approved,
            subject_hash: version,
            trace: None,
        };
        harmonia_pipeline::gates::decide(&local.env, &ws, request).await.expect("approve");
        // Dropping `local` aborts every stage worker mid-step, like a killed process.
        job.id
    };
    let local = Local::open_with(dir.path(), FAST, Wrap::default()).await.expect("reopen");
    let ws = local.workspace().await.expect("workspace (resumes unfinished jobs)");
    let done = local.drive(&ws, &interrupted, true, WAIT, |_| {}).await.expect("drive");
    assert_eq!(done.status, JobStatus::Verified, "{:?}", done.failure);
    local.settle(WAIT).await.expect("settle");
    let first = harmonia_pipeline::gates::job(&local.env, &ws, &job_id).await.expect("first job");
    assert_eq!(first.status, JobStatus::Verified);
    assert_eq!(local.sandbox.posts(&ws).await.expect("sandbox posts"), 2, "one post per job, none twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_sources_get_typed_errors_and_store_nothing() {
    let dir = harmonia_testkit::temp_dir();
    let local = Local::open_with(dir.path(), FAST, Wrap::default()).await.expect("open");
    let ws = local.workspace().await.expect("workspace");
    let json = |segments: serde_json::Value, extra: Option<(&str, serde_json::Value)>| {
        let mut v = serde_json::json!({"title": "T", "language": "en", "segments": segments});
        if let Some((k, x)) = extra {
            v[k] = x;
        }
        v.to_string().into_bytes()
    };
    let seg = |s: u64, e: u64| serde_json::json!({"start_ms": s, "end_ms": e, "text": "words"});
    let cases: Vec<(&str, Vec<u8>, Format, Code)> = vec![
        ("empty transcript", json(serde_json::json!([]), None), Format::Json, Code::SourceEmptyTranscript),
        ("end before start", json(serde_json::json!([seg(500, 100)]), None), Format::Json, Code::SourceInvalidTiming),
        (
            "overlapping segments",
            json(serde_json::json!([seg(0, 100), seg(50, 200)]), None),
            Format::Json,
            Code::SourceOverlappingSegments,
        ),
        (
            "unknown fields",
            json(serde_json::json!([seg(0, 100)]), Some(("author", serde_json::json!("x")))),
            Format::Json,
            Code::SourceMalformed,
        ),
        ("binary garbage", vec![0x89, b'P', b'N', b'G', 0, 0xff, 0xfe], Format::Json, Code::SourceNotText),
        ("binary garbage as WebVTT", vec![0xde, 0xad, 0xbe, 0xef], Format::WebVtt, Code::SourceNotText),
        (
            "over the size limit",
            vec![b' '; harmonia_contracts::domain::SOURCE_MAX_BYTES + 1],
            Format::Json,
            Code::PayloadTooLarge,
        ),
        (
            "overlapping SRT cues",
            b"1\n00:00:00,000 --> 00:00:02,000\na\n\n2\n00:00:01,000 --> 00:00:03,000\nb\n".to_vec(),
            Format::Srt,
            Code::SourceOverlappingSegments,
        ),
    ];
    for (what, bytes, format, code) in cases {
        let result = match parse(&bytes, format, "T", "en") {
            Ok(input) => ingest(&local.env, &ws, input, None, None).await.map(|_| ()),
            Err(e) => Err(e),
        };
        assert_eq!(result.err().map(|e| e.code), Some(code), "{what}");
    }
    assert_eq!(count(&local, &ws, JOBS).await, 0);
    assert_eq!(count(&local, &ws, SOURCES).await, 0);
    assert_eq!(local.bus.total_backlog().await.expect("backlog"), 0, "no event published");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_submission_with_the_same_idempotency_key_returns_the_first_job() {
    let dir = harmonia_testkit::temp_dir();
    let local = Local::open_with(dir.path(), FAST, Wrap::default()).await.expect("open");
    let ws = local.workspace().await.expect("workspace");
    let first = ingest(&local.env, &ws, sample(), None, Some("upload-42")).await.expect("first");
    let again = ingest(&local.env, &ws, sample(), None, Some("upload-42")).await.expect("retry");
    assert_eq!(first.id, again.id);
    let other = ingest(&local.env, &ws, sample(), None, Some("upload-43")).await.expect("another");
    assert_ne!(first.id, other.id);
    assert_eq!(count(&local, &ws, JOBS).await, 2);
    assert_eq!(count(&local, &ws, SOURCES).await, 2);
    let bad = ingest(&local.env, &ws, sample(), None, Some("has space")).await;
    assert_eq!(bad.err().map(|e| e.code), Some(Code::InvalidRequest));
}
