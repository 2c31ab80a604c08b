//! `harmonia import signals FILE.csv|FILE.json`: public trend signals a workspace follows.
//!
//! Columns (CSV) or fields (JSON, an array of objects matching
//! `schemas/trend-signal.schema.json`): `id`, `topic`, `summary`, `source`, `score` (0–100),
//! `observed_at`, `provenance` (required) and `url` (optional, `https://`). Stored under the
//! signal's id, so importing it again replaces it.

use harmonia_contracts::domain::TrendSignal;
use harmonia_contracts::ids::WorkspaceId;
use harmonia_contracts::{Error, ids::DocId};
use harmonia_store::Store;

use super::table::{self, Row, Spec};
use super::{Format, ImportKind, Summary, store_all, text};

/// The signals file's columns.
pub(super) const SPEC: Spec =
    Spec { required: &["id", "topic", "summary", "source", "score", "observed_at", "provenance"], optional: &["url"] };

/// Every row of a signals file, validated; the first bad row is the error.
pub fn parse(text: &str, format: Format) -> Result<Vec<TrendSignal>, Error> {
    table::records(text, format, &SPEC, signal, |s| s.id.clone(), "signal id")
}

fn signal(row: &Row) -> Result<TrendSignal, Error> {
    let url = row.optional_text("url", 2048)?;
    if url.as_ref().is_some_and(|u| !u.starts_with("https://")) {
        return Err(row.invalid("url", "an https:// address is expected"));
    }
    let score: u8 = row.parsed("score", "a whole number from 0 to 100 is expected")?;
    if score > 100 {
        return Err(row.invalid("score", "a whole number from 0 to 100 is expected"));
    }
    Ok(TrendSignal {
        id: row.parsed("id", "a signal id (letters, digits, `.`, `_`, `:` or `-`, at most 128) is expected")?,
        topic: row.text("topic", 200)?,
        summary: row.text("summary", 1000)?,
        source: row.text("source", 200)?,
        url,
        score,
        observed_at: row.time("observed_at")?,
        provenance: row.named("provenance", "live or mock is expected")?,
    })
}

/// Validate the whole file, then store every row in one commit (or nothing).
pub async fn import(
    store: &dyn Store,
    workspace: &WorkspaceId,
    bytes: &[u8],
    format: Format,
) -> Result<Summary, Error> {
    let signals = parse(text(bytes)?, format)?;
    let records =
        signals.into_iter().map(|s| Ok((s.id.as_str().parse::<DocId>()?, s))).collect::<Result<Vec<_>, Error>>()?;
    store_all(store, workspace, ImportKind::Signals, &records).await
}
