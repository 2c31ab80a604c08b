//! `harmonia`: every Harmonia function in one process on the embedded default — a SQLite file
//! for state, the durable local queue in the same file for events, the model `--model` names
//! (the offline one by default) and the sandbox connector — under `--data-dir`.
//!
//! `workspace init|show|update` manages the workspace configuration (a TOML file, versioned);
//! `demo` runs the bundled sample end to end in its own data dir with the CLI user acting as the
//! operator for both approvals; `run` ingests a source file and processes it until it needs a
//! human; `status`, `show`, `approve`, `reject`, `request-changes` and `edit` are the
//! operator's commands; `operator
//! add|list|revoke` manages credentials; `serve` exposes the operator API; `schedule`,
//! `reschedule`, `publish-now` and `cancel` manage approved posts waiting for their window, and
//! `dispatch [--watch]` hands what is due to publishing. Every command first dispatches the
//! scheduled posts that are due (the data-file maintenance commands aside), and every command
//! but `show` resumes unfinished work, so a run interrupted at any point completes when any
//! command runs again. `HARMONIA_NOW` (an RFC 3339 time) starts the clock of the dispatcher,
//! policy, planning and window checks there, to rehearse a schedule.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use harmonia_contracts::{Code, Error};

/// The whole pipeline runs in this process, allocating and freeing many small documents a step:
/// mimalloc does that markedly faster than the system's allocator (the pipeline benchmark,
/// which uses it too, measures about a quarter more jobs a second). The Cloud Run functions
/// keep the system's, which holds less memory when idle.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod app;
#[cfg(test)]
mod ask_tests;
mod channels;
mod data;
mod decide;
mod engagement;
mod eval;
mod imports;
mod login;
mod operators;
mod schedule;
mod show;
mod watch;
mod workspace;

/// Harmonia: grounded, reviewed, platform-native posts from video sources.
#[derive(Debug, Parser)]
#[command(name = "harmonia", version)]
struct Cli {
    /// Where the embedded state and queue live.
    #[arg(long, global = true, default_value = ".harmonia", env = "HARMONIA_DATA_DIR")]
    data_dir: PathBuf,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    /// Act on a deployment through its operator API (`HARMONIA_API_URL`, with the credential in
    /// `HARMONIA_CREDENTIAL` or stored by `harmonia login`) instead of the embedded default, as
    /// that credential's operator, in its workspace. For workspace, status, show, approve, reject,
    /// request-changes, edit, retry, activity, schedule, reschedule, publish-now, cancel,
    /// import, calendar and operator.
    #[arg(long, global = true)]
    cloud: bool,
    /// The workspace to act in (`demo` runs in its own data dir, in the workspace `demo`). With
    /// `--cloud` it is the credential's; naming another is refused.
    #[arg(long, global = true, env = "HARMONIA_WORKSPACE", default_value = "default")]
    workspace: String,
    /// Who answers the specialists on the embedded default: `offline` (deterministic,
    /// `provenance: mock`), `gemini` (the Gemini API, `GEMINI_API_KEY`), `vertex` (Vertex AI,
    /// Application Default Credentials and `GOOGLE_CLOUD_PROJECT`) or `openai` (an
    /// OpenAI-compatible server: `OPENAI_BASE_URL`, `OPENAI_MODEL`, `OPENAI_API_KEY`). Unset,
    /// `HARMONIA_MODEL`, else `offline`.
    #[arg(long, global = true, value_parser = ["offline", "gemini", "vertex", "openai"])]
    model: Option<String>,
    #[command(subcommand)]
    command: Command,
}

/// What a decision is about.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Subject {
    /// Ryan's strategy.
    Strategy,
    /// The reviewed, policy-passed draft.
    Draft,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the bundled sample source through the whole pipeline (you approve as the operator),
    /// in its own data dir (`<data-dir>/demo`) with the demo brand of examples/workspace.toml.
    Demo,
    /// The workspace's configuration: `init FILE`, `show`, `update FILE`.
    Workspace {
        /// What to do.
        #[command(subcommand)]
        action: workspace::WorkspaceCommand,
    },
    /// Ingest a source (.json, .vtt or .srt) and process it until it needs a human.
    Run {
        /// The source file.
        source: PathBuf,
        /// Title for transcript files (default: the file name).
        #[arg(long)]
        title: Option<String>,
        /// Language of transcript files.
        #[arg(long, default_value = "en")]
        language: String,
    },
    /// Show one job, or every job when no id is given.
    Status {
        /// Job id.
        job: Option<String>,
        /// Follow the job as it moves, a line per step, decision and status, until it stops
        /// for good or waits for a decision or its posting time (with --json, one
        /// `{"event": …}` line each). Exits non-zero with the job's failure if it fails.
        #[arg(long, requires = "job")]
        watch: bool,
    },
    /// Everything about one job: source, moments, strategy, plan, drafts exactly as they would
    /// be posted, reviews, policy, the version awaiting a decision, decisions and publication.
    Show {
        /// Job id.
        job: String,
    },
    /// Approve the current strategy or draft of a job.
    Approve {
        /// Job id.
        job: String,
        /// What to approve.
        subject: Subject,
        /// The exact version (content hash, or 8 or more of its first characters) approved;
        /// default: the current one shown by `status`.
        #[arg(long)]
        version: Option<String>,
    },
    /// Ask Nova, the read-only liaison, a question about this workspace.
    Ask {
        /// The question.
        question: String,
    },
    /// Serve the operator API on localhost, with every stage running in this process.
    Serve {
        /// Port to listen on (loopback only).
        #[arg(long, default_value_t = 8080)]
        port: u16,
    },
    /// Check the data file: SQLite's integrity check, and every stored document of the
    /// workspace that cannot be read. Exits 1 when it finds a problem.
    Doctor,
    /// Copy the whole data file to FILE (a new file), consistently, even while other commands
    /// use it.
    Backup {
        /// Where to write the backup (must not exist yet).
        file: PathBuf,
    },
    /// Replace the data file's whole content with a backup made by `harmonia backup`. The
    /// current content is first kept beside the data file, so nothing is lost.
    Restore {
        /// The backup to restore.
        file: PathBuf,
    },
    /// Every specialist invocation of a job: agent, stage, model, duration, tokens, outcome, trace.
    Activity {
        /// Job id.
        job: String,
    },
    /// The engagement of a job's post, read from its platform after it was verified (at the
    /// workspace's snapshot offsets, by default 1 hour, 24 hours and 7 days).
    Metrics {
        /// Job id.
        job: String,
    },
    /// The workspace's remembered facts, derived from verified engagement, with their evidence
    /// and whether each is offered to Nimi and Ryan now.
    Memory,
    /// Print a completion script for your shell (e.g. `harmonia completions bash >
    /// ~/.local/share/bash-completion/completions/harmonia`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Sign in to a deployment's operator API at URL (default: HARMONIA_API_URL): the credential,
    /// read from standard input (or HARMONIA_CREDENTIAL), is checked with the API and kept with
    /// the address in ~/.config/harmonia/login.toml, readable by you only, for `--cloud`.
    Login {
        /// The operator API's address.
        url: Option<String>,
    },
    /// Forget the login `harmonia login` stored.
    Logout,
    /// Create a deployed workspace's first admin and print its credential once: written into the
    /// project's Firestore with your own Google credentials (GOOGLE_CLOUD_PROJECT, configured like
    /// the functions). Refused once the workspace has an active admin.
    FirstAdmin {
        /// The admin's name.
        name: String,
    },
    /// Create the registry's topics, dead-letter topics and push subscriptions (Pub/Sub, or its
    /// emulator with PUBSUB_EMULATOR_HOST) for GOOGLE_CLOUD_PROJECT.
    Provision {
        /// A function's base URL, `function=https://...` (repeatable).
        #[arg(long = "endpoint")]
        endpoints: Vec<String>,
        /// Base URL for functions not listed, with `{function}` substituted.
        #[arg(long)]
        endpoint_template: Option<String>,
    },
    /// Import measured post metrics or trend signals into the workspace (all rows or none).
    Import {
        #[command(subcommand)]
        what: imports::ImportCommand,
    },
    /// The workspace's content calendar: import scheduled posts and blackout dates.
    Calendar {
        #[command(subcommand)]
        what: imports::CalendarCommand,
    },
    /// The workspace's channels: `check` verifies each one's credentials and reachability
    /// without posting.
    Channels {
        /// What to do.
        #[command(subcommand)]
        command: channels::ChannelsCommand,
    },
    /// Manage the workspace's operator credentials (roles operator and admin).
    Operator {
        /// What to do.
        #[command(subcommand)]
        command: operators::OperatorCommand,
    },
    /// The approved posts waiting for their time: when each is due, on which channel, and
    /// those whose window passed before they were approved.
    Schedule,
    /// Move a scheduled post to TIME, which must be in the future and inside one of the
    /// workspace's posting windows (otherwise the nearest window is named).
    Reschedule {
        /// Job id.
        job: String,
        /// The new time, RFC 3339 with its offset (e.g. 2026-12-07T15:00:00Z).
        #[arg(long)]
        at: String,
    },
    /// How well the configured model (`--model`) does each role's work, what it costs and how
    /// long it takes: a folder of sources runs, each up to the draft gate with its strategy
    /// approved, in a throwaway data dir; nothing is published. Prints a table per role and
    /// per source (`--json`: `roles` and `jobs`).
    Eval {
        /// A folder of sources (.json, .vtt, .srt); default: the bundled examples.
        #[arg(long)]
        sources: Option<PathBuf>,
        /// The workspace configuration to run under (a TOML file, as `workspace init` takes);
        /// default: the demo brand's (examples/workspace.toml).
        #[arg(long)]
        config: Option<PathBuf>,
        /// A TOML price table, US dollars per million tokens by model
        /// (`[models."NAME"] input_per_million = …, output_per_million = …`); without it, tokens
        /// only.
        #[arg(long)]
        prices: Option<PathBuf>,
    },
    /// Run the step that failed a job again (a job failed by a model or contract error): the
    /// job goes back to where that step began, and the step runs as a new invocation.
    Retry {
        /// Job id.
        job: String,
    },
    /// Publish a scheduled post now instead of at its time.
    PublishNow {
        /// Job id.
        job: String,
    },
    /// Cancel a scheduled post: it is never published.
    Cancel {
        /// Job id.
        job: String,
    },
    /// Hand every scheduled post that is due to publishing (every command also does this
    /// first); with `--watch`, keep doing it every 30 seconds until stopped.
    Dispatch {
        /// Keep dispatching in the foreground.
        #[arg(long)]
        watch: bool,
    },
    /// Reject the current strategy or draft of a job.
    Reject {
        /// Job id.
        job: String,
        /// What to reject.
        subject: Subject,
        /// Why (1 to 500 characters).
        #[arg(long)]
        reason: String,
        /// The exact version (content hash, or 8 or more of its first characters) rejected;
        /// default: the current one shown by `status`.
        #[arg(long)]
        version: Option<String>,
    },
    /// Ask for a new version of the strategy or draft awaiting a decision: Ryan writes the next
    /// strategy, or Noni the next draft (reviewed by Dara and checked by policy again). At most
    /// 3 operator rounds per decision; asking for a fourth parks the job as needs_human.
    RequestChanges {
        /// Job id.
        job: String,
        /// What to change.
        subject: Subject,
        /// What you want changed (1 to 2,000 characters). It is context for the role, never an
        /// instruction it must follow: it cannot approve, publish or lift a rule.
        #[arg(long)]
        feedback: String,
        /// The exact version the feedback is about; default: the current one shown by `status`.
        #[arg(long)]
        version: Option<String>,
    },
    /// Write the next draft version yourself: the file's text, byte for byte, must pass every
    /// policy rule and then awaits your approval; exactly that text is published. A thread is
    /// edited one post at a time (`--post N`). Counts as an operator round.
    Edit {
        /// Job id.
        job: String,
        /// A UTF-8 text file with the post exactly as it is to be published (1 to 5,000
        /// characters; the platform's own limit is a policy rule).
        #[arg(long)]
        file: PathBuf,
        /// For a thread: the post the file replaces (1 for the first), as `show` numbers them;
        /// the thread's other posts stay as they are.
        #[arg(long, value_name = "N")]
        post: Option<u32>,
        /// The exact draft version edited; default: the current one shown by `status`.
        #[arg(long)]
        version: Option<String>,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let out = app::Output { json: cli.json };
    let result = async {
        if let Command::Completions { shell } = cli.command {
            let mut command = <Cli as clap::CommandFactory>::command();
            // Written whole, so a reader that stops early (`| head`) is not a failure.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut command, "harmonia", &mut script);
            let _ = std::io::Write::write_all(&mut std::io::stdout(), &script);
            return Ok(());
        }
        if let Command::Provision { endpoints, endpoint_template } = &cli.command {
            return app::provision(&out, endpoints, endpoint_template.as_deref()).await;
        }
        match &cli.command {
            Command::Login { url } => return login::login(&out, url.as_deref()).await,
            Command::Logout => return login::logout(&out),
            Command::FirstAdmin { name } => return operators::first_admin(&out, &cli.workspace.parse()?, name).await,
            _ => {}
        }
        let mut ws: harmonia_contracts::ids::WorkspaceId = cli.workspace.parse()?;
        // The demo keeps its own data dir, so its sample data never mixes with real work.
        // An evaluation runs in a data dir of its own, removed when it ends.
        let throwaway = match cli.command {
            Command::Eval { .. } if cli.cloud => {
                return Err(Error::new(Code::InvalidRequest, "eval runs on this machine only, not with --cloud."));
            }
            Command::Eval { .. } => Some(tempfile::tempdir().map_err(|_| {
                Error::new(Code::Internal, "a temporary data dir for the evaluation could not be created")
            })?),
            _ => None,
        };
        let data_dir = match (&cli.command, &throwaway) {
            (_, Some(dir)) => dir.path().to_owned(),
            (Command::Demo, None) => cli.data_dir.join("demo"),
            _ => cli.data_dir.clone(),
        };
        let backend = if cli.cloud {
            let client = harmonia_client::Client::from_env()?;
            // Who the credential is, before anything else is asked: it names the workspace.
            let me = client.me().await?;
            if ws.as_str() != "default" && ws != me.workspace {
                return Err(Error::new(
                    Code::InvalidRequest,
                    format!("The credential is for workspace {}, not {ws}.", me.workspace),
                ));
            }
            ws = me.workspace;
            app::Backend::Cloud(client)
        } else {
            let backend = harmonia_host::ModelBackend::from_env(cli.model.as_deref()).map_err(Error::from)?;
            let project = std::env::var("GOOGLE_CLOUD_PROJECT").ok().filter(|p| !p.trim().is_empty());
            let rpm = harmonia_host::config::model_rpm_from_env().map_err(Error::from)?;
            let model = harmonia_host::model(&backend, project.as_deref(), rpm)?;
            let repairs = harmonia_host::config::model_repairs_from_env().map_err(Error::from)?;
            let wrap = || -> Result<harmonia_local::Wrap, Error> {
                Ok(harmonia_local::Wrap {
                    answering: Some(model.clone()),
                    clock: rehearsal_clock()?,
                    repairs: Some(repairs),
                    ..Default::default()
                })
            };
            let local = match harmonia_local::Local::open_with(&data_dir, harmonia_pipeline::registry::Timing::LOCAL, wrap()?)
                .await
            {
                Ok(local) => local,
                // A data file no store can open is still doctor's to report and restore's to replace.
                Err(refused) if refused.code == Code::StoreCorrupt => {
                    return match cli.command {
                        Command::Doctor => data::doctor_unopenable(&out, &data_dir, refused),
                        Command::Restore { file } => data::restore_unopenable(&out, &data_dir, &file).await,
                        _ => Err(refused),
                    };
                }
                // A data dir that cannot be written (a read-only mount, a backup, a full disk)
                // still answers the commands that only read it.
                Err(fault) if matches!(fault.code, Code::StorageReadOnly | Code::StorageFull) && cli.command.only_reads() => {
                    let note = format!("note [{}]: this command only reads here. {}", fault.code, fault.message);
                    let local = harmonia_local::Local::open_reading(&data_dir, wrap()?, fault).await?;
                    out.note(&note);
                    local
                }
                Err(e) => return Err(e),
            };
            // Every command first hands what is due to publishing (the maintenance commands
            // on the data file aside, and `dispatch`, which does nothing else), where it can.
            let maintenance =
                matches!(cli.command, Command::Doctor | Command::Backup { .. } | Command::Restore { .. } | Command::Dispatch { .. });
            if !maintenance && local.reading_only.is_none() {
                schedule::tick(&local, &out, &ws).await?;
            }
            app::Backend::Local(local)
        };
        let outcome = match cli.command {
            // The server stops cleanly on the signal itself.
            command @ Command::Serve { .. } => dispatch(&backend, &out, &ws, &data_dir, command).await,
            command => tokio::select! {
                outcome = dispatch(&backend, &out, &ws, &data_dir, command) => outcome,
                signal = interrupted() => Err(Error::new(
                    Code::Interrupted,
                    format!("{signal}: stopped; the work in flight was handed back and the next command carries on with it"),
                )),
            },
        };
        // Whatever this process still holds goes back now, so the next command never waits for it.
        if let app::Backend::Local(local) = &backend
            && let Err(e) = local.shutdown().await
        {
            tracing::warn!(error = %e, "work in flight could not be handed back; it lapses with its lease");
        }
        outcome
    }
    .await;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            out.error(&e);
            // 128 + SIGINT, as shells expect of an interrupted command.
            if e.code == Code::Interrupted { ExitCode::from(130) } else { ExitCode::FAILURE }
        }
    }
}

/// Run one command (everything but `completions` and `provision`) on `backend`.
async fn dispatch(
    backend: &app::Backend,
    out: &app::Output,
    ws: &harmonia_contracts::ids::WorkspaceId,
    data_dir: &std::path::Path,
    command: Command,
) -> Result<(), Error> {
    match command {
        Command::Demo => app::demo(backend.local()?, out, data_dir).await,
        Command::Workspace { action } => workspace::run(backend, out, ws, action).await,
        Command::Run { source, title, language } => {
            app::run(backend.local()?, out, ws, &source, title, &language).await
        }
        Command::Status { job: Some(job), watch: true } => watch::watch(backend, out, ws, &job).await,
        Command::Status { job, .. } => app::status(backend, out, ws, job.as_deref()).await,
        Command::Show { job } => show::show(backend, out, ws, &job).await,
        Command::Approve { job, subject, version } => {
            decide::decide(backend, out, ws, &job, subject.into(), None, version).await
        }
        Command::Ask { question } => app::ask(backend.local()?, out, ws, &question).await,
        Command::Serve { port } => app::serve(backend.local()?, out, ws, port).await,
        Command::Activity { job } => app::activity(backend, out, ws, &job).await,
        Command::Metrics { job } => engagement::metrics(backend, out, ws, &job).await,
        Command::Memory => engagement::memory(backend, out, ws).await,
        Command::Doctor => data::doctor(backend.local()?, out, ws).await,
        Command::Backup { file } => data::backup(backend.local()?, out, &file).await,
        Command::Restore { file } => data::restore(backend.local()?, out, &file).await,
        Command::Provision { .. }
        | Command::Completions { .. }
        | Command::Login { .. }
        | Command::Logout
        | Command::FirstAdmin { .. } => Ok(()),
        Command::Import { what } => imports::import(backend, out, ws, imports::Import::File(what)).await,
        Command::Calendar { what } => imports::import(backend, out, ws, imports::Import::Calendar(what)).await,
        Command::Operator { command } => operators::run(backend, out, ws, command).await,
        Command::Channels { command } => channels::run(backend, out, ws, command).await,
        Command::Reject { job, subject, reason, version } => {
            decide::decide(backend, out, ws, &job, subject.into(), Some(reason), version).await
        }
        Command::RequestChanges { job, subject, feedback, version } => {
            decide::request_changes(backend, out, ws, &job, subject.into(), feedback, version).await
        }
        Command::Edit { job, file, version, post } => decide::edit(backend, out, ws, &job, &file, version, post).await,
        Command::Retry { job } => decide::retry(backend, out, ws, &job).await,
        Command::Eval { sources, config, prices } => {
            eval::eval(backend.local()?, out, sources.as_deref(), config.as_deref(), prices.as_deref()).await
        }
        Command::Schedule => schedule::list(backend, out, ws).await,
        Command::Reschedule { job, at } => schedule::change(backend, out, ws, &job, schedule::parse_at(&at)?).await,
        Command::PublishNow { job } => {
            schedule::change(backend, out, ws, &job, harmonia_contracts::domain::ScheduleAction::PublishNow).await
        }
        Command::Cancel { job } => {
            schedule::change(backend, out, ws, &job, harmonia_contracts::domain::ScheduleAction::Cancel).await
        }
        Command::Dispatch { watch } => schedule::dispatch(backend.local()?, out, ws, watch).await,
    }
}

/// The clock of the dispatcher, policy, planning and window checks: the system's, or — with
/// `HARMONIA_NOW` set to an RFC 3339 time — one that starts there and runs at the system's
/// pace, to rehearse a schedule.
fn rehearsal_clock() -> Result<Option<std::sync::Arc<dyn harmonia_pipeline::clock::Clock>>, Error> {
    let Some(value) = std::env::var_os("HARMONIA_NOW") else { return Ok(None) };
    let at = value.to_str().and_then(|v| harmonia_contracts::time::parse(v.trim()).ok()).ok_or_else(|| {
        Error::new(
            Code::InvalidConfig,
            "HARMONIA_NOW must be an RFC 3339 time with its offset, for example 2026-12-07T15:00:00Z",
        )
    })?;
    Ok(Some(std::sync::Arc::new(harmonia_pipeline::clock::OffsetClock::starting_at(at))))
}

/// The first SIGINT or SIGTERM, named.
pub(crate) async fn interrupted() -> &'static str {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        // Without a SIGTERM handler, Ctrl-C still hands the work back.
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return "SIGINT";
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "SIGINT",
        _ = term.recv() => "SIGTERM",
    }
}

impl Command {
    /// Whether the command only reads the data dir, and so still answers from one that cannot
    /// be written (`serve` then refuses every change with the disk's fault).
    fn only_reads(&self) -> bool {
        matches!(
            self,
            Command::Status { .. }
                | Command::Show { .. }
                | Command::Activity { .. }
                | Command::Metrics { .. }
                | Command::Memory
                | Command::Schedule
                | Command::Doctor
                | Command::Ask { .. }
                | Command::Serve { .. }
        )
    }
}

impl From<Subject> for harmonia_contracts::domain::ApprovalSubject {
    fn from(s: Subject) -> Self {
        match s {
            Subject::Strategy => Self::Strategy,
            Subject::Draft => Self::Draft,
        }
    }
}
