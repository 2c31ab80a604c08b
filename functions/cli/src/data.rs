//! The data file itself: `doctor` (is it sound, can every record be read), `backup` and
//! `restore`.

use std::path::Path;

use harmonia_blob::Folder;
use harmonia_contracts::ids::WorkspaceId;
use harmonia_contracts::{Code, Error, domain};
use harmonia_local::Local;
use harmonia_pipeline::records::ApprovalRecord;
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

/// The workspace's long sources whose transcript blob is missing or damaged (unreadable
/// blob storage is an error, not a finding).
async fn missing_blobs(local: &Local, ws: &WorkspaceId) -> Result<Vec<String>, Error> {
    let mut bad = Vec::new();
    for doc in scan_all(&*local.env.store, ws, SOURCES).await? {
        let Ok(source) = doc.decode::<domain::StoredSource>() else { continue };
        let Some(blob) = source.blob() else { continue };
        let finding = match harmonia_blob::get(&*local.env.blobs, ws, blob).await {
            Ok(_) => continue,
            Err(harmonia_blob::Error::Missing) => "missing",
            Err(harmonia_blob::Error::Corrupt | harmonia_blob::Error::TooLarge) => "damaged",
            Err(e) => return Err(e.into()),
        };
        bad.push(format!("{ws}/{SOURCES}/{} (its transcript blob {} is {finding})", doc.id, blob.sha256));
    }
    Ok(bad)
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
            let n = check.integrity.len();
            let problems = if n == 1 { "problem" } else { "problems" };
            out.say(&format!("integrity: {n} {problems} found by SQLite's integrity check:"));
            for line in check.integrity.iter().take(20) {
                out.say(&format!("  {line}"));
            }
        }
    }
    let mut bad: Vec<String> = check.unreadable.iter().map(|(w, c, id)| format!("{w}/{c}/{id} (not JSON)")).collect();
    bad.extend(typed::<domain::Job>(local, ws, JOBS).await?);
    bad.extend(typed::<domain::StoredSource>(local, ws, SOURCES).await?);
    bad.extend(missing_blobs(local, ws).await?);
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
    // What dead processes left behind goes, once its lease has lapsed (counted only where the
    // data dir cannot be written).
    let remove = local.reading_only.is_none();
    let swept = harmonia_pipeline::step::sweep::sweep(&local.env, ws, chrono::Utc::now(), remove).await?;
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let found = format!(
        "{} and {} of processes that died",
        plural(swept.sessions, "agent session", "agent sessions"),
        plural(swept.claims, "step claim", "step claims")
    );
    out.say(&match (swept.sessions + swept.claims, remove) {
        (0, _) => "left behind: nothing (no agent session or step claim of a process that died)".to_owned(),
        (_, true) => format!("left behind: removed {found}"),
        (_, false) => format!("left behind: {found}, not removed: the data dir cannot be written"),
    });
    let swept = json!({ "sessions": swept.sessions, "claims": swept.claims, "removed": remove });
    out.value(&json!({ "file": file, "integrity": check.integrity, "unreadable": bad, "swept": swept }));
    if sound && bad.is_empty() {
        return Ok(());
    }
    Err(Error::new(
        Code::StoreCorrupt,
        "the data file has problems (see above); restore a backup with `harmonia restore FILE`, or remove the unreadable records",
    ))
}

/// `harmonia doctor` on a data file no store can open (`refused`, `store_corrupt`, which names
/// the file and why): nothing more can be checked.
pub(crate) fn doctor_unopenable(out: &Output, data_dir: &Path, refused: Error) -> Result<(), Error> {
    let file = data_dir.join(harmonia_local::DATA_FILE).display().to_string();
    out.say(&format!("data file {file}"));
    out.say("integrity: not checked: the file cannot be opened as a Harmonia data file (see below)");
    out.value(&json!({ "file": file, "opened": false, "integrity": [], "unreadable": [] }));
    Err(refused)
}

/// `harmonia restore FILE` over a data file no store can open: the backup is put in its place
/// and the unusable file kept beside it, byte for byte.
pub(crate) async fn restore_unopenable(out: &Output, data_dir: &Path, from: &Path) -> Result<(), Error> {
    let file = data_dir.join(harmonia_local::DATA_FILE);
    let kept = kept_beside(&file);
    harmonia_store_sqlite::SqliteStore::verify_backup(from)?;
    let copied =
        Folder::new(blobs_beside(from)).copy_into(&Folder::new(data_dir.join(harmonia_local::BLOBS_DIR))).await?;
    harmonia_store_sqlite::replace_unusable(&file, from, &kept)?;
    restored(out, &file, from, copied, "The unusable file it replaces", &kept);
    Ok(())
}

/// Say that `file` was restored from `from` with `copied` blobs, and where `what` (its
/// previous content) is kept.
fn restored(out: &Output, file: &Path, from: &Path, copied: u64, what: &str, kept: &Path) {
    out.say(&format!(
        "Restored {} from {} ({} of long sources added). {what} is kept in {}.",
        file.display(),
        from.display(),
        blobs(copied, ""),
        kept.display()
    ));
    out.value(&json!({
        "restored_from": from.display().to_string(), "previous": kept.display().to_string(), "blobs_copied": copied,
    }));
}

/// "1 blob", "2 new blobs": how many blobs a backup or restore copied, `kind` before the noun.
fn blobs(n: u64, kind: &str) -> String {
    let noun = if n == 1 { "blob" } else { "blobs" };
    format!("{n} {kind}{noun}")
}

/// Where a restore keeps the data `file` it replaces: `<name>.before-restore-<time>.sqlite`.
fn kept_beside(file: &Path) -> std::path::PathBuf {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
    file.with_extension(format!("before-restore-{stamp}.sqlite"))
}

/// `harmonia backup FILE`.
pub(crate) async fn backup(local: &Local, out: &Output, to: &Path) -> Result<(), Error> {
    local.data.backup(to).await?;
    let bytes = std::fs::metadata(to).map(|m| m.len()).unwrap_or(0);
    let blobs = Folder::new(blobs_beside(to));
    let copied = local_blobs(local).copy_into(&blobs).await?;
    out.say(&format!(
        "Backed up {} to {} ({bytes} bytes), and {} of long sources to {}.",
        local.data.path().display(),
        to.display(),
        self::blobs(copied, "new "),
        blobs.root().display()
    ));
    out.value(&json!({
        "backup": to.display().to_string(), "bytes": bytes,
        "blobs": blobs.root().display().to_string(), "blobs_copied": copied,
    }));
    Ok(())
}

/// Where the backup `file` keeps its blobs: the folder `<file>.blobs` beside it.
fn blobs_beside(file: &Path) -> std::path::PathBuf {
    let mut name = file.file_name().map(std::ffi::OsString::from).unwrap_or_default();
    name.push(".blobs");
    file.with_file_name(name)
}

/// The data directory's blob folder.
fn local_blobs(local: &Local) -> Folder {
    let dir = local.data.path().parent().unwrap_or_else(|| Path::new("."));
    Folder::new(dir.join(harmonia_local::BLOBS_DIR))
}

/// `harmonia restore FILE`: the backup is checked first, then the current content is kept
/// beside the data file, then replaced.
pub(crate) async fn restore(local: &Local, out: &Output, from: &Path) -> Result<(), Error> {
    harmonia_store_sqlite::SqliteStore::verify_backup(from)?;
    let kept = kept_beside(local.data.path());
    local.data.backup(&kept).await?;
    // Blobs first: they are only added (never replaced), so the data file restored next never
    // names a blob that is not there.
    let copied = Folder::new(blobs_beside(from)).copy_into(&local_blobs(local)).await?;
    local.data.restore(from).await?;
    restored(out, local.data.path(), from, copied, "Its previous content", &kept);
    Ok(())
}
