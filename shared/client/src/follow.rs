//! Following a job's progress: `GET /v1/jobs/{job}/events` as Server-Sent Events.

use std::ops::ControlFlow;
use std::time::Duration;

use harmonia_contracts::domain::SeenEvents;
use harmonia_contracts::ids::JobId;
use harmonia_contracts::{Code, Error};
use reqwest::{StatusCode, header};
use secrecy::ExposeSecret;

use crate::api::JobEvent;
use crate::{Client, MAX_ANSWER_BYTES, MAX_ATTEMPTS, refusal};

/// How long one stream may last before it is opened again (the server ends its streams
/// sooner; this bounds a stream a proxy keeps open without passing anything on).
const STREAM_TIMEOUT: Duration = Duration::from_secs(600);

/// How a followed job's stream ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Followed {
    /// The job stopped for good (its last status event said so).
    Stopped,
    /// The caller's function asked to stop.
    Left,
}

impl Client {
    /// Follow `job`'s progress: `on` sees each event once, in order (its history first, then
    /// each step, decision and status as the job moves), until the job stops for good or `on`
    /// breaks. A stream the server ends (after its longest stream) or a connection lost is
    /// opened again, and what was seen is not shown twice; a connection that cannot be made
    /// after [`MAX_ATTEMPTS`] tries in a row is `api_unavailable`.
    pub async fn follow(
        &self,
        job: &JobId,
        mut on: impl FnMut(&JobEvent) -> ControlFlow<()>,
    ) -> Result<Followed, Error> {
        let mut seen = SeenEvents::default();
        let mut failures = 0;
        loop {
            match self.stream(job, &mut seen, &mut on).await? {
                Stream::Ended(ended) => return Ok(ended),
                // The server ended a stream it had opened (its longest): open the next at once.
                Stream::Again { opened: true } => {
                    failures = 0;
                    tokio::time::sleep(self.backoff).await;
                }
                Stream::Again { opened: false } if failures + 1 >= MAX_ATTEMPTS => {
                    return Err(Error::new(
                        Code::ApiUnavailable,
                        format!("The operator API at {} stopped sending the job's progress.", self.base),
                    ));
                }
                Stream::Again { opened: false } => {
                    failures += 1;
                    tokio::time::sleep(self.backoff * u32::try_from(failures).unwrap_or(1)).await;
                }
            }
        }
    }

    /// One stream, until following ends or the stream does.
    async fn stream(
        &self,
        job: &JobId,
        seen: &mut SeenEvents,
        on: &mut impl FnMut(&JobEvent) -> ControlFlow<()>,
    ) -> Result<Stream, Error> {
        let mut request = self
            .http
            .get(format!("{}/v1/jobs/{job}/events", self.base))
            .bearer_auth(self.auth.bearer())
            .header(header::ACCEPT, "text/event-stream")
            .timeout(STREAM_TIMEOUT);
        if let Some(version) = seen.version() {
            request = request.header("last-event-id", version.to_string());
        }
        if let Some(invoker) = &self.invoker {
            request = request.header("x-serverless-authorization", format!("Bearer {}", invoker.expose_secret()));
        }
        let Ok(mut response) = request.send().await else { return Ok(Stream::Again { opened: false }) };
        let status = response.status();
        if status == StatusCode::NO_CONTENT {
            return Ok(Stream::Ended(Followed::Stopped));
        }
        if !status.is_success() {
            let bytes = harmonia_contracts::body::read(&mut response, MAX_ANSWER_BYTES).await.unwrap_or_default();
            let failed = refusal(status, &bytes, true, None);
            return match failed.retry {
                true => Ok(Stream::Again { opened: false }),
                false => Err(failed.error),
            };
        }
        let mut buffer = String::new();
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) if seen.stopped() => return Ok(Stream::Ended(Followed::Stopped)),
                Ok(None) => return Ok(Stream::Again { opened: true }),
                Err(_) => return Ok(Stream::Again { opened: false }),
            };
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            if buffer.len() > MAX_ANSWER_BYTES {
                return Err(Error::new(Code::ApiUnavailable, "The operator API sent an event too large to read."));
            }
            while let Some((block, rest)) = next_block(&buffer) {
                let data = event_data(&block);
                buffer = rest;
                let Some(data) = data else { continue };
                let event: JobEvent = serde_json::from_str(&data).map_err(|_| {
                    Error::new(
                        Code::Internal,
                        "The operator API's job event is not what this client reads: is it the deployment's version?",
                    )
                })?;
                if seen.first_time(&event) && on(&event).is_break() {
                    return Ok(Stream::Ended(Followed::Left));
                }
            }
        }
    }
}

/// How one stream ended.
enum Stream {
    /// Following ends.
    Ended(Followed),
    /// The stream ended before the job stopped, after the server had answered it (`opened`)
    /// or not: it is opened again.
    Again { opened: bool },
}

/// The first whole event block of `buffer` (ended by a blank line) and what follows it.
fn next_block(buffer: &str) -> Option<(String, String)> {
    let normal = buffer.contains('\r').then(|| buffer.replace("\r\n", "\n").replace('\r', "\n"));
    let text = normal.as_deref().unwrap_or(buffer);
    let end = text.find("\n\n")?;
    Some((text[..end].to_owned(), text[end + 2..].to_owned()))
}

/// The data of an event block (its `data:` lines joined by newlines), if it has any; comments
/// (`:` lines), `event:` and `id:` lines are the stream's framing.
fn event_data(block: &str) -> Option<String> {
    let lines: Vec<&str> =
        block.lines().filter_map(|line| line.strip_prefix("data:")).map(|d| d.strip_prefix(' ').unwrap_or(d)).collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_blocks_are_read_across_chunks_and_line_endings() {
        let stream = ": keep-alive\n\nevent: status\r\nid: 7\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\nevent: step\ndata: x";
        let (first, rest) = next_block(stream).expect("a comment block");
        assert_eq!(event_data(&first), None);
        let (second, rest) = next_block(&rest).expect("an event");
        assert_eq!(event_data(&second).as_deref(), Some("{\"a\":\n1}"));
        assert!(next_block(&rest).is_none(), "the last block is not whole yet");
    }
}
