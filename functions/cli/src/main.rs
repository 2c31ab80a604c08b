//! `harmonia`: every Harmonia function in one process on the embedded default (a SQLite
//! file for state and the durable local queue for events, under `--data-dir`).
//!
//! Commands so far: `demo` ingests the bundled sample source (validates it, stores the
//! source and its job in one transaction, publishes `source.ingested`), and `status` lists
//! jobs. The later stages join as they land.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod app;

/// Harmonia: grounded, reviewed, platform-native posts from video sources.
#[derive(Debug, Parser)]
#[command(name = "harmonia", version)]
struct Cli {
    /// Where the embedded state and queue live.
    #[arg(long, global = true, default_value = ".harmonia")]
    data_dir: PathBuf,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the bundled sample source through the pipeline.
    Demo,
    /// Show one job, or every job when no id is given.
    Status {
        /// Job id.
        job: Option<String>,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo => app::demo(&cli.data_dir, cli.json).await,
        Command::Status { job } => app::status(&cli.data_dir, job.as_deref(), cli.json).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if cli.json {
                let body = serde_json::json!({ "error": e.body() });
                eprintln!("{body}");
            } else {
                eprintln!("error [{}]: {}", e.code, e.message);
            }
            ExitCode::FAILURE
        }
    }
}
