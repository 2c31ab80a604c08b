//! What a process that died leaves behind: the agent session of an invocation that never
//! ended, and the claim of a step that never settled. Neither is authority (a session is
//! context; a lapsed claim is taken over by the step's next delivery), but neither would ever
//! go either. [`sweep`] removes them once their lease has lapsed, through the storage interface,
//! so on either backend; `harmonia doctor` runs it and says how many it removed.

use chrono::{DateTime, TimeDelta, Utc};
use harmonia_contracts::Error;
use harmonia_contracts::ids::WorkspaceId;

use crate::Env;
use crate::records::{RUNNING, Running};

/// What one sweep removed (or, on a store it cannot write, found).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// Agent sessions of invocations that never ended.
    pub sessions: usize,
    /// Step claims whose lease lapsed without the step settling.
    pub claims: usize,
}

/// How long after it was opened an agent session is taken for a dead invocation's: twice the
/// lease of the step that opened it. An invocation never outlives its delivery's lease; after
/// it the step runs again, under a session of its own.
pub fn session_lapse(env: &Env) -> TimeDelta {
    TimeDelta::from_std(env.step_lease.saturating_mul(2)).unwrap_or(TimeDelta::MAX)
}

/// Remove `workspace`'s sessions and claims left behind as of `now` (with `remove` false, only
/// count them).
pub async fn sweep(env: &Env, workspace: &WorkspaceId, now: DateTime<Utc>, remove: bool) -> Result<Swept, Error> {
    let store = &*env.store;
    let lapse = session_lapse(env);
    let opened_before = now.checked_sub_signed(lapse).unwrap_or(DateTime::<Utc>::MIN_UTC);
    let sessions = harmonia_agents::session::SESSIONS;
    let sessions = harmonia_store::sweep(store, workspace, sessions, remove, |d| d.updated_at <= opened_before).await?;
    // A claim that does not decode is no claim anyone can hold: it goes too.
    let lapsed = |d: &harmonia_store::Document| d.decode::<Running>().map_or(true, |r| r.until <= now);
    let claims = harmonia_store::sweep(store, workspace, RUNNING, remove, lapsed).await?;
    if sessions + claims > 0 {
        tracing::info!(workspace = %workspace, sessions, claims, remove, "swept what dead processes left behind");
    }
    Ok(Swept { sessions, claims })
}
