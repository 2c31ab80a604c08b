//! The loop back from the platforms: after a post is verified, the dispatcher reads its
//! engagement from the platform at the workspace's snapshot offsets (`[engagement] snapshots`,
//! by default 1 hour, 24 hours and 7 days), and each snapshot becomes a metric record
//! (`post_metrics/{post}.{offset}`) tied to the verified publication: the same workspace, the
//! job, the platform's own numbers, the time it was read, and the publication's provenance
//! (live from a real platform, mock from the sandbox). Those records are verified performance
//! under the one rule (`harmonia_agents::eligibility`), like imported ones, and the workspace's
//! remembered facts are derived from them again ([`memory`]).
//!
//! - Verification indexes the post ([`on_verified`]): one entry per job in the `system`
//!   workspace (`due_snapshots`, ordered by `due_at`), the only cross-workspace read, and a
//!   hint only: every decision reads the workspace's own publication and records.
//! - Each dispatcher tick ([`tick`]) takes the snapshots that are due. When several offsets
//!   passed while nothing ran, only the latest is taken (a "1 h" snapshot read two days late
//!   would be misnamed). A failed read is left due, so the next tick tries again; it never
//!   holds anything else up. A platform that offers no metrics, or a post that is gone, ends
//!   the post's measuring.
//! - A snapshot is written once (`create_if_absent`): two dispatchers racing keep the first.

pub mod memory;
pub mod trends;

use std::collections::BTreeSet;

use harmonia_connectors::Posted;
use harmonia_connectors::engagement::{Asked, Measured};
use harmonia_contracts::domain::{Platform, PostMetrics, Publication, SnapshotOffset, Timestamp};
use harmonia_contracts::ids::{DocId, DraftId, EvidenceId, JobId, PostId, WorkspaceId};
use harmonia_contracts::tool::Provenance;
use harmonia_contracts::{Code, Error};
use harmonia_store::{Collection, Query, Write, WriteOp, create_if_absent, encode};
use serde::{Deserialize, Serialize};

use crate::Env;
use crate::records::{POST_METRICS, PUBLICATIONS, doc_id};
use crate::steps::system_workspace;

/// The index of verified posts still to measure, across workspaces, in the `system` workspace.
pub const DUE_SNAPSHOTS: Collection = Collection::new("due_snapshots");

/// The most index entries one tick reads.
pub const TICK_LIMIT: u32 = 100;

/// One verified post still to measure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotEntry {
    /// The post's workspace.
    pub workspace: WorkspaceId,
    /// The job that published it.
    pub job: JobId,
    /// The publication's draft (its record's id).
    pub draft: DraftId,
    /// When it was verified: the offsets count from here.
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub verified_at: Timestamp,
    /// When the next snapshot is due.
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub due_at: Timestamp,
}

/// The id of a post's snapshot at `offset` in `post_metrics`.
pub fn snapshot_id(post: &harmonia_contracts::ids::PostId, offset: SnapshotOffset) -> DocId {
    doc_id(format!("{post}.{offset}"))
}

/// The workspace's current snapshot offsets (its latest configuration: an operator who changes
/// them changes what is still to come).
async fn offsets(env: &Env, workspace: &WorkspaceId) -> Result<Vec<SnapshotOffset>, Error> {
    Ok(crate::workspace::current(&*env.store, workspace).await?.config.engagement.snapshots)
}

/// Index the post of `job` (publication `draft`), verified at `verified_at`, for its first
/// snapshot. Verification calls it before it records the verification, so a crash between the
/// two leaves an entry whose tick finds the post not verified yet and lets it go (the retried
/// verification writes it again), never a verified post nobody measures.
pub(crate) async fn on_verified(
    env: &Env,
    workspace: &WorkspaceId,
    job: &JobId,
    draft: &DraftId,
    verified_at: Timestamp,
) -> Result<(), Error> {
    let Some(first) = offsets(env, workspace).await?.first().copied() else { return Ok(()) };
    let entry = SnapshotEntry {
        workspace: workspace.clone(),
        job: job.clone(),
        draft: draft.clone(),
        verified_at,
        due_at: verified_at + first.duration(),
    };
    index(env, &entry).await
}

async fn index(env: &Env, entry: &SnapshotEntry) -> Result<(), Error> {
    let write = Write {
        collection: DUE_SNAPSHOTS,
        id: crate::records::index_id(&entry.workspace, &entry.job),
        op: WriteOp::Upsert(encode(entry)?),
    };
    env.store.commit(&system_workspace(), vec![write]).await.map_err(Error::from)
}

async fn unindex(env: &Env, entry: &SnapshotEntry, version: u64) -> Result<(), Error> {
    let id = crate::records::index_id(&entry.workspace, &entry.job);
    let write = Write { collection: DUE_SNAPSHOTS, id, op: WriteOp::Delete { expected_version: Some(version) } };
    match env.store.commit(&system_workspace(), vec![write]).await {
        // Rewritten or removed meanwhile: whoever did it knows better.
        Ok(()) | Err(harmonia_store::Error::PreconditionFailed | harmonia_store::Error::NotFound) => Ok(()),
        Err(e) => Err(Error::from(e)),
    }
}

/// What one tick of the engagement snapshots did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tick {
    /// The snapshots it took: workspace, job and offset.
    pub taken: Vec<(WorkspaceId, JobId, SnapshotOffset)>,
    /// Posts it stopped measuring: every offset taken, no metrics offered, or the post gone.
    pub finished: usize,
    /// Snapshots it could not take this time (logged; the next tick tries again).
    pub failed: usize,
    /// Remembered facts that changed when they were derived again.
    pub facts_changed: usize,
    /// The public trends read from the workspaces' channels ([`trends`]).
    pub trends: trends::Refreshed,
}

/// Take every engagement snapshot that is due, then read again the public trends that are
/// stale ([`trends::tick`]). Safe to run anywhere, any number of times at once: a snapshot is
/// created once, and the index is a hint.
pub async fn tick(env: &Env) -> Result<Tick, Error> {
    let now = env.clock.now();
    let mut done = Tick::default();
    let mut measured = BTreeSet::new();
    for (entry, version) in crate::records::due_entries::<SnapshotEntry>(&*env.store, DUE_SNAPSHOTS, TICK_LIMIT).await?
    {
        if entry.due_at > now {
            break;
        }
        match measure(env, &entry, version, now, &mut done).await {
            Ok(true) => {
                measured.insert(entry.workspace.clone());
            }
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(workspace = %entry.workspace, job = %entry.job, code = e.code.as_str(), "an engagement snapshot could not be taken this time");
                done.failed += 1;
            }
        }
    }
    for workspace in &measured {
        match memory::recompute(env, workspace, now).await {
            Ok(changed) => done.facts_changed += changed,
            Err(e) => {
                tracing::warn!(workspace = %workspace, code = e.code.as_str(), "remembered facts could not be derived again; the next snapshot tries again")
            }
        }
    }
    done.trends = trends::tick(env).await?;
    Ok(done)
}

/// Take `entry`'s due snapshot, if it is not taken yet, and move the entry to the next offset
/// (or remove it). `Ok(true)` when a snapshot was written.
async fn measure(
    env: &Env,
    entry: &SnapshotEntry,
    version: u64,
    now: Timestamp,
    done: &mut Tick,
) -> Result<bool, Error> {
    let ws = &entry.workspace;
    let doc = env.store.get(ws, PUBLICATIONS, &doc_id(&entry.draft)).await.map_err(Error::from)?;
    let publication: Option<Publication> = doc.map(|d| d.decode()).transpose().map_err(Error::from)?;
    let target = publication.as_ref().and_then(|p| {
        let post = p.verified_post()?.clone();
        Some(Posted { post, ..Posted::applied(&p.receipt.as_ref()?.outcome)? })
    });
    let (Some(publication), Some(posted)) = (publication, target) else {
        // Not verified (yet): a retried verification indexes it again.
        unindex(env, entry, version).await?;
        done.finished += 1;
        return Ok(false);
    };
    let offsets = offsets(env, ws).await?;
    let since = |o: &SnapshotOffset| entry.verified_at + o.duration();
    let due = offsets.iter().rev().find(|o| since(o) <= now).copied();
    let next = offsets.iter().find(|o| since(o) > now).copied();
    let mut wrote = false;
    if let Some(offset) = due {
        let id = snapshot_id(&posted.post, offset);
        if env.store.get(ws, POST_METRICS, &id).await.map_err(Error::from)?.is_none() {
            let connector = crate::steps::read::channel_connector(env, ws, &entry.job, publication.platform)
                .await
                .map_err(crate::step::Error::into_error)?;
            if connector.kind() != publication.claim.connector {
                // The channel publishes another way now: this post cannot be read back here.
                unindex(env, entry, version).await?;
                done.finished += 1;
                return Ok(false);
            }
            let key = publication.lead_key();
            let asked = Asked { workspace: ws, idempotency_key: key, posted: &posted, age: now - entry.verified_at };
            match connector.engagement(asked).await {
                Ok(Measured::Counts(counts)) => {
                    let published_at = publication.receipt.as_ref().map_or(entry.verified_at, |r| r.recorded_at);
                    let record = PostMetrics {
                        post: posted.post.clone(),
                        job: Some(entry.job.clone()),
                        platform: publication.platform,
                        published_at,
                        measured_at: now,
                        offset: Some(offset),
                        impressions: None,
                        reactions: counts.likes,
                        comments: counts.replies,
                        shares: counts.reposts,
                        quotes: counts.quotes,
                        clicks: None,
                        source: format!("{} engagement snapshot", publication.claim.connector.as_str()),
                        provenance: publication.provenance(),
                    };
                    create_if_absent(&*env.store, ws, POST_METRICS, &id, encode(&record)?)
                        .await
                        .map_err(Error::from)?;
                    done.taken.push((ws.clone(), entry.job.clone(), offset));
                    wrote = true;
                }
                Ok(Measured::NotOffered | Measured::Gone) => {
                    unindex(env, entry, version).await?;
                    done.finished += 1;
                    return Ok(false);
                }
                Err(_) => {
                    return Err(Error::new(Code::ConnectorFailed, "The platform's engagement could not be read."));
                }
            }
        }
    }
    match next {
        Some(offset) => index(env, &SnapshotEntry { due_at: since(&offset), ..entry.clone() }).await?,
        None => {
            unindex(env, entry, version).await?;
            done.finished += 1;
        }
    }
    Ok(wrote)
}

/// One engagement snapshot as an operator reads it (`harmonia metrics`, the job page): the
/// platform's own counts, `null` where it has none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    /// How long after verification it was due.
    pub offset: SnapshotOffset,
    /// When it was read.
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    pub taken_at: Timestamp,
    /// The platform.
    pub platform: Platform,
    /// The post, as the platform names it.
    pub post: PostId,
    /// Likes (favourites).
    pub likes: u64,
    /// Reposts (reblogs).
    pub reposts: u64,
    /// Replies.
    pub replies: u64,
    /// Quote posts, where the platform counts them.
    pub quotes: Option<u64>,
    /// Live (a real platform) or mock (the sandbox).
    pub provenance: Provenance,
    /// The metric record's evidence id, as specialists, Nova and memory facts cite it.
    pub evidence_id: EvidenceId,
}

impl Snapshot {
    /// The snapshot a metric record holds; `None` for an imported row.
    pub fn of(m: &PostMetrics) -> Option<Self> {
        Some(Self {
            offset: m.offset?,
            taken_at: m.measured_at,
            platform: m.platform,
            post: m.post.clone(),
            likes: m.reactions,
            reposts: m.shares,
            replies: m.comments,
            quotes: m.quotes,
            provenance: m.provenance,
            evidence_id: m.evidence_id(),
        })
    }
}

/// The engagement snapshots of `job`'s posts, earliest first, and the workspace's offsets (an
/// unknown job, or another workspace's, is `not_found`).
pub async fn of_job(env: &Env, workspace: &WorkspaceId, job: &JobId) -> Result<JobMetrics, Error> {
    crate::gates::job(env, workspace, job).await?;
    let query = Query::all(harmonia_store::MAX_QUERY_LIMIT).filter("job", job.as_str()).map_err(Error::from)?;
    let docs = harmonia_store::scan(&*env.store, workspace, POST_METRICS, query).await.map_err(Error::from)?;
    let records: Vec<PostMetrics> = harmonia_store::decode_each(POST_METRICS, &docs);
    let mut snapshots: Vec<Snapshot> = records.iter().filter_map(Snapshot::of).collect();
    snapshots.sort_by(|a, b| (a.taken_at, &a.post).cmp(&(b.taken_at, &b.post)));
    Ok(JobMetrics { job: job.clone(), snapshots, offsets: offsets(env, workspace).await? })
}

/// A job's engagement as an operator reads it (`harmonia metrics`, `GET /v1/jobs/{job}/metrics`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobMetrics {
    /// The job.
    pub job: JobId,
    /// Its snapshots, earliest first.
    pub snapshots: Vec<Snapshot>,
    /// When after verification the workspace reads engagement (its current `[engagement]
    /// snapshots`).
    pub offsets: Vec<SnapshotOffset>,
}

#[cfg(test)]
mod tests;
