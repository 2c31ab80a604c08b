//! The in-flight claim of (job, stage, pass): a duplicate delivery waits instead of running
//! the same step (and its model call) concurrently. [`complete`](super::complete) and
//! [`fail_job`](super::fail_job) delete it in their transactions; [`release`] gives it up
//! when a step stops without either.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use harmonia_contracts::ids::{DocId, WorkspaceId};
use harmonia_store::{Tx, create, encode, run_transaction, update};

use super::{Error, StageRef};
use crate::Env;
use crate::records::{RUNNING, Running, running_id};

/// The claims this process holds (workspace, claim document, owner token), so that a process
/// about to stop gives them back at once ([`release_held`]) rather than leaving them to lapse
/// with their lease while the next process's deliveries wait.
#[derive(Debug, Default)]
pub struct Held(Mutex<Holding>);

/// The claims held, and whether the process has stopped taking any.
#[derive(Debug, Default)]
struct Holding {
    claims: HashMap<(WorkspaceId, DocId), String>,
    closed: bool,
}

impl Held {
    /// Record a claim taken; `false` when the process is stopping and must not hold it.
    fn add(&self, workspace: &WorkspaceId, id: &DocId, owner: &str) -> bool {
        let Ok(mut held) = self.0.lock() else { return false };
        if held.closed {
            return false;
        }
        held.claims.insert((workspace.clone(), id.clone()), owner.to_owned());
        true
    }

    fn remove(&self, workspace: &WorkspaceId, id: &DocId, owner: &str) {
        let key = (workspace.clone(), id.clone());
        if let Ok(mut held) = self.0.lock()
            && held.claims.get(&key).is_some_and(|o| o == owner)
        {
            held.claims.remove(&key);
        }
    }

    /// Stop taking claims and hand over the ones held.
    fn close(&self) -> Vec<((WorkspaceId, DocId), String)> {
        let Ok(mut held) = self.0.lock() else { return Vec::new() };
        held.closed = true;
        held.claims.drain().collect()
    }
}

/// Whether the process holding a claim is still alive, where that can be known (the embedded
/// default's processes share one queue file with heartbeats); a deployment without it leaves
/// a crashed owner's claim to lapse with its lease.
#[async_trait::async_trait]
pub trait Liveness: Send + Sync {
    /// This process's holder id.
    fn holder(&self) -> &str;
    /// Whether `holder` is alive now. When it cannot be told, alive.
    async fn alive(&self, holder: &str) -> bool;
}

/// Proof that this delivery holds the claim (its owner token).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    owner: String,
}

/// Claim (job, stage, pass) for this delivery. `None` when another delivery holds a live
/// claim: the caller nacks and the message returns after backoff, by when the step has
/// usually completed and the marker answers it.
pub async fn acquire(env: &Env, at: &StageRef<'_>) -> Result<Option<Token>, Error> {
    let id = running_id(at.job, at.stage, at.round, at.pass);
    let now = Utc::now();
    let owner = uuid::Uuid::new_v4().simple().to_string();
    let holder = env.liveness.as_ref().map(|l| l.holder().to_owned());
    let mine = Running { owner: owner.clone(), until: lease_until(now, env.step_lease), holder };
    let token = Token { owner };
    let taken = if create(&*env.store, at.workspace, RUNNING, &id, encode(&mine)?).await? {
        Some(token)
    } else {
        match env.store.get(at.workspace, RUNNING, &id).await? {
            // Released in between: the next delivery claims it.
            None => None,
            Some(doc) => {
                let held: Running = doc.decode()?;
                if held.until > now && !holder_dead(env, held.holder.as_deref()).await {
                    return Ok(None);
                }
                // The holder is gone (crashed, or its lease lapsed): take over at the version seen.
                match update(&*env.store, at.workspace, RUNNING, &id, encode(&mine)?, doc.version).await {
                    Ok(_) => Some(token),
                    Err(harmonia_store::Error::PreconditionFailed) => None,
                    Err(e) => return Err(e.into()),
                }
            }
        }
    };
    match taken {
        Some(token) if !env.claims.add(at.workspace, &id, &token.owner) => {
            // The process is stopping: give the claim straight back (the delivery is nacked).
            release_doc(env, at.workspace, &id, &token.owner).await?;
            Ok(None)
        }
        taken => Ok(taken),
    }
}

/// The step of `token` has settled (completed, failed, or released): this process no longer
/// holds its claim.
pub fn settled(env: &Env, at: &StageRef<'_>, token: &Token) {
    env.claims.remove(at.workspace, &running_id(at.job, at.stage, at.round, at.pass), &token.owner);
}

/// Give back every claim this process still holds (steps in flight when it stops), each
/// unless another delivery has taken it over meanwhile, and take no more. Returns how many
/// were released.
pub async fn release_held(env: &Env) -> usize {
    let mut released = 0;
    for ((workspace, id), owner) in env.claims.close() {
        match release_doc(env, &workspace, &id, &owner).await {
            Ok(()) => released += 1,
            Err(e) => {
                tracing::warn!(error = %e, claim = %id, "a step's claim could not be released; it lapses with its lease")
            }
        }
    }
    released
}

/// Whether the claim's holder is known to be dead (another process whose heartbeat stopped).
async fn holder_dead(env: &Env, holder: Option<&str>) -> bool {
    match (holder, &env.liveness) {
        (Some(holder), Some(liveness)) if holder != liveness.holder() => !liveness.alive(holder).await,
        _ => false,
    }
}

/// When a lease of `lease` taken at `now` lapses. A lease too long for the calendar holds
/// until its end rather than becoming some shorter default.
fn lease_until(now: DateTime<Utc>, lease: Duration) -> DateTime<Utc> {
    TimeDelta::from_std(lease).ok().and_then(|d| now.checked_add_signed(d)).unwrap_or(DateTime::<Utc>::MAX_UTC)
}

/// Give up the claim `token` proves (a step that will be retried, or that no longer applies),
/// unless another delivery has taken it over meanwhile.
pub async fn release(env: &Env, at: &StageRef<'_>, token: &Token) -> Result<(), Error> {
    let id = running_id(at.job, at.stage, at.round, at.pass);
    env.claims.remove(at.workspace, &id, &token.owner);
    release_doc(env, at.workspace, &id, &token.owner).await
}

/// Delete the claim document `id` if `owner` still holds it.
async fn release_doc(env: &Env, workspace: &WorkspaceId, id: &DocId, owner: &str) -> Result<(), Error> {
    let store = &*env.store;
    run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
        let mut tx = Tx::begin(store, workspace);
        let Some(doc) = tx.get(RUNNING, id).await? else { return Ok(()) };
        if doc.decode::<Running>()?.owner != owner {
            return Ok(());
        }
        tx.delete(RUNNING, id);
        tx.commit().await
    })
    .await?;
    Ok(())
}

/// Stage the deletion of (job, stage, pass)'s claim, whoever holds it, in `tx`: the step is
/// settled, so its marker now answers every duplicate.
pub(crate) async fn delete_in(tx: &mut Tx<'_>, at: &StageRef<'_>) -> Result<(), harmonia_store::Error> {
    let id = running_id(at.job, at.stage, at.round, at.pass);
    if tx.get(RUNNING, &id).await?.is_some() {
        tx.delete(RUNNING, &id);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_lapses_after_its_length_and_an_unrepresentable_one_never_does() {
        let now = Utc::now();
        assert_eq!(lease_until(now, Duration::from_secs(300)), now + TimeDelta::seconds(300));
        assert_eq!(lease_until(now, Duration::MAX), DateTime::<Utc>::MAX_UTC);
        assert_eq!(lease_until(now, Duration::from_secs(u64::MAX / 2)), DateTime::<Utc>::MAX_UTC);
    }
}
