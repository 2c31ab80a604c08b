//! The workspace's calendar: every approved post by the time it goes (or went) out, within a
//! range, in UTC and in the workspace's time zone (`GET /v1/calendar`). It reads the schedule
//! records (every approved draft has one, a post published at once included) and the jobs they
//! belong to; it decides nothing.

use chrono::{Duration, NaiveDate, TimeZone as _};
use harmonia_contracts::domain::{CalendarPost, JobStatus, Schedule, Timestamp, WorkspaceConfig};
use harmonia_contracts::ids::WorkspaceId;
use harmonia_contracts::{Code, Error};
use harmonia_store::{MAX_QUERY_LIMIT, Query, decode_each, scan};

use crate::Env;
use crate::records::SCHEDULES;

/// The longest range one request may ask for.
pub const MAX_DAYS: i64 = 92;

/// The range asked for when none is: a week back and five weeks ahead.
pub fn default_range(now: Timestamp) -> (Timestamp, Timestamp) {
    (now - Duration::days(7), now + Duration::days(35))
}

/// `text` as a range end: an RFC 3339 time, or a date (`2026-12-07`), which is that day's
/// midnight in the workspace's time zone.
pub fn instant(text: &str, config: &WorkspaceConfig) -> Result<Timestamp, Error> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(t.to_utc());
    }
    let day = NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| {
        Error::new(
            Code::InvalidRequest,
            "The range's from and to are dates (2026-12-07) or RFC 3339 times (2026-12-07T09:00:00Z, with + written %2B).",
        )
    })?;
    let midnight = day.and_hms_opt(0, 0, 0).unwrap_or_default();
    // A midnight a time change skips is the first instant of that day.
    let local = config.timezone.tz().from_local_datetime(&midnight).earliest();
    Ok(local.map_or_else(|| midnight.and_utc(), |t| t.to_utc()))
}

/// The workspace's approved posts going out in `[from, to)`, soonest first (`invalid_request`
/// for an empty range or one longer than [`MAX_DAYS`]).
pub async fn posts(
    env: &Env,
    workspace: &WorkspaceId,
    config: &WorkspaceConfig,
    from: Timestamp,
    to: Timestamp,
) -> Result<Vec<CalendarPost>, Error> {
    if to <= from || to - from > Duration::days(MAX_DAYS) {
        return Err(Error::new(
            Code::InvalidRequest,
            format!("The range's to must come after its from, at most {MAX_DAYS} days later."),
        ));
    }
    let query = Query::all(MAX_QUERY_LIMIT);
    let docs = scan(&*env.store, workspace, SCHEDULES, query).await.map_err(Error::from)?;
    let mut schedules: Vec<Schedule> =
        decode_each::<Schedule>(SCHEDULES, &docs).into_iter().filter(|s| (from..to).contains(&s.due_at)).collect();
    schedules.sort_by_key(|s| s.due_at);
    let tz = config.timezone.tz();
    let mut posts = Vec::with_capacity(schedules.len());
    for s in schedules {
        let job = super::job(env, workspace, &s.job).await?;
        let state = match job.status {
            JobStatus::Publishing
            | JobStatus::PublishUnknown
            | JobStatus::Published
            | JobStatus::Verified
            | JobStatus::Failed => job.status.as_str().to_owned(),
            _ => s.state.as_str().to_owned(),
        };
        posts.push(CalendarPost {
            job: s.job,
            title: job.title,
            platform: s.platform,
            handle: s.handle,
            state,
            at: s.due_at,
            at_local: s.due_at.with_timezone(&tz).to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            window: s.window,
        });
    }
    Ok(posts)
}
