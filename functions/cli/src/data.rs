//! The data file itself: `doctor` (is it sound, can every record be read), `backup` and
//! `restore`.

use std::path::Path;

use harmonia_contracts::ids::WorkspaceId;
use harmonia_contracts::{Code, Error, domain};
use harmonia_local::Local;
use harmonia_pipeline::operator::ApprovalRecord;
use harmonia_pipeline::records::{
    ANALYSES, APPROVALS, AnalysisRecord, DRAFTS, JOBS, PLANS, PUBLICATIONS, PlanRecord, SOURCES, STRATEGIES,
    StrategyRecord,
};
use harmonia_store::{Collection, Document, scan_all};
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::app::Output;

/// The ids of `docs` that do not decode as `T`.
fn unreadable<T: DeserializeOwned>(docs: &[Document]) -> Vec<String> {
    docs.iter().filter(|d| d.decode::<T>().is_err()).map(|d| d.id.to_string()).collect()
}

/// The workspace's records of `collection` that do not decode as `T`.
async fn typed<T: DeserializeOwned>(
    local: &Local,
    ws: &WorkspaceId,
    collection: Collection,
) -> Result<Vec<String>, Error> {
    let docs = scan_all(&*local.env.store, ws, collection).await?;
    Ok(unreadable::<T>(&docs).into_iter().map(|id| format!("{ws}/{collection}/{id}")).collect())
}

/// `harmonia doctor`.
pub(crate) async fn doctor(local: &Local, out: &Output, ws: &WorkspaceId) -> Result<(), Error> {
    let file = local.data.path().display().to_string();
    out.say(&format!("data file {file}"));
    let check = local.data.check().await?;
    let sound = check.integrity == ["ok"];
    match sound {
        true => out.say("integrity: ok (SQLite's integrity check found nothing wrong)"),
        false => {
            out.say(&format!("integrity: {} problem(s) found by SQLite's integrity check:", check.integrity.len()));
            for line in check.integrity.iter().take(20) {
                out.say(&format!("  {line}"));
            }
        }
    }
    let mut bad: Vec<String> = check.unreadable.iter().map(|(w, c, id)| format!("{w}/{c}/{id} (not JSON)")).collect();
    bad.extend(typed::<domain::Job>(local, ws, JOBS).await?);
    bad.extend(typed::<domain::Source>(local, ws, SOURCES).await?);
    bad.extend(typed::<AnalysisRecord>(local, ws, ANALYSES).await?);
    bad.extend(typed::<StrategyRecord>(local, ws, STRATEGIES).await?);
    bad.extend(typed::<PlanRecord>(local, ws, PLANS).await?);
    bad.extend(typed::<domain::Draft>(local, ws, DRAFTS).await?);
    bad.extend(typed::<ApprovalRecord>(local, ws, APPROVALS).await?);
    bad.extend(typed::<domain::Publication>(local, ws, PUBLICATIONS).await?);
    match bad.len() {
        0 => out.say("documents: every stored document can be read"),
        n => {
            out.say(&format!("documents: {n} cannot be read; commands that list records skip them:"));
            for id in &bad {
                out.say(&format!("  {id}"));
            }
        }
    }
    out.value(&json!({ "file": file, "integrity": check.integrity, "unreadable": bad }));
    if sound && bad.is_empty() {
        return Ok(());
    }
    Err(Error::new(
        Code::StoreCorrupt,
        "the data file has problems (see above); restore a backup with `harmonia restore FILE`, or remove the unreadable records",
    ))
}

/// `harmonia backup FILE`.
pub(crate) async fn backup(local: &Local, out: &Output, to: &Path) -> Result<(), Error> {
    local.data.backup(to).await?;
    let bytes = std::fs::metadata(to).map(|m| m.len()).unwrap_or(0);
    out.say(&format!("backed up {} to {} ({bytes} bytes)", local.data.path().display(), to.display()));
    out.value(&json!({ "backup": to.display().to_string(), "bytes": bytes }));
    Ok(())
}

/// `harmonia restore FILE`: the backup is checked first, then the current content is kept
/// beside the data file, then replaced.
pub(crate) async fn restore(local: &Local, out: &Output, from: &Path) -> Result<(), Error> {
    harmonia_store_sqlite::SqliteStore::verify_backup(from)?;
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
    let kept = local.data.path().with_extension(format!("before-restore-{stamp}.sqlite"));
    local.data.backup(&kept).await?;
    local.data.restore(from).await?;
    out.say(&format!(
        "restored {} from {}; its previous content is kept in {}",
        local.data.path().display(),
        from.display(),
        kept.display()
    ));
    out.value(&json!({ "restored_from": from.display().to_string(), "previous": kept.display().to_string() }));
    Ok(())
}
