//! `GET /v1/jobs/{job}/events`: a job's progress ([`harmonia_pipeline::progress`]) as it
//! happens.
//!
//! With `Accept: text/event-stream` the answer is a stream of Server-Sent Events: first the
//! job's history (each completed step and decision, oldest first, then its status), then each
//! new step, decision and status as the job moves, until it stops for good. Each SSE event is
//! named by its kind (`step`, `decision`, `status`), carries the [`JobEvent`] as JSON, and its
//! id is the job's stored version. The server looks at the job every [`POLL`] (one read while
//! nothing moves), sends a comment every 15 s to keep proxies from closing an idle stream, and
//! ends a stream after [`MAX_STREAM`]; a client reconnects (`EventSource` does so itself) and
//! gets the history again. A reconnection whose `Last-Event-ID` is the version of a job that
//! stopped for good is answered 204, which tells `EventSource` to stop.
//!
//! Without it, the answer is the polling form: `{"job","events"}`, the same events as JSON,
//! for a client to ask again.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use harmonia_contracts::domain::{JobEvent, JobEvents, SeenEvents};
use harmonia_contracts::ids::{JobId, WorkspaceId};
use harmonia_http::{ApiError, Caller, PathId};
use harmonia_pipeline::{Env, progress};
use tokio::time::Instant;

use crate::OperatorState;

/// How often a stream looks at its job.
pub const POLL: Duration = Duration::from_millis(500);

/// How long one stream lasts before the client is asked to reconnect (a hosted function's
/// request ends well inside Cloud Run's request timeout).
pub const MAX_STREAM: Duration = Duration::from_secs(240);

/// The handler.
pub(crate) async fn events(
    State(state): State<OperatorState>,
    Caller(who): Caller,
    PathId(id): PathId<JobId>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let history = progress::events(&state.env, &who.workspace, &id).await?;
    let streamed = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("text/event-stream"));
    if !streamed {
        return Ok(Json(history).into_response());
    }
    let seen: Option<u64> = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
    if let (Some(seen), Some(JobEvent::Status { version, terminal: true, .. })) = (seen, history.events.last())
        && seen >= *version
    {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    let follow = Follow::new(state.env.clone(), who.workspace, history);
    let mut response = Sse::new(follow.stream()).keep_alive(KeepAlive::default()).into_response();
    // Like every answer of the API: a job's progress is never kept by a cache.
    response.headers_mut().insert(header::CACHE_CONTROL, axum::http::HeaderValue::from_static("no-store"));
    Ok(response)
}

/// One stream's state: what it has sent, and where the job was when it last looked.
struct Follow {
    env: Arc<Env>,
    workspace: WorkspaceId,
    job: JobId,
    /// Events to send before looking again.
    pending: std::collections::VecDeque<(JobEvent, u64)>,
    /// What was sent: each step and decision once, and the status of each version.
    sent: SeenEvents,
    /// The job's version when last looked at.
    version: u64,
    until: Instant,
}

impl Follow {
    fn new(env: Arc<Env>, workspace: WorkspaceId, history: JobEvents) -> Self {
        let mut follow = Self {
            env,
            workspace,
            job: history.job.clone(),
            pending: Default::default(),
            sent: SeenEvents::default(),
            version: 0,
            until: Instant::now() + MAX_STREAM,
        };
        follow.take(history);
        follow
    }

    /// Queue what `events` holds that was not sent yet: new steps and decisions, and the status.
    fn take(&mut self, events: JobEvents) {
        if let Some(JobEvent::Status { version, .. }) = events.events.last() {
            self.version = *version;
        }
        for event in events.events {
            if self.sent.first_time(&event) {
                self.pending.push_back((event, self.version));
            }
        }
    }

    /// The next event to send, waiting for the job to move; `None` when the stream ends.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some((event, version)) = self.pending.pop_front() {
                return Some(sse(&event, version));
            }
            if self.sent.stopped() || Instant::now() >= self.until {
                return None;
            }
            tokio::time::sleep(POLL).await;
            match progress::job_version(&self.env, &self.workspace, &self.job).await {
                Ok((_, version)) if version == self.version => {}
                Ok(_) => match progress::events(&self.env, &self.workspace, &self.job).await {
                    Ok(events) => self.take(events),
                    Err(e) => {
                        tracing::warn!(job = %self.job, error = %e, "a followed job's events could not be read; trying again")
                    }
                },
                Err(e) => tracing::warn!(job = %self.job, error = %e, "a followed job could not be read; trying again"),
            }
        }
    }

    fn stream(self) -> impl futures::Stream<Item = Result<Event, Infallible>> {
        futures::stream::unfold(self, |mut follow| async move { follow.next().await.map(|e| (Ok(e), follow)) })
    }
}

/// `event` as a Server-Sent Event named by its kind, with the job's version as its id.
fn sse(event: &JobEvent, version: u64) -> Event {
    let kind = match event {
        JobEvent::Step { .. } => "step",
        JobEvent::Decision { .. } => "decision",
        JobEvent::Status { .. } => "status",
    };
    Event::default().event(kind).id(version.to_string()).data(serde_json::to_string(event).unwrap_or_default())
}
