//! `harmonia status JOB --watch`: a job's progress as it happens, the events of the operator
//! API's `GET /v1/jobs/{job}/events` (with `--cloud`, that stream itself; on the embedded
//! default, the same events read from the data dir while this process carries the job on).

use std::ops::ControlFlow;
use std::time::Duration;

use harmonia_client::api::JobEvent;
use harmonia_contracts::domain::{JobStatus, SeenEvents};
use harmonia_contracts::ids::{JobId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use harmonia_pipeline::progress;
use serde_json::json;

use crate::app::{Backend, Output};

/// How often the embedded default's events are read again.
const LOCAL_POLL: Duration = Duration::from_millis(200);

/// Follow `job` until it stops for good or waits for a person or its posting time, printing
/// each step, decision and status once. A job that failed ends the command with its failure.
pub(crate) async fn watch(backend: &Backend, out: &Output, ws: &WorkspaceId, job: &str) -> Result<(), Error> {
    let id: JobId = job.parse()?;
    let mut last: Option<JobEvent> = None;
    let mut show = |event: &JobEvent| {
        print(out, event);
        last = Some(event.clone());
        match rests(event) {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        }
    };
    match backend {
        Backend::Cloud(client) => {
            client.follow(&id, &mut show).await?;
        }
        Backend::Local(l) => {
            let reading = async {
                let mut seen = SeenEvents::default();
                loop {
                    for event in progress::events(&l.env, ws, &id).await?.events {
                        if seen.first_time(&event) && show(&event).is_break() {
                            return Ok::<_, Error>(());
                        }
                    }
                    tokio::time::sleep(LOCAL_POLL).await;
                }
            };
            // The job moves only when a process carries it on: this one does, unless the data
            // dir is open for reading only (then another process, `harmonia serve`, may).
            let carry = async {
                if l.reading_only.is_none() {
                    // Its own failures show in the job's events; the reading ends the watch.
                    let _ = l.drive(ws, &id, false, Duration::from_secs(24 * 3600), |_| {}).await;
                }
                std::future::pending::<()>().await;
            };
            tokio::select! {
                read = reading => read?,
                () = carry => {}
            }
        }
    }
    match last {
        // Exit as the job's failure: its own code, and the sentence shown.
        Some(JobEvent::Status { status: JobStatus::Failed, text, .. }) => {
            let job = match backend {
                Backend::Cloud(client) => client.job(&id).await?.job,
                Backend::Local(l) => harmonia_pipeline::gates::job(&l.env, ws, &id).await?,
            };
            Err(Error::new(job.failure.map_or(Code::Internal, |f| f.code), text))
        }
        _ => Ok(()),
    }
}

/// Whether a job at `event` rests: it stopped for good, or waits for a person or for its time.
fn rests(event: &JobEvent) -> bool {
    match event {
        JobEvent::Status { terminal, awaiting, status, .. } => {
            *terminal || awaiting.is_some() || matches!(status, JobStatus::Scheduled | JobStatus::NeedsHuman)
        }
        _ => false,
    }
}

/// One event: a line of text, or in JSON mode `{"event": …}` on a line of its own.
fn print(out: &Output, event: &JobEvent) {
    out.value(&json!({ "event": event }));
    let (JobEvent::Step { at, text, .. } | JobEvent::Decision { at, text, .. } | JobEvent::Status { at, text, .. }) =
        event;
    let mark = if matches!(event, JobEvent::Status { .. }) { "now" } else { "   " };
    out.say(&format!("{} {mark}  {text}", at.format("%H:%M:%S UTC")));
}
