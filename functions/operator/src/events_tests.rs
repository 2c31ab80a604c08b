//! `GET /v1/jobs/{job}/events` over real HTTP, followed with the typed client.

use std::ops::ControlFlow;
use std::time::Duration;

use harmonia_client::api::JobEvent;
use harmonia_client::{Auth, Client, Followed};
use harmonia_contracts::Code;
use harmonia_contracts::domain::{ApprovalSubject, JobStatus};
use harmonia_contracts::event::Stage;

use crate::tests::api;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_streams_each_stage_from_the_strategy_gate_to_verified() {
    let api = api().await;
    let (_, job) = api.submit_and_wait_for_the_strategy().await;
    let client = Client::new(&api.base(), Auth::from_text(&api.token)).expect("client");

    // Another workspace's job does not exist for its credential, streamed or polled.
    let other = Client::new(&api.base(), Auth::from_text(&api.other)).expect("client");
    assert_eq!(other.events(&job).await.map_err(|e| e.code).err(), Some(Code::NotFound));
    let refused = other.follow(&job, |_| ControlFlow::Continue(())).await;
    assert_eq!(refused.map_err(|e| e.code).err(), Some(Code::NotFound));

    // Follow the job while it moves, as a page would: each event is passed on as it comes.
    let (tx, mut seen) = tokio::sync::mpsc::unbounded_channel::<JobStatus>();
    let follower = tokio::spawn({
        let (client, job) = (client.clone(), job.clone());
        async move {
            let mut events = Vec::new();
            let ended = client
                .follow(&job, |event| {
                    if let JobEvent::Status { status, .. } = event {
                        let _ = tx.send(*status);
                    }
                    events.push(event.clone());
                    ControlFlow::Continue(())
                })
                .await;
            (ended, events)
        }
    });
    until(&mut seen, JobStatus::AwaitingStrategyApproval).await;

    let version = client.job(&job).await.expect("job").awaiting_version.expect("awaiting");
    client.approve(&job, ApprovalSubject::Strategy, &version).await.expect("approve the strategy");
    let waiting = api.local.drive(&api.ws, &job, false, Duration::from_secs(60), |_| {}).await.expect("drive");
    assert_eq!(waiting.status, JobStatus::AwaitingDraftApproval);
    // The stream shows the draft gate without being asked again.
    until(&mut seen, JobStatus::AwaitingDraftApproval).await;
    let version = client.job(&job).await.expect("job").awaiting_version.expect("awaiting");
    client.approve(&job, ApprovalSubject::Draft, &version).await.expect("approve the draft");
    client.publish_now(&job).await.expect("publish now");
    let done = api.local.drive(&api.ws, &job, false, Duration::from_secs(60), |_| {}).await.expect("drive");
    assert_eq!(done.status, JobStatus::Verified);

    let (ended, events) = tokio::time::timeout(Duration::from_secs(30), follower)
        .await
        .expect("the stream ends once the job is verified")
        .expect("follower");
    assert_eq!(ended.expect("followed"), Followed::Stopped);
    let steps: Vec<Stage> =
        events.iter().filter_map(|e| if let JobEvent::Step { stage, .. } = e { Some(*stage) } else { None }).collect();
    for stage in [Stage::Analyze, Stage::Strategize, Stage::Plan, Stage::Draft, Stage::Review, Stage::Policy] {
        assert!(steps.contains(&stage), "{stage:?} in {steps:?}");
    }
    assert!(steps.ends_with(&[Stage::Publish, Stage::Verify]), "{steps:?}");
    let decisions: Vec<(ApprovalSubject, &str, String)> = events
        .iter()
        .filter_map(|e| match e {
            JobEvent::Decision { subject, decision, by, .. } => Some((*subject, decision.as_str(), by.to_string())),
            _ => None,
        })
        .collect();
    assert_eq!(
        decisions,
        [(ApprovalSubject::Strategy, "approved", "ana".to_owned()), (ApprovalSubject::Draft, "approved", "ana".into())]
    );
    let statuses: Vec<(JobStatus, bool)> = events
        .iter()
        .filter_map(
            |e| if let JobEvent::Status { status, terminal, .. } = e { Some((*status, *terminal)) } else { None },
        )
        .collect();
    assert_eq!(statuses.first(), Some(&(JobStatus::AwaitingStrategyApproval, false)), "{statuses:?}");
    assert!(statuses.contains(&(JobStatus::AwaitingDraftApproval, false)), "{statuses:?}");
    assert_eq!(statuses.last(), Some(&(JobStatus::Verified, true)), "{statuses:?}");
    for event in &events {
        let (JobEvent::Step { text, .. } | JobEvent::Decision { text, .. } | JobEvent::Status { text, .. }) = event;
        assert!(text.ends_with('.') && !text.contains('_'), "a sentence: {text}");
    }

    // Polled, the same history, ending with where the job is.
    let polled = client.events(&job).await.expect("polled");
    assert_eq!(polled.events.iter().filter(|e| matches!(e, JobEvent::Step { .. })).count(), steps.len());
    let Some(JobEvent::Status { version, terminal: true, .. }) = polled.events.last() else { panic!("{polled:?}") };

    // A reconnection after the end is told there is nothing more (204 stops EventSource).
    let answer = reqwest::Client::new()
        .get(format!("{}/v1/jobs/{job}/events", api.base()))
        .bearer_auth(&api.token)
        .header("accept", "text/event-stream")
        .header("last-event-id", version.to_string())
        .send()
        .await
        .expect("reconnect");
    assert_eq!(answer.status(), 204);

    // Every answer of the API, refusals included, is neither sniffed nor cached.
    let http = reqwest::Client::new();
    for (request, accept) in [
        (format!("/v1/jobs/{job}/events"), "application/json"),
        (format!("/v1/jobs/{job}/events"), "text/event-stream"),
        ("/v1/jobs".to_owned(), "application/json"),
        ("/v1/nothing-here".to_owned(), "application/json"),
    ] {
        let answer = http
            .get(format!("{}{request}", api.base()))
            .bearer_auth(&api.token)
            .header("accept", accept)
            .send()
            .await
            .expect("answer");
        let header = |name: &str| answer.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default();
        assert_eq!((header("x-content-type-options"), header("cache-control")), ("nosniff", "no-store"), "{request}");
    }
}

/// Wait until the follower has shown `wanted`.
async fn until(seen: &mut tokio::sync::mpsc::UnboundedReceiver<JobStatus>, wanted: JobStatus) {
    let reached = async {
        while let Some(status) = seen.recv().await {
            if status == wanted {
                return;
            }
        }
        panic!("the stream ended before {wanted:?}");
    };
    tokio::time::timeout(Duration::from_secs(30), reached).await.expect("the stream shows the status");
}
