//! Public trends from the workspace's channels: on each dispatcher tick, every workspace whose
//! read is older than its `[engagement] trends_cache_minutes` (60 by default) has the public
//! trends of each channel whose platform shows some read again — Bluesky's trending topics
//! through the account's PDS and its AppView, Mastodon's trending tags and links — and kept as
//! trend signals beside the imported ones (`trend_signals/sig-pub-{platform}-…`), each with
//! its source, the time it was read and `provenance: live`. A channel's earlier public trends
//! are replaced by its latest read; imported signals are never touched. Nova's trend skills
//! read them all (`fetch_trend_signals`, `search_trend_signals`).
//!
//! The workspaces looked at are those the job watch knows ([`crate::step::watch`]); a read
//! that fails leaves the earlier trends in place and is tried again at the next tick.

use chrono::Duration;
use harmonia_contracts::Error;
use harmonia_contracts::domain::{ConnectorKind, Platform, Timestamp, TrendSignal};
use harmonia_contracts::ids::{DocId, SignalId, WorkspaceId};
use harmonia_contracts::tool::Provenance;
use harmonia_store::{Collection, Write, WriteOp, encode, scan_all};
use serde::{Deserialize, Serialize};

use crate::Env;
use crate::records::{TREND_SIGNALS, doc_id};

/// When the workspace's public trends were last read (one record, `public`).
pub const TREND_READS: Collection = Collection::new("trend_reads");

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LastRead {
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    at: Timestamp,
}

fn last_read_id() -> DocId {
    doc_id("public")
}

/// How every public trend's id begins, for `platform`.
fn prefix(platform: Platform) -> String {
    format!("sig-pub-{}-", platform.as_str())
}

/// The id of `topic`'s public trend on `platform`: the same topic keeps its id across reads.
fn signal_id(platform: Platform, topic: &str) -> SignalId {
    use sha2::Digest;
    let digest = hex::encode(sha2::Sha256::digest(topic.to_lowercase().as_bytes()));
    SignalId::stable(&format!("{}{}", prefix(platform), &digest[..16]))
}

/// What one round of trend reads did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Refreshed {
    /// Workspaces whose trends were read.
    pub workspaces: usize,
    /// Trend signals stored.
    pub signals: usize,
    /// Channel reads that failed (tried again at the next tick).
    pub failed: usize,
}

/// Read again the public trends of every workspace whose last read is older than its cache.
pub async fn tick(env: &Env) -> Result<Refreshed, Error> {
    let now = env.clock.now();
    let mut done = Refreshed::default();
    for workspace in crate::step::watch::workspaces(&*env.store).await? {
        if let Err(e) = refresh_if_stale(env, &workspace, now, &mut done).await {
            tracing::warn!(workspace = %workspace, code = e.code.as_str(), "public trends could not be read this time; the next tick tries again");
            done.failed += 1;
        }
    }
    Ok(done)
}

async fn refresh_if_stale(
    env: &Env,
    workspace: &WorkspaceId,
    now: Timestamp,
    done: &mut Refreshed,
) -> Result<(), Error> {
    let store = &*env.store;
    let Ok(version) = crate::workspace::current(store, workspace).await else { return Ok(()) };
    let config = version.config;
    let keep = Duration::minutes(i64::from(config.engagement.trends_cache_minutes));
    let last = store.get(workspace, TREND_READS, &last_read_id()).await.map_err(Error::from)?;
    let read = last.as_ref().and_then(|d| d.decode::<LastRead>().ok());
    if read.is_some_and(|r| r.at + keep > now && r.at <= now) {
        return Ok(());
    }
    // One read per platform: its first channel holding an account there.
    let mut channels: Vec<(&harmonia_contracts::domain::Channel, _)> = Vec::new();
    for c in config.channels.iter().filter(|c| matches!(c.connector, ConnectorKind::Bluesky | ConnectorKind::Mastodon))
    {
        if let Some(connector) =
            env.connector_for(c).filter(|_| !channels.iter().any(|(held, _)| held.platform == c.platform))
        {
            channels.push((c, connector.clone()));
        }
    }
    if channels.is_empty() {
        return Ok(());
    }
    let held: Vec<TrendSignal> = harmonia_store::decode_each(
        TREND_SIGNALS,
        &scan_all(store, workspace, TREND_SIGNALS).await.map_err(Error::from)?,
    );
    let mut writes = Vec::new();
    let mut all_read = true;
    for (channel, connector) in channels {
        let trends = match connector.trends().await {
            Ok(trends) => trends,
            Err(_) => {
                done.failed += 1;
                all_read = false;
                continue;
            }
        };
        let source = format!("{} public trends, read for {}", channel.platform.display_name(), channel.handle);
        let fresh: Vec<TrendSignal> = trends
            .iter()
            .enumerate()
            .map(|(rank, t)| TrendSignal {
                id: signal_id(channel.platform, &t.topic),
                topic: t.topic.clone(),
                summary: t.summary.clone(),
                source: source.chars().take(200).collect(),
                url: t.url.clone().filter(|u| u.len() <= 2048),
                score: u8::try_from(100usize.saturating_sub(rank * 5)).unwrap_or(0),
                observed_at: now,
                provenance: Provenance::Live,
            })
            .collect();
        let platform_prefix = prefix(channel.platform);
        for old in held.iter().filter(|s| s.id.as_str().starts_with(&platform_prefix)) {
            if !fresh.iter().any(|f| f.id == old.id) {
                let op = WriteOp::Delete { expected_version: None };
                writes.push(Write { collection: TREND_SIGNALS, id: doc_id(&old.id), op });
            }
        }
        for signal in &fresh {
            writes.push(Write {
                collection: TREND_SIGNALS,
                id: doc_id(&signal.id),
                op: WriteOp::Upsert(encode(signal)?),
            });
        }
        done.signals += fresh.len();
    }
    // A channel that could not be read is read again at the next tick, not once the cache ages.
    if all_read {
        writes.push(Write {
            collection: TREND_READS,
            id: last_read_id(),
            op: WriteOp::Upsert(encode(&LastRead { at: now })?),
        });
    }
    if !writes.is_empty() {
        store.commit(workspace, writes).await.map_err(Error::from)?;
        done.workspaces += 1;
    }
    Ok(())
}
