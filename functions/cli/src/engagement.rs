//! `harmonia metrics JOB` and `harmonia memory`: what came back from the platforms, read-only.

use harmonia_client::api::MemoryList;
use harmonia_contracts::Error;
use harmonia_contracts::ids::{JobId, WorkspaceId};
use harmonia_contracts::tool::Provenance;
use harmonia_pipeline::engagement;
use serde_json::json;

use crate::app::{Backend, Output};

/// `harmonia metrics JOB`: the engagement snapshots of the job's post, earliest first.
pub(crate) async fn metrics(backend: &Backend, out: &Output, ws: &WorkspaceId, job: &str) -> Result<(), Error> {
    let job: JobId = job.parse()?;
    let answer = match backend {
        Backend::Local(l) => engagement::of_job(&l.env, ws, &job).await?,
        Backend::Cloud(client) => client.metrics(&job).await?,
    };
    let offsets: Vec<String> = answer.offsets.iter().map(ToString::to_string).collect();
    if answer.snapshots.is_empty() {
        out.say(&format!(
            "No engagement has been read for job {} yet: its platform is asked {} after its post is verified.",
            answer.job,
            offsets.join(", ")
        ));
    } else {
        out.say(&format!(
            "{:<7} {:<17} {:<9} {:>6} {:>8} {:>8} {:>7}  PROVENANCE",
            "OFFSET", "TAKEN (UTC)", "PLATFORM", "LIKES", "REPOSTS", "REPLIES", "QUOTES"
        ));
        for s in &answer.snapshots {
            let quotes = s.quotes.map_or_else(|| "-".to_owned(), |q| q.to_string());
            out.say(&format!(
                "{:<7} {:<17} {:<9} {:>6} {:>8} {:>8} {:>7}  {}",
                s.offset.to_string(),
                s.taken_at.format("%Y-%m-%d %H:%M").to_string(),
                s.platform.display_name(),
                s.likes,
                s.reposts,
                s.replies,
                quotes,
                s.provenance.as_str()
            ));
        }
    }
    out.value(&json!(answer));
    Ok(())
}

/// `harmonia memory`: the workspace's remembered facts, newest first, with their evidence.
pub(crate) async fn memory(backend: &Backend, out: &Output, ws: &WorkspaceId) -> Result<(), Error> {
    let answer = match backend {
        Backend::Local(l) => MemoryList { facts: engagement::memory::list(&l.env, ws, l.env.clock.now()).await? },
        Backend::Cloud(client) => client.memory().await?,
    };
    if answer.facts.is_empty() {
        out.say("Nothing is remembered yet: facts are derived from the engagement of verified posts once it is read.");
    }
    let now = chrono::Utc::now();
    for f in &answer.facts {
        let offered = match (f.offered, f.provenance) {
            (true, _) => format!("offered to Nimi and Ryan until {}", f.expires_at.format("%Y-%m-%d")),
            (false, Provenance::Mock) => "not offered: it rests on mock numbers (the sandbox's)".to_owned(),
            (false, _) if f.expires_at <= now => format!("not offered since {}", f.expires_at.format("%Y-%m-%d")),
            (false, _) => "not offered: a post it rests on is not a verified publication".to_owned(),
        };
        out.say(&format!("{} (version {}, {}, {offered})", f.id, f.version, f.provenance.as_str()));
        out.say(&format!("  {}", f.statement));
        if !f.evidence.is_empty() {
            let ids: Vec<&str> = f.evidence.iter().map(|e| e.as_str()).collect();
            out.say(&format!("  Rests on: {}", ids.join(", ")));
        }
    }
    out.value(&json!(answer));
    Ok(())
}
