//! Jobs that stopped moving. A job moves on events: each step's completion publishes the next
//! one, and the bus redelivers a message until it is acknowledged or its attempts run out. A
//! message dead-lettered while its step could not run (a dependency down for longer than the
//! retries last, a step held by an instance that died until the retries were spent), or one
//! the bus never delivered, leaves its job where it was, with nothing left to move it on.
//!
//! The watch finds those jobs and publishes again what their completed steps and decisions
//! released ([`crate::gates::resume_job`]). A consumer skips what it already completed and a
//! running step's claim refuses a duplicate, so re-driving a job that was only slow costs a few
//! messages and changes nothing.
//!
//! - A job is **stuck** when its status is one a step acts on (not a gate, not the schedule,
//!   not an end) and has not changed for [`stuck_after`]: three step leases (15 minutes with
//!   the deployment's 300 s lease).
//! - It is re-driven when its stillness passes 1, 2, 4 and 8 times that (15, 30, 60 and 120
//!   minutes); then it is left where it is, for an operator (each re-drive is logged, the last
//!   one as an error).
//! - A [`check`] runs at most once a step lease, whoever calls it: the deployed dispatcher on
//!   each of Cloud Scheduler's ticks. Concurrent callers agree through one record in the
//!   `system` workspace, so one of them checks.
//! - It looks at the workspaces [`register`]ed with it: a new workspace is registered when it
//!   is configured, and one configured before the watch existed by the first step that runs in
//!   it.

use chrono::{DateTime, TimeDelta, Utc};
use harmonia_contracts::Error;
use harmonia_contracts::domain::JobStatus;
use harmonia_contracts::ids::WorkspaceId;
use harmonia_store::{Collection, MAX_QUERY_LIMIT, Query, Store, Write, WriteOp, decode_each, encode, scan};
use serde::{Deserialize, Serialize};
use strum::IntoEnumIterator;

use crate::Env;
use crate::records::{JOBS, doc_id};
use crate::steps::system_workspace;

/// The workspaces the watch looks at, in the `system` workspace, by workspace id.
pub const WATCHED: Collection = Collection::new("watched_workspaces");
/// When the watch last checked, in the `system` workspace (one record, [`LAST_CHECK`]).
pub const WATCH: Collection = Collection::new("job_watch");
/// The id of the record of the last check.
const LAST_CHECK: &str = "last_check";
/// How many times a stuck job is re-driven before it is left to an operator.
pub const REDRIVES: u32 = 4;

/// A workspace the watch looks at.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Watched {
    workspace: WorkspaceId,
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    registered_at: DateTime<Utc>,
}

/// When the watch last checked.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct LastCheck {
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    checked_at: DateTime<Utc>,
}

/// What one [`check`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checked {
    /// Whether it looked at all (a check ran within the last lease, here or elsewhere: not).
    pub ran: bool,
    /// Stuck jobs it found, re-driven or not.
    pub stuck: usize,
    /// Jobs it re-drove.
    pub redriven: usize,
    /// Workspaces it could not look at and stuck jobs it could not re-drive this time (each
    /// logged; the next check looks again, and a job's next re-drive time tries it again).
    pub failed: usize,
}

/// How long a job may stay in a status a step acts on before it counts as stuck: three step
/// leases (a step may hold it one lease, and its message's retries come on top).
pub fn stuck_after(env: &Env) -> TimeDelta {
    TimeDelta::from_std(env.step_lease.saturating_mul(3)).unwrap_or(TimeDelta::MAX)
}

/// Whether a step moves a job in `status` on without anyone deciding anything.
pub fn moves_on_its_own(status: JobStatus) -> bool {
    !status.is_terminal() && crate::gates::awaited(status).is_none() && status != JobStatus::Scheduled
}

/// Have the watch look at `workspace` (nothing changes if it already does).
pub async fn register(store: &dyn Store, workspace: &WorkspaceId) -> Result<(), Error> {
    let system = system_workspace();
    if store.get(&system, WATCHED, &doc_id(workspace)).await.map_err(Error::from)?.is_some() {
        return Ok(());
    }
    let record = Watched { workspace: workspace.clone(), registered_at: Utc::now() };
    let data = encode(&record).map_err(Error::from)?;
    harmonia_store::create(store, &system, WATCHED, &doc_id(workspace), data).await.map_err(Error::from)?;
    Ok(())
}

/// Every workspace the watch knows (each registers at its configuration or its first step).
pub(crate) async fn workspaces(store: &dyn Store) -> Result<Vec<WorkspaceId>, Error> {
    let docs = scan(store, &system_workspace(), WATCHED, Query::all(MAX_QUERY_LIMIT)).await.map_err(Error::from)?;
    Ok(decode_each::<Watched>(WATCHED, &docs).into_iter().map(|w| w.workspace).collect())
}

/// Look for stuck jobs and re-drive those due, unless a check ran within the last step lease.
pub async fn check(env: &Env) -> Result<Checked, Error> {
    let now = env.clock.now();
    let Some(since) = take_turn(env, now).await? else { return Ok(Checked::default()) };
    let mut done = Checked { ran: true, ..Checked::default() };
    let system = system_workspace();
    let watched: Vec<Watched> = decode_each(
        WATCHED,
        &scan(&*env.store, &system, WATCHED, Query::all(MAX_QUERY_LIMIT)).await.map_err(Error::from)?,
    );
    for ws in &watched {
        if let Err(e) = check_workspace(env, &ws.workspace, since, now, &mut done).await {
            tracing::warn!(workspace = %ws.workspace, code = e.code.as_str(), "the job watch could not look at a workspace this time; the next check looks again");
            done.failed += 1;
        }
    }
    if done.stuck > 0 {
        tracing::info!(stuck = done.stuck, redriven = done.redriven, "the job watch found jobs that stopped moving");
    }
    Ok(done)
}

/// Record this check as the last one if none ran within the last lease; the time of the one
/// before it (this check looks at what stood still since then), or `None` when it is not this
/// caller's turn.
async fn take_turn(env: &Env, now: DateTime<Utc>) -> Result<Option<DateTime<Utc>>, Error> {
    let system = system_workspace();
    let every = TimeDelta::from_std(env.step_lease).unwrap_or(TimeDelta::MAX);
    let id = doc_id(LAST_CHECK);
    let stored = env.store.get(&system, WATCH, &id).await.map_err(Error::from)?;
    let data = encode(&LastCheck { checked_at: now }).map_err(Error::from)?;
    let (since, op) = match stored {
        Some(doc) => {
            // A record that does not decode is taken as a check long ago: the next one replaces it.
            let since = doc.decode::<LastCheck>().map_or(now - every, |l| l.checked_at);
            if now - since < every {
                return Ok(None);
            }
            (since, WriteOp::Update { data, expected_version: doc.version })
        }
        None => (now - every, WriteOp::Create(data)),
    };
    match env.store.commit(&system, vec![Write { collection: WATCH, id, op }]).await {
        Ok(()) => Ok(Some(since)),
        // Another caller took this turn.
        Err(harmonia_store::Error::Conflict | harmonia_store::Error::AlreadyExists) => Ok(None),
        Err(e) => Err(Error::from(e)),
    }
}

/// The stuck jobs of `workspace`: re-drive each whose stillness passed one of its re-drive
/// times since the last check (`since`).
async fn check_workspace(
    env: &Env,
    workspace: &WorkspaceId,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
    done: &mut Checked,
) -> Result<(), Error> {
    let after = stuck_after(env);
    for status in JobStatus::iter().filter(|s| moves_on_its_own(*s)) {
        let query = Query::all(MAX_QUERY_LIMIT).filter("status", status.as_str()).map_err(Error::from)?;
        let jobs: Vec<harmonia_contracts::domain::Job> =
            decode_each(JOBS, &scan(&*env.store, workspace, JOBS, query).await.map_err(Error::from)?);
        for job in jobs.iter().filter(|j| j.status == status && now - j.updated_at >= after) {
            done.stuck += 1;
            let Some(nth) = redrive_due(after, now - job.updated_at, since - job.updated_at) else { continue };
            let messages = match crate::gates::resume_job(env, workspace, job).await {
                Ok(messages) => messages,
                Err(e) => {
                    // Its next re-drive time tries again.
                    tracing::warn!(workspace = %workspace, job = %job.id, code = e.code.as_str(), "a job that had not moved could not be re-driven this time");
                    done.failed += 1;
                    continue;
                }
            };
            done.redriven += 1;
            let still = (now - job.updated_at).num_seconds();
            if nth == REDRIVES {
                tracing::error!(workspace = %workspace, job = %job.id, status = %status, still_s = still, redrive = nth, messages, "a job that has not moved was re-driven for the last time; if it still does not move, an operator should look at it (its dead letters, `harmonia retry`)");
            } else {
                tracing::warn!(workspace = %workspace, job = %job.id, status = %status, still_s = still, redrive = nth, messages, "a job that had not moved was re-driven");
            }
        }
    }
    Ok(())
}

/// Which re-drive (1 to [`REDRIVES`]) a job still for `age` is due, if one of its re-drive
/// times (`after` times 1, 2, 4, …) passed since the last check, when it was still for
/// `age_before`.
fn redrive_due(after: TimeDelta, age: TimeDelta, age_before: TimeDelta) -> Option<u32> {
    (0..REDRIVES).find_map(|k| {
        let at = after.checked_mul(1 << k)?;
        (age_before < at && at <= age).then_some(k + 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stuck_job_is_re_driven_at_one_two_four_and_eight_times_the_threshold_then_left() {
        let after = TimeDelta::minutes(15);
        let every = TimeDelta::minutes(5);
        // A check every five minutes over four hours, the job still from minute 0.
        let mut redrives = Vec::new();
        let mut before = TimeDelta::zero();
        for i in 1..=48 {
            let age = every * i;
            if let Some(nth) = redrive_due(after, age, before) {
                redrives.push((nth, age.num_minutes()));
            }
            before = age;
        }
        assert_eq!(redrives, vec![(1, 15), (2, 30), (3, 60), (4, 120)]);
        // A check that was missed: the next one makes up for it, once.
        assert_eq!(redrive_due(after, TimeDelta::minutes(40), TimeDelta::minutes(20)), Some(2));
        assert_eq!(redrive_due(after, TimeDelta::minutes(14), TimeDelta::minutes(9)), None);
        // Checks far apart: one re-drive for the whole gap, not one per time it passed.
        assert_eq!(redrive_due(after, TimeDelta::minutes(200), TimeDelta::minutes(10)), Some(1));
    }

    #[test]
    fn only_what_a_step_moves_on_is_watched() {
        let watched: Vec<JobStatus> = JobStatus::iter().filter(|s| moves_on_its_own(*s)).collect();
        for status in [
            JobStatus::AwaitingStrategyApproval,
            JobStatus::AwaitingDraftApproval,
            JobStatus::Scheduled,
            JobStatus::Verified,
            JobStatus::Failed,
            JobStatus::NeedsHuman,
        ] {
            assert!(!watched.contains(&status), "{status}");
        }
        for status in [JobStatus::Ingested, JobStatus::StrategyApproved, JobStatus::DraftApproved, JobStatus::Published]
        {
            assert!(watched.contains(&status), "{status}");
        }
    }
}
