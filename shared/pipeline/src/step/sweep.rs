//! What a process that died leaves behind: the agent session of an invocation that never
//! ended, and the claim of a step that never settled. Neither is authority (a session is
//! context; a lapsed claim is taken over by the step's next delivery), but neither would ever
//! go either. [`sweep`] removes them once their lease has lapsed, through the storage interface,
//! so on either backend. The steps of a workspace run it in the background
//! ([`in_background`]), each process at most once every [`EVERY`] per workspace, on the embedded
//! default and in the deployed functions alike; `harmonia doctor` runs it too and says how many
//! it removed. The background sweep also registers the workspace with the job watch
//! ([`super::watch::register`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// How often a process sweeps a workspace its steps run in, at the most.
pub const EVERY: Duration = Duration::from_secs(600);

/// When this process last swept each workspace.
#[derive(Debug, Default)]
pub struct Sweeps(Mutex<HashMap<WorkspaceId, Instant>>);

impl Sweeps {
    /// Whether `workspace` is due a sweep now (noting that it is being swept).
    fn due(&self, workspace: &WorkspaceId) -> bool {
        let Ok(mut last) = self.0.lock() else { return false };
        let now = Instant::now();
        match last.get(workspace) {
            Some(at) if now.duration_since(*at) < EVERY => false,
            _ => {
                last.insert(workspace.clone(), now);
                true
            }
        }
    }
}

/// Sweep `workspace` in a task of its own when this process has not within [`EVERY`]: called
/// by every step, off its path.
pub fn in_background(env: &Arc<Env>, workspace: &WorkspaceId) {
    if !env.sweeps.due(workspace) {
        return;
    }
    let (env, workspace) = (env.clone(), workspace.clone());
    tokio::spawn(async move {
        // A workspace configured before the job watch existed is registered with it here.
        if let Err(e) = super::watch::register(&*env.store, &workspace).await {
            tracing::warn!(workspace = %workspace, code = e.code.as_str(), "the job watch could not register the workspace; the next sweep tries again");
        }
        if let Err(e) = sweep(&env, &workspace, Utc::now(), true).await {
            tracing::warn!(workspace = %workspace, code = e.code.as_str(), "what dead processes left behind could not be swept; the next sweep tries again");
        }
    });
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
