//! The schedule: `schedule` lists the approved posts waiting for their time, `reschedule`,
//! `publish-now` and `cancel` change one (each an attributed decision: of the operator `cli`
//! locally, of the credential's operator with `--cloud`; refused once the post's publication
//! is claimed), and `dispatch` hands what is due to
//! publishing (`--watch`: every 30 seconds until stopped). On the embedded default every
//! command dispatches what is due first ([`tick`]), so a due post goes out the next time
//! anything runs.

use std::time::Duration;

use harmonia_contracts::domain::{Job, Schedule, ScheduleAction, ScheduleState, WorkspaceConfig};
use harmonia_contracts::ids::{JobId, OperatorId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use harmonia_local::Local;
use harmonia_pipeline::gates::schedule::{self, Acted};
use harmonia_pipeline::planning::windows;
use serde_json::{Value, json};

use harmonia_client::api::RescheduleBody;

use crate::app::{Backend, Output, follow};

/// How often `dispatch --watch` looks for due posts.
pub(crate) const WATCH_EVERY: Duration = Duration::from_secs(30);

fn cli_operator() -> Result<OperatorId, Error> {
    "cli".parse()
}

/// A schedule as a line: job, channel, when, state.
fn line(config: &WorkspaceConfig, s: &Schedule, title: &str) -> String {
    let when = match s.state {
        ScheduleState::WindowPassed => {
            format!("window passed ({}): reschedule, publish-now or cancel", windows::describe(config, &s.window))
        }
        ScheduleState::Dispatched => {
            format!("publishing since {}", windows::instant(s.dispatched_at.unwrap_or(s.due_at)))
        }
        ScheduleState::Scheduled | ScheduleState::Cancelled => format!("due {}", due(config, s)),
    };
    format!("{}  {} {}  {when}  \"{title}\"", s.job, s.platform.as_str(), s.handle)
}

/// When `s` is due, in the workspace's zone and UTC.
fn due(config: &WorkspaceConfig, s: &Schedule) -> String {
    format!(
        "{} {} ({})",
        s.due_at.with_timezone(&config.timezone.tz()).format("%a %Y-%m-%d %H:%M"),
        config.timezone,
        windows::instant(s.due_at)
    )
}

/// A job of the workspace, as the embedded default or the operator API has it.
async fn job_of(backend: &Backend, ws: &WorkspaceId, id: &JobId) -> Result<Job, Error> {
    match backend {
        Backend::Local(l) => harmonia_pipeline::gates::job(&l.env, ws, id).await,
        Backend::Cloud(client) => Ok(client.job(id).await?.job),
    }
}

/// The workspace configuration whose zone `job`'s schedule is shown in: the version the job
/// runs under locally, the workspace's current one through the operator API (which answers
/// only that).
async fn config_of(backend: &Backend, job: &Job) -> Result<WorkspaceConfig, Error> {
    match backend {
        Backend::Local(l) => Ok(harmonia_pipeline::workspace::version_of_job(&*l.env.store, job).await?.config),
        Backend::Cloud(client) => Ok(client.workspace().await?.workspace.config),
    }
}
fn as_json(s: &Schedule, title: &str) -> Value {
    json!({
        "job": s.job,
        "title": title,
        "platform": s.platform.as_str(),
        "handle": s.handle,
        "state": s.state.as_str(),
        "due_at": harmonia_contracts::time::format(&s.due_at),
        "window": s.window,
        "dispatched_at": s.dispatched_at.map(|t| harmonia_contracts::time::format(&t)),
        "decisions": s.decisions,
    })
}

/// `harmonia schedule`.
pub(crate) async fn list(backend: &Backend, out: &Output, ws: &WorkspaceId) -> Result<(), Error> {
    let upcoming = match backend {
        Backend::Local(l) => schedule::upcoming(&l.env, ws).await?,
        Backend::Cloud(client) => client.schedule().await?.schedule,
    };
    let mut rows = Vec::new();
    if upcoming.is_empty() {
        out.say("Nothing is scheduled: no approved post is waiting for its time.");
    } else {
        let n = upcoming.len();
        out.say(&format!("{n} scheduled {}, soonest first:", if n == 1 { "post" } else { "posts" }));
    }
    // Through the API every job is shown in the one current configuration: asked for once.
    let current = match backend {
        Backend::Cloud(client) if !upcoming.is_empty() => Some(client.workspace().await?.workspace.config),
        _ => None,
    };
    for s in &upcoming {
        let job = job_of(backend, ws, &s.job).await?;
        let config = match &current {
            Some(config) => config.clone(),
            None => config_of(backend, &job).await?,
        };
        out.say(&format!("  {}", line(&config, s, &job.title)));
        rows.push(as_json(s, &job.title));
    }
    out.value(&json!({ "schedule": rows }));
    Ok(())
}

/// `harmonia reschedule JOB --at TIME`, `publish-now JOB`, `cancel JOB`.
pub(crate) async fn change(
    backend: &Backend,
    out: &Output,
    ws: &WorkspaceId,
    job: &str,
    action: ScheduleAction,
) -> Result<(), Error> {
    backend.resume(ws).await?;
    let id: JobId = job.parse()?;
    let (recorded, answered) = match backend {
        Backend::Local(l) => (schedule::act(&l.env, ws, &id, cli_operator()?, action).await?, None),
        Backend::Cloud(client) => {
            let (reply, acted): (_, fn(Schedule) -> Acted) = match action {
                ScheduleAction::Reschedule { at } => {
                    (client.reschedule(&id, &RescheduleBody { at }).await?, Acted::Rescheduled)
                }
                ScheduleAction::PublishNow => (client.publish_now(&id).await?, Acted::Released),
                ScheduleAction::Cancel => (client.cancel(&id).await?, Acted::Cancelled),
            };
            (crate::decide::answered(acted(reply.schedule), reply.unfinished), Some(reply.job))
        }
    };
    let acted = &recorded.value;
    let (Acted::Rescheduled(s) | Acted::Released(s) | Acted::Cancelled(s)) = acted;
    // The job as it stands after the change: as the API answered it, or read here.
    let job = match answered {
        Some(job) => job,
        None => job_of(backend, ws, &id).await?,
    };
    let config = config_of(backend, &job).await?;
    let said = match &acted {
        Acted::Rescheduled(_) => {
            format!("Rescheduled: the post goes out {} on {} {}.", due(&config, s), s.platform.as_str(), s.handle)
        }
        Acted::Released(_) => format!("Publishing now on {} {}.", s.platform.as_str(), s.handle),
        Acted::Cancelled(_) => {
            format!("Cancelled: the post for {} {} will never be published.", s.platform.as_str(), s.handle)
        }
    };
    out.say(&said);
    // The change is stored: what fails from here is a warning naming the next command.
    let next = match backend {
        Backend::Local(_) => format!("harmonia status {id}"),
        Backend::Cloud(_) => format!("harmonia --cloud status {id}"),
    };
    if let Some(e) = &recorded.unfinished {
        crate::decide::warn(out, "what it set going did not start", e, &next);
    }
    let job_now = match (backend, acted) {
        (Backend::Local(l), Acted::Released(_)) if recorded.unfinished.is_none() => {
            match follow(l, out, ws, &id, false, s.dispatched_at).await {
                Ok(now) => now,
                Err(e) => {
                    crate::decide::warn(out, "following the job here stopped", &e, &next);
                    job
                }
            }
        }
        _ => job,
    };
    let unfinished = recorded.unfinished.as_ref().map(Error::body);
    out.value(&json!({ "schedule": as_json(s, &job_now.title), "job": job_now, "unfinished": unfinished }));
    Ok(())
}

/// The time `--at` names: RFC 3339.
pub(crate) fn parse_at(at: &str) -> Result<ScheduleAction, Error> {
    let at = harmonia_contracts::time::parse(at.trim()).map_err(|_| {
        Error::new(
            Code::InvalidRequest,
            "--at must be an RFC 3339 time with its offset, for example 2026-12-07T15:00:00Z.",
        )
    })?;
    Ok(ScheduleAction::Reschedule { at })
}

/// Dispatch what is due, saying what went out; then follow those posts (in `ws`) until they
/// rest, so that a command exits with its dispatched posts published.
pub(crate) async fn tick(local: &Local, out: &Output, ws: &WorkspaceId) -> Result<usize, Error> {
    let done = schedule::tick(&local.env).await?;
    for (workspace, job) in done.released.iter().chain(&done.redispatched) {
        out.say(&format!("Dispatched a scheduled post that was due: job {job} (workspace {workspace})."));
    }
    let mine: Vec<JobId> =
        done.released.iter().chain(&done.redispatched).filter(|(w, _)| w == ws).map(|(_, j)| j.clone()).collect();
    if !mine.is_empty() {
        local.rest(ws, &mine, Duration::from_secs(60)).await?;
    }
    measure(local, out).await;
    Ok(done.released.len() + done.redispatched.len())
}

/// Take the engagement snapshots that are due, saying which beside the command's output (on
/// standard error). A platform that cannot be read now is tried again by the next command (or
/// tick): it never stops this one.
async fn measure(local: &Local, out: &Output) {
    match harmonia_pipeline::engagement::tick(&local.env).await {
        Ok(measured) => {
            for (workspace, job, offset) in &measured.taken {
                out.note(&format!(
                    "Read the {offset} engagement of job {job}'s post from its platform (workspace {workspace})."
                ));
            }
            if measured.failed > 0 {
                out.note(&format!(
                    "{} engagement snapshot(s) could not be read from the platform; the next command tries again.",
                    measured.failed
                ));
            }
        }
        Err(e) => out
            .note(&format!("Engagement snapshots could not be taken now ({}); the next command tries again.", e.code)),
    }
}

/// `harmonia dispatch [--watch]`.
pub(crate) async fn dispatch(local: &Local, out: &Output, ws: &WorkspaceId, watch: bool) -> Result<(), Error> {
    if !watch {
        let n = tick(local, out, ws).await?;
        if n == 0 {
            out.say("Nothing was due.");
        }
        out.value(&json!({ "dispatched": n }));
        return Ok(());
    }
    out.say(&format!("Dispatching due posts every {} seconds; stop with Ctrl-C.", WATCH_EVERY.as_secs()));
    loop {
        let n = tick(local, out, ws).await?;
        out.value(&json!({ "dispatched": n, "at": harmonia_contracts::time::format(&local.env.clock.now()) }));
        tokio::time::sleep(WATCH_EVERY).await;
    }
}
