//! Operator imports: measured post metrics, trend signals and the content calendar, from CSV
//! (and, for signals, JSON) files, into one workspace.
//!
//! Every import is all-or-nothing: the whole file is read and every row validated before the
//! first write, and the rows are then stored in one atomic commit, so a file with one bad row
//! stores nothing. A bad row is one typed error naming its line (CSV) or item (JSON) and the
//! column; the value itself is never echoed. Files are bounded ([`MAX_IMPORT_BYTES`],
//! [`MAX_IMPORT_ROWS`]: one commit's worth of writes). Rows are stored under stable ids (the
//! post, the signal's id, or the calendar row's id or content digest), so importing the same
//! rows again replaces them instead of adding copies.
//!
//! CSV files are read with the `csv` crate: columns by header name in any order (unknown
//! columns refused, missing required ones named), RFC 4180 quoting (fields with commas,
//! quotes and line breaks), an optional UTF-8 byte-order mark, LF or CRLF line ends.
//!
//! Layout: `table` (CSV and JSON into validated rows), [`metrics`], [`signals`], [`calendar`]
//! (one file format each). The formats are documented in `docs/imports.md`.

pub mod calendar;
pub mod metrics;
pub mod signals;
mod table;

use harmonia_contracts::ids::{DocId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use harmonia_store::{MAX_WRITES, Store, Write, WriteOp, encode};
use serde::{Deserialize, Serialize};

use crate::records::{CALENDAR, POST_METRICS, TREND_SIGNALS};

/// The largest file an import accepts, in bytes (1 MiB).
pub const MAX_IMPORT_BYTES: usize = 1024 * 1024;
/// The most rows one import stores: what one atomic commit may write.
pub const MAX_IMPORT_ROWS: usize = MAX_WRITES;

/// The format of an imported file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Comma-separated values with a header row.
    Csv,
    /// A JSON array of objects.
    Json,
}

impl Format {
    /// The format of a `Content-Type` (`text/csv`, `application/json`, parameters ignored).
    pub fn from_content_type(content_type: &str) -> Result<Self, Error> {
        let essence = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
        match essence.as_str() {
            "text/csv" => Ok(Format::Csv),
            "application/json" => Ok(Format::Json),
            _ => Err(Error::new(Code::ImportMalformed, "An import body is text/csv or application/json.")),
        }
    }

    /// The format of a file name (`.csv` or `.json`).
    pub fn from_file_name(name: &str) -> Result<Self, Error> {
        let lower = name.to_ascii_lowercase();
        if lower.ends_with(".csv") {
            Ok(Format::Csv)
        } else if lower.ends_with(".json") {
            Ok(Format::Json)
        } else {
            Err(Error::new(Code::ImportMalformed, "An import file ends in .csv or .json."))
        }
    }
}

/// What one import file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImportKind {
    /// Measured post metrics.
    Metrics,
    /// Trend signals.
    Signals,
    /// Scheduled posts and blackout dates.
    Calendar,
}

/// The outcome of one import: every row of the file was stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// What was imported.
    pub kind: ImportKind,
    /// The workspace it went into.
    pub workspace: WorkspaceId,
    /// How many rows were stored (new or replacing a row with the same id).
    pub stored: usize,
}

impl Summary {
    /// One sentence for an operator.
    pub fn sentence(&self) -> String {
        let what = match (self.kind, self.stored) {
            (ImportKind::Metrics, 1) => "post's metrics",
            (ImportKind::Metrics, _) => "posts' metrics",
            (ImportKind::Signals, 1) => "trend signal",
            (ImportKind::Signals, _) => "trend signals",
            (ImportKind::Calendar, 1) => "calendar entry",
            (ImportKind::Calendar, _) => "calendar entries",
        };
        format!("Stored {} {what} in workspace {}.", self.stored, self.workspace)
    }
}

/// The file's text: within the byte limit and UTF-8.
fn text(bytes: &[u8]) -> Result<&str, Error> {
    if bytes.len() > MAX_IMPORT_BYTES {
        return Err(Error::new(Code::ImportTooLarge, "An import file may be at most 1 MiB (1048576 bytes)."));
    }
    std::str::from_utf8(bytes)
        .map_err(|e| Error::new(Code::ImportMalformed, "The import file is not UTF-8 text.").with_cause(e))
}

/// Store every `(id, record)` of a `kind` file in its collection, in one atomic commit: all of
/// them or, on any failure, none.
async fn store_all<T: Serialize>(
    store: &dyn Store,
    workspace: &WorkspaceId,
    kind: ImportKind,
    records: &[(DocId, T)],
) -> Result<Summary, Error> {
    let collection = match kind {
        ImportKind::Metrics => POST_METRICS,
        ImportKind::Signals => TREND_SIGNALS,
        ImportKind::Calendar => CALENDAR,
    };
    let writes = records
        .iter()
        .map(|(id, record)| Ok(Write { collection, id: id.clone(), op: WriteOp::Upsert(encode(record)?) }))
        .collect::<Result<Vec<_>, harmonia_store::Error>>()?;
    store.commit(workspace, writes).await?;
    Ok(Summary { kind, workspace: workspace.clone(), stored: records.len() })
}

#[cfg(test)]
mod tests;
