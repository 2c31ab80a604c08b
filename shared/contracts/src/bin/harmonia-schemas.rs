//! Regenerates `schemas/*.schema.json` and `docs/error-codes.md` from the types, or with
//! `--check` exits non-zero when the checked-in files have drifted.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let (schemas, docs) = (root.join("schemas"), root.join("docs"));
    if std::env::args().any(|a| a == "--check") {
        let drifted = harmonia_contracts::schema::drift(&schemas, &docs);
        if drifted.is_empty() {
            eprintln!("schemas are up to date");
            return ExitCode::SUCCESS;
        }
        eprintln!("drifted: {}", drifted.join(", "));
        return ExitCode::FAILURE;
    }
    match harmonia_contracts::schema::export(&schemas, &docs) {
        Ok(n) => {
            eprintln!("wrote {n} schemas and docs/error-codes.md");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("export failed: {e}");
            ExitCode::FAILURE
        }
    }
}
