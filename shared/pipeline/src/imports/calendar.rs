//! `harmonia calendar import FILE.csv`: posts already scheduled elsewhere and blackout dates.
//!
//! Columns: `kind` (`scheduled` or `blackout`), `source`, `provenance` (required); `id`, `at`,
//! `channel`, `title`, `date`, `reason` (optional, by kind). A `scheduled` row needs `at` (an
//! RFC 3339 time), `channel` and `title`; a `blackout` row needs `date` (`YYYY-MM-DD`, a whole
//! day in the workspace's time zone) and may give a `reason`. A column that does not apply to
//! the row's kind must be empty. A row is stored under its `id`, or else under a digest of its
//! content, so importing the same rows again replaces them.

use harmonia_contracts::Error;
use harmonia_contracts::domain::{CalendarImport, CalendarItem, content_hash};
use harmonia_contracts::ids::{DocId, WorkspaceId};
use harmonia_store::Store;

use super::table::{self, Row, Spec};
use super::{Format, ImportKind, Summary, store_all, text};
use crate::records::CALENDAR;

/// The calendar file's columns.
pub(super) const SPEC: Spec =
    Spec { required: &["kind", "source", "provenance"], optional: &["id", "at", "channel", "title", "date", "reason"] };

/// Every row of a calendar CSV, validated; the first bad row is the error.
pub fn parse(csv: &str) -> Result<Vec<CalendarImport>, Error> {
    table::records(csv, Format::Csv, &SPEC, entry, |e| e.id.clone(), "calendar entry")
}

fn entry(row: &Row) -> Result<CalendarImport, Error> {
    let item = match row.required("kind")?.trim() {
        "scheduled" => {
            for column in ["date", "reason"] {
                row.absent(column, "this column is for blackout rows; leave it empty")?;
            }
            CalendarItem::Scheduled {
                channel: row
                    .named("channel", "one of x, linkedin, instagram, threads, bluesky, youtube, tiktok is expected")?,
                title: row.text("title", 200)?,
                at: row.time("at")?,
            }
        }
        "blackout" => {
            for column in ["at", "channel", "title"] {
                row.absent(column, "this column is for scheduled rows; leave it empty")?;
            }
            CalendarItem::Blackout {
                date: row.parsed("date", "a date written YYYY-MM-DD is expected")?,
                reason: row.optional_text("reason", 200)?,
            }
        }
        _ => return Err(row.invalid("kind", "scheduled or blackout is expected")),
    };
    let id = match row.get("id") {
        Some(_) => row.parsed("id", "an id (letters, digits, `.`, `_`, `:` or `-`, at most 128) is expected")?,
        // The digest of what the row says (not of its source or provenance), so the same entry
        // imported again, from any export, is the same document.
        None => format!("cal-{}", &content_hash(&item)[..32]).parse::<DocId>()?,
    };
    Ok(CalendarImport {
        id,
        item,
        source: row.text("source", 200)?,
        provenance: row.named("provenance", "live or mock is expected")?,
    })
}

/// Validate the whole file, then store every row in one commit (or nothing).
pub async fn import(store: &dyn Store, workspace: &WorkspaceId, bytes: &[u8]) -> Result<Summary, Error> {
    let entries = parse(text(bytes)?)?;
    let records: Vec<_> = entries.into_iter().map(|e| (e.id.clone(), e)).collect();
    store_all(store, workspace, ImportKind::Calendar, &records).await
}

/// Every imported calendar entry of `workspace`, in id order.
pub async fn entries(store: &dyn Store, workspace: &WorkspaceId) -> Result<Vec<CalendarImport>, Error> {
    let docs = harmonia_store::scan_all(store, workspace, CALENDAR).await?;
    Ok(harmonia_store::decode_each(CALENDAR, &docs))
}
