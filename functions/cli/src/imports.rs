//! `harmonia import metrics|signals FILE` and `harmonia calendar import FILE`: a file into the
//! workspace, stored all-or-nothing (`harmonia_pipeline::imports`): on the embedded default the
//! one named by `--workspace`, with `--cloud` the credential's, through the operator API.

use std::path::{Path, PathBuf};

use clap::Subcommand;
use harmonia_contracts::ids::WorkspaceId;
use harmonia_contracts::{Code, Error};
use harmonia_pipeline::imports::{self, Format, MAX_IMPORT_BYTES, Summary};
use serde_json::json;

use harmonia_client::api::ImportRoute;

use crate::app::{Backend, Output};

/// What `harmonia import` imports.
#[derive(Debug, Subcommand)]
pub(crate) enum ImportCommand {
    /// Measured post metrics (CSV; columns in docs/imports.md).
    Metrics {
        /// The CSV file.
        file: PathBuf,
    },
    /// Trend signals (CSV or JSON, by the file's extension; fields in docs/imports.md).
    Signals {
        /// The .csv or .json file.
        file: PathBuf,
    },
}

/// What `harmonia calendar` does.
#[derive(Debug, Subcommand)]
pub(crate) enum CalendarCommand {
    /// Scheduled posts and blackout dates (CSV; columns in docs/imports.md).
    Import {
        /// The CSV file.
        file: PathBuf,
    },
}

/// A file to import, as `harmonia import` or `harmonia calendar` names it.
#[derive(Debug)]
pub(crate) enum Import {
    /// `harmonia import metrics|signals FILE`.
    File(ImportCommand),
    /// `harmonia calendar import FILE`.
    Calendar(CalendarCommand),
}

/// `harmonia import …` and `harmonia calendar import …`.
pub(crate) async fn import(backend: &Backend, out: &Output, ws: &WorkspaceId, what: Import) -> Result<(), Error> {
    let store = match backend {
        Backend::Local(l) => target(&*l.env.store, ws).await?,
        Backend::Cloud(client) => {
            let (route, format, file) = match &what {
                Import::File(ImportCommand::Metrics { file }) => (ImportRoute::Metrics, Format::Csv, file),
                Import::File(ImportCommand::Signals { file }) => {
                    (ImportRoute::Signals, Format::from_file_name(&file.to_string_lossy())?, file)
                }
                Import::Calendar(CalendarCommand::Import { file }) => (ImportRoute::Calendar, Format::Csv, file),
            };
            let content_type = match format {
                Format::Csv => "text/csv",
                Format::Json => "application/json",
            };
            let imported = client.import(route, content_type, &read(file)?).await?;
            out.say(&imported.message);
            out.value(&json!(imported));
            return Ok(());
        }
    };
    let summary = match what {
        Import::File(ImportCommand::Metrics { file }) => imports::metrics::import(store, ws, &read(&file)?).await?,
        Import::File(ImportCommand::Signals { file }) => {
            let format = Format::from_file_name(&file.to_string_lossy())?;
            imports::signals::import(store, ws, &read(&file)?, format).await?
        }
        Import::Calendar(CalendarCommand::Import { file }) => {
            imports::calendar::import(store, ws, &read(&file)?).await?
        }
    };
    report(out, &summary);
    Ok(())
}

/// The store, once the workspace is known to be configured: importing into a workspace nobody
/// set up would store rows no job can see.
async fn target<'a>(
    store: &'a dyn harmonia_store::Store,
    ws: &WorkspaceId,
) -> Result<&'a dyn harmonia_store::Store, Error> {
    harmonia_pipeline::workspace::current(store, ws).await?;
    Ok(store)
}

/// The file's bytes; a file over the import limit is refused without reading it.
fn read(file: &Path) -> Result<Vec<u8>, Error> {
    let unreadable = || Error::new(Code::InvalidRequest, format!("Cannot read {}.", file.display()));
    let size = std::fs::metadata(file).map_err(|_| unreadable())?.len();
    if usize::try_from(size).map_or(true, |s| s > MAX_IMPORT_BYTES) {
        return Err(Error::new(Code::ImportTooLarge, "An import file may be at most 1 MiB (1048576 bytes)."));
    }
    std::fs::read(file).map_err(|_| unreadable())
}

fn report(out: &Output, summary: &Summary) {
    out.say(&summary.sentence());
    out.value(&json!({"import": summary.kind, "workspace": summary.workspace, "stored": summary.stored,
                      "message": summary.sentence()}));
}
