//! The commands.

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use harmonia_contracts::domain::{ApprovalSubject, Draft, Job, JobStatus, Publication, Source, SourceInput};
use harmonia_contracts::event::{Pass, Round, Stage};
use harmonia_contracts::ids::{JobId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use harmonia_pipeline::detail::version_prefix;
use harmonia_pipeline::formats::{self, Format};
use harmonia_pipeline::gates;
use harmonia_pipeline::records::{ANALYSES, AnalysisRecord, DRAFTS, PUBLICATIONS, doc_id};
use harmonia_pipeline::steps::{current_draft_id, ingest};
use harmonia_store::Document;
use serde_json::{Value, json};

use std::sync::Arc;

use harmonia_local::{Local, Progress};
use harmonia_operator::{Credentials, Identity, OperatorState, Role};

/// The bundled sample source.
const SAMPLE: &str = include_str!("../../../examples/launch-talk.json");

/// How long `status` lets the jobs it shows move on before it shows them as they are.
const STATUS_WAIT: Duration = Duration::from_secs(10);

/// How long one job may take end to end before the CLI gives up waiting.
const JOB_TIMEOUT: Duration = Duration::from_secs(120);

/// Where the commands run: the embedded default in this process, or a deployment through its
/// operator API (`--cloud`), as the operator whose credential the client carries.
pub(crate) enum Backend {
    /// Every stage in this process.
    Local(Local),
    /// A deployment: its functions do the work; the CLI only asks the operator API.
    Cloud(harmonia_client::Client),
}

impl Backend {
    /// Locally, carry on with the workspace's unfinished jobs first (a deployed project's
    /// functions do that themselves).
    pub(crate) async fn resume(&self, ws: &WorkspaceId) -> Result<(), Error> {
        match self {
            // A data dir opened for reading only stays as it is.
            Backend::Local(l) if l.reading_only.is_some() => Ok(()),
            Backend::Local(l) => gates::resume(&l.env, ws).await.map(|_| ()),
            Backend::Cloud(_) => Ok(()),
        }
    }

    /// The embedded default, for a command that runs on this machine only.
    pub(crate) fn local(&self) -> Result<&Local, Error> {
        match self {
            Backend::Local(l) => Ok(l),
            Backend::Cloud(_) => Err(Error::new(
                Code::InvalidRequest,
                "This command runs on the embedded default only, not with --cloud.",
            )),
        }
    }
}

/// Text or JSON output.
pub(crate) struct Output {
    pub(crate) json: bool,
}

impl Output {
    /// Print `line` in text mode.
    pub(crate) fn say(&self, line: &str) {
        if !self.json {
            let _ = writeln!(std::io::stdout(), "{line}");
        }
    }

    /// Print `value` in JSON mode.
    pub(crate) fn value(&self, value: &Value) {
        if self.json {
            let _ = writeln!(std::io::stdout(), "{value}");
        }
    }

    /// Warn the operator (on standard error; in JSON mode as `{"warning": TEXT}`): the command
    /// did what it was asked, and something after it needs their attention.
    pub(crate) fn warn(&self, line: &str) {
        self.aside("warning", &format!("warning: {line}"), line);
    }

    /// Tell the operator something about how the command ran, apart from its output (on
    /// standard error; in JSON mode as `{"note": TEXT}`).
    pub(crate) fn note(&self, line: &str) {
        self.aside("note", line, line);
    }

    /// Write apart from the output, on standard error: `text`, or in JSON mode `{key: line}`.
    fn aside(&self, key: &str, text: &str, line: &str) {
        let _ = match self.json {
            true => writeln!(std::io::stderr(), "{}", json!({ key: line })),
            false => writeln!(std::io::stderr(), "{text}"),
        };
    }

    pub(crate) fn error(&self, e: &Error) {
        if self.json {
            let _ = writeln!(std::io::stderr(), "{}", json!({ "error": e.body() }));
        } else {
            let _ = writeln!(std::io::stderr(), "error [{}]: {}", e.code, e.message);
        }
    }
}

/// A role's name as the operator reads it ("Nimi").
fn role_name(role: harmonia_contracts::Role) -> String {
    let name = role.as_str();
    name.get(..1).map(str::to_uppercase).unwrap_or_default() + name.get(1..).unwrap_or_default()
}

fn status_name(s: JobStatus) -> &'static str {
    s.as_str()
}

fn describe_stage(stage: Stage, round: Round, pass: Pass) -> String {
    let what = match stage {
        Stage::Ingest => "source validated and stored; job created",
        Stage::Analyze => "Harmonia -> Nimi: evidence moments and angles accepted",
        Stage::Strategize => "Harmonia -> Ryan: strategy stored",
        Stage::Operator => "operator decision recorded",
        Stage::Plan => "Harmonia -> Temi: plan stored over the snapshot; one item selected",
        Stage::Draft if pass == Pass::REVISION => "Noni: the single revision stored",
        Stage::Draft => "Noni: first draft stored",
        Stage::Review => "Dara: seven-dimension review stored",
        Stage::Policy => "deterministic policy checked",
        Stage::Publish => "claimed, connector called once (once per post of a thread), receipt recorded",
        Stage::Verify => "read back and verification recorded",
    };
    let round = if round.is_original() { String::new() } else { format!(" (operator round {})", round.get()) };
    format!("{:<11} {what}{round}", stage.as_str())
}

fn describe(s: JobStatus) -> &'static str {
    match s {
        JobStatus::Ingested => "ingest      source validated and stored",
        JobStatus::Analyzed => "analyze     Nimi's evidence moments and angles accepted",
        JobStatus::AwaitingStrategyApproval => "strategize  Ryan's strategy stored; waiting for the operator",
        JobStatus::StrategyChangesRequested => "operator    changes requested; Ryan's next version is pending",
        JobStatus::StrategyApproved => "operator    strategy approved",
        JobStatus::Planned => "plan        Temi's plan stored; one item selected",
        JobStatus::Drafted => "draft       Noni's draft stored",
        JobStatus::RevisionRequested => "review      Dara asked for the single revision",
        JobStatus::Reviewed => "review      Dara passed the draft",
        JobStatus::AwaitingDraftApproval => "policy      every rule passed; waiting for the operator",
        JobStatus::DraftChangesRequested => "operator    changes requested; a new writing cycle is pending",
        JobStatus::Scheduled => {
            "operator    draft approved; scheduled for its posting window (see `harmonia schedule`)"
        }
        JobStatus::DraftApproved => "operator    draft approved; its time has come and publishing is pending",
        JobStatus::Cancelled => "operator    the scheduled post was cancelled; it is never published",
        JobStatus::Publishing => "publish     claimed; calling the connector once",
        JobStatus::PublishUnknown => "publish     outcome unknown; verification will read back",
        JobStatus::Published => "publish     receipt recorded",
        JobStatus::Verified => "verify      read back and verified",
        JobStatus::StrategyRejected => "operator    strategy rejected",
        JobStatus::DraftRejected => "operator    draft rejected",
        JobStatus::PolicyBlocked => "policy      blocked by a rule",
        JobStatus::NeedsHuman => {
            "            parked for a person: the review still failed after the revision, a decision used all its operator rounds, the draft carries a line that reads as an order to the system, or the draft was approved after its planned window (see `harmonia show`)"
        }
        JobStatus::Failed => "failed",
    }
}

/// Follow a job, printing each stage completed after `since` (every one without it); with
/// `approve`, approve what it waits for. Ends with where the job stands unless it is verified.
pub(crate) async fn follow(
    env: &Local,
    out: &Output,
    ws: &WorkspaceId,
    job: &JobId,
    approve: bool,
    since: Option<DateTime<Utc>>,
) -> Result<Job, Error> {
    let current = env
        .drive(ws, job, approve, JOB_TIMEOUT, |p| match p {
            Progress::Stage { stage, round, pass, completed_at } => {
                if since.is_none_or(|t| completed_at >= t) {
                    out.say(&format!("  {}", describe_stage(stage, round, pass)));
                }
            }
            Progress::Failed { stage, round, failure } => {
                let by = failure.role.map(|r| format!(" ({})", role_name(r))).unwrap_or_default();
                let round =
                    if round.is_original() { String::new() } else { format!(" in operator round {}", round.get()) };
                out.say(&format!(
                    "  {:<11} failed{by}{round}: {} [{}]",
                    stage.as_str(),
                    failure.safe_message,
                    failure.code.as_str()
                ));
            }
            Progress::Approved(subject, version) => out.say(&format!(
                "  {:<11} approved the {} version {}",
                "operator",
                if subject == ApprovalSubject::Strategy { "strategy" } else { "draft" },
                version_prefix(&version)
            )),
            Progress::PublishedNow(s) => out.say(&format!(
                "  {:<11} published now rather than at {} (the plan item's window opens then)",
                "operator",
                harmonia_pipeline::planning::windows::instant(s.window.start)
            )),
        })
        .await?;
    if let Some(failure) = current.failure.as_ref().filter(|_| current.status == JobStatus::Failed) {
        let by = failure.role.map(|r| format!(" ({})", role_name(r))).unwrap_or_default();
        let live = harmonia_pipeline::progress::live_posts(&env.env, ws, &current).await?;
        let said = harmonia_pipeline::progress::failure_sentence(failure, &by, live);
        let said = said.strip_suffix('.').unwrap_or(&said);
        return Err(Error::new(failure.code, format!("{said}; see `harmonia show {job}`.")));
    }
    let schedule = harmonia_pipeline::gates::schedule::of_job(&env.env, ws, job).await?;
    match (&schedule, current.status) {
        (Some(s), JobStatus::Scheduled) => {
            out.say(&format!(
                "Scheduled: the post goes out at {} on {} {} (`harmonia schedule`; change it with `harmonia reschedule {job} --at TIME`, `harmonia publish-now {job}` or `harmonia cancel {job}`).",
                harmonia_pipeline::planning::windows::instant(s.due_at),
                s.platform.as_str(),
                s.handle
            ));
            return Ok(current);
        }
        (Some(s), JobStatus::NeedsHuman) if s.state == harmonia_contracts::domain::ScheduleState::WindowPassed => {
            out.say(&format!(
                "Needs you: the planned window has passed (it closed at {}), so the post was not published. Reschedule it with `harmonia reschedule {job} --at TIME`, publish it with `harmonia publish-now {job}`, or cancel it with `harmonia cancel {job}`.",
                harmonia_pipeline::planning::windows::instant(s.window.end)
            ));
            return Ok(current);
        }
        _ => {}
    }
    match gates::awaiting(&env.env, ws, &current).await? {
        Some((subject, version)) => {
            let choices = if subject == ApprovalSubject::Draft {
                "approve, reject, request changes or edit"
            } else {
                "approve, reject or request changes"
            };
            out.say(&format!(
                "Waiting for the operator to {choices}: the {} version {} (see it with `harmonia show {job}`).",
                subject.as_str(),
                version_prefix(&version)
            ));
        }
        None if current.status != JobStatus::Verified => out.say(&format!("  {}", describe(current.status))),
        None => {}
    }
    Ok(current)
}

/// A document that may be absent, decoded; a stored one that does not decode is
/// `store_corrupt`, never taken for an absent one.
fn decode_optional<T: serde::de::DeserializeOwned>(doc: Option<Document>) -> Result<Option<T>, Error> {
    doc.map(|d| d.decode()).transpose().map_err(Error::from)
}

/// What a finished job produced, with every claim resolved to its transcript span.
async fn report(env: &Local, job: &Job) -> Result<Value, Error> {
    let ws = job.workspace.clone();
    let store = &*env.env.store;
    let source: Source = harmonia_pipeline::records::source(store, &*env.env.blobs, &ws, &job.source)
        .await?
        .ok_or_else(|| Error::from_code(Code::NotFound))?;
    let analysis: Option<AnalysisRecord> =
        decode_optional(store.get(&ws, ANALYSES, &doc_id(&job.id)).await.map_err(Error::from)?)?;
    let draft: Option<Draft> =
        decode_optional(store.get(&ws, DRAFTS, &doc_id(current_draft_id(job))).await.map_err(Error::from)?)?;
    let mut publications = Vec::new();
    let mut claims = Vec::new();
    if let Some(draft) = &draft {
        if let Some(doc) = store.get(&ws, PUBLICATIONS, &doc_id(&draft.id)).await.map_err(Error::from)? {
            let p: Publication = doc.decode().map_err(Error::from)?;
            publications.push(p);
        }
        for claim in &draft.claims {
            let evidence: Vec<Value> = claim
                .evidence
                .iter()
                .map(|id| {
                    let moment = analysis.as_ref().and_then(|a| a.analysis.moments.iter().find(|m| &m.evidence_id == id));
                    match moment {
                        Some(m) => json!({"evidence_id": id, "quote": m.quote, "start_ms": m.start_ms, "end_ms": m.end_ms,
                                          "within_transcript_span": source.quote_within(&m.quote, m.start_ms, m.end_ms)}),
                        None => json!({"evidence_id": id, "within_transcript_span": false}),
                    }
                })
                .collect();
            claims.push(json!({"text": claim.text, "evidence": evidence}));
        }
    }
    Ok(json!({"job": job, "draft": draft, "publications": publications, "claims": claims}))
}

fn print_report(out: &Output, report: &Value) {
    if let Some(body) = report["draft"]["body"].as_str() {
        out.say("");
        out.say(&format!(
            "Post for {} ({} provenance):",
            report["draft"]["platform"].as_str().unwrap_or("?"),
            report["draft"]["provenance"].as_str().unwrap_or("?")
        ));
        for line in body.lines() {
            out.say(&format!("  | {line}"));
        }
    }
    if let Some(p) = report["publications"].as_array().and_then(|p| p.first()) {
        let (receipt, verification) = (&p["receipt"]["outcome"], &p["verification"]["outcome"]);
        let post = verification["post"].as_str().or(receipt["post"].as_str()).unwrap_or("-");
        out.say(&format!(
            "Receipt: {} via {}; verification: {}; platform post {post}",
            receipt["outcome"].as_str().unwrap_or("none"),
            p["claim"]["connector"].as_str().unwrap_or("?"),
            verification["outcome"].as_str().unwrap_or("none")
        ));
    }
    if let Some(claims) = report["claims"].as_array() {
        out.say("Cited evidence:");
        for c in claims {
            for e in c["evidence"].as_array().into_iter().flatten() {
                out.say(&format!(
                    "  [{}] {:>6}–{:<6} ms  \"{}\"",
                    e["evidence_id"].as_str().unwrap_or("?"),
                    e["start_ms"],
                    e["end_ms"],
                    e["quote"].as_str().unwrap_or("?")
                ));
            }
        }
    }
}

/// `harmonia demo`, on the embedded system opened in its own data dir (`<data-dir>/demo`): the
/// demo workspace configured from `examples/workspace.toml`, the bundled sample metrics and
/// trend signals loaded there (and only there), then the sample source end to end.
pub(crate) async fn demo(env: &Local, out: &Output, data_dir: &Path) -> Result<(), Error> {
    let ws = env.workspace().await?;
    load_samples(env, &ws).await?;
    let input: SourceInput = serde_json::from_str(SAMPLE).map_err(|_| Error::from_code(Code::SourceMalformed))?;
    let model = match env.model.provenance() {
        harmonia_contracts::tool::Provenance::Mock => "offline model".to_owned(),
        _ => format!("model {} from {}", env.model.name(), env.model.provider()),
    };
    out.say(&format!("harmonia demo: \"{}\" through every stage ({model}, sandbox connector)", input.title));
    out.say(&format!("demo workspace `{ws}` in {} (configured from examples/workspace.toml)", data_dir.display()));
    let job = ingest(&env.env, &ws, input, None, None).await?;
    out.say(&format!("job {}", job.id));
    let finished = follow(env, out, &ws, &job.id, true, None).await?;
    env.settle(Duration::from_secs(30)).await?;
    let report = report(env, &finished).await?;
    print_report(out, &report);
    out.say("");
    out.say(&format!(
        "Ask Nova about the demo: harmonia --data-dir {} --workspace {ws} ask \"What is pending in the feed?\"",
        data_dir.display()
    ));
    out.value(&report);
    if finished.status == JobStatus::Verified {
        Ok(())
    } else {
        Err(Error::new(
            finished.failure.map(|f| f.code).unwrap_or(Code::InvalidTransition),
            format!("the job ended as {}", status_name(finished.status)),
        ))
    }
}

/// `harmonia run SOURCE`.
pub(crate) async fn run(
    env: &Local,
    out: &Output,
    ws: &WorkspaceId,
    path: &Path,
    title: Option<String>,
    language: &str,
) -> Result<(), Error> {
    // Refuse before reading anything when the workspace has no configuration.
    harmonia_pipeline::workspace::current(&*env.env.store, ws).await?;
    env.prepare(ws).await?;
    let name = path.to_string_lossy().into_owned();
    let format = Format::from_path(&name)
        .ok_or_else(|| Error::new(Code::SourceMalformed, "sources are .json, .vtt or .srt files"))?;
    let meta = std::fs::metadata(path)
        .map_err(|e| Error::new(Code::NotFound, "the source file cannot be read").with_cause(e))?;
    if meta.len() > harmonia_contracts::domain::SOURCE_MAX_BYTES as u64 {
        return Err(Error::new(Code::PayloadTooLarge, "a source is at most 4 MiB"));
    }
    let bytes =
        std::fs::read(path).map_err(|e| Error::new(Code::NotFound, "the source file cannot be read").with_cause(e))?;
    let title = title.unwrap_or_else(|| {
        path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "Untitled".into())
    });
    let input = formats::parse(&bytes, format, &title, language)?;
    let job = ingest(&env.env, ws, input, None, None).await?;
    out.say(&format!("job {} (workspace `{ws}`, configuration version {})", job.id, job.workspace_version));
    let current = follow(env, out, ws, &job.id, false, None).await?;
    out.value(&json!({ "job": current }));
    Ok(())
}

/// `harmonia status [JOB]`.
pub(crate) async fn status(backend: &Backend, out: &Output, ws: &WorkspaceId, job: Option<&str>) -> Result<(), Error> {
    let ws = ws.clone();
    backend.resume(&ws).await?;
    let id: Option<JobId> = job.map(str::parse).transpose()?;
    let jobs = match backend {
        Backend::Local(l) => local_jobs(l, &ws, id.as_ref()).await?,
        Backend::Cloud(client) => match &id {
            Some(id) => vec![client.job(id).await?],
            None => {
                // Only a job at a gate has a version awaiting a decision to ask for.
                let mut replies = Vec::new();
                for job in client.jobs().await?.jobs {
                    let gated = [ApprovalSubject::Strategy, ApprovalSubject::Draft]
                        .into_iter()
                        .any(|subject| gates::require_waiting(&job, subject).is_ok());
                    replies.push(match gated {
                        true => client.job(&job.id).await?,
                        false => harmonia_client::api::JobReply { job, awaiting_version: None },
                    });
                }
                replies
            }
        },
    };
    let mut views = Vec::new();
    if !jobs.is_empty() {
        out.say(&format!("{:<36}  {:<27} TITLE (VERSION AWAITING A DECISION) [FAILURE]", "JOB", "STATUS"));
    }
    for harmonia_client::api::JobReply { job: j, awaiting_version: version } in &jobs {
        let failure = j
            .failure
            .as_ref()
            .map(|f| format!(" [{}{}]", f.code, f.role.map(|r| format!(" by {r}")).unwrap_or_default()))
            .or_else(|| j.stalled.as_ref().map(|f| format!(" [waiting: {} at {}]", f.code, f.stage)));
        out.say(&format!(
            "{}  {:<27} {}{}{}",
            j.id,
            status_name(j.status),
            j.title,
            version
                .as_ref()
                .map(|v| match j.round.is_original() {
                    true => format!(" (version {})", version_prefix(v)),
                    false => format!(
                        " (version {}, operator round {} of {})",
                        version_prefix(v),
                        j.round.get(),
                        Round::MAX.get()
                    ),
                })
                .unwrap_or_default(),
            failure.unwrap_or_default()
        ));
        views.push(json!({ "job": j, "awaiting_version": version }));
    }
    if jobs.is_empty() {
        let configured = match backend {
            Backend::Local(l) => harmonia_pipeline::workspace::current(&*l.env.store, &ws).await.map(|_| ()),
            Backend::Cloud(client) => client.workspace().await.map(|_| ()),
        };
        match configured {
            Ok(()) => out.say(&format!("No jobs in workspace `{ws}` yet: submit a source with `harmonia run FILE`.")),
            Err(e) if e.code == Code::WorkspaceNotConfigured => out.say(&format!(
                "Workspace `{ws}` has no configuration yet: write one (see examples/workspace.toml) and run `harmonia workspace init FILE`."
            )),
            Err(e) => return Err(e),
        }
    }
    out.value(&json!({ "jobs": views }));
    Ok(())
}

/// One job, or the workspace's jobs, each with the version awaiting a decision. The jobs
/// shown first move on to where they rest (a decision or the end), for a little while; the
/// rest of the queue is not waited for. Then they are read again.
async fn local_jobs(
    l: &Local,
    ws: &WorkspaceId,
    id: Option<&JobId>,
) -> Result<Vec<harmonia_client::api::JobReply>, Error> {
    let list = || async {
        match id {
            Some(id) => Ok::<_, Error>(vec![gates::job(&l.env, ws, id).await?]),
            None => gates::jobs(&l.env, ws, 1000).await,
        }
    };
    let ids: Vec<JobId> = list().await?.iter().map(|j| j.id.clone()).collect();
    l.rest(ws, &ids, STATUS_WAIT).await?;
    let mut replies = Vec::new();
    for job in list().await? {
        let awaiting_version = gates::awaiting(&l.env, ws, &job).await?.map(|(_, version)| version);
        replies.push(harmonia_client::api::JobReply { job, awaiting_version });
    }
    Ok(replies)
}

/// `harmonia serve`: the operator API on 127.0.0.1 until Ctrl-C (or SIGTERM). It issues no credential: the
/// operators of the store sign in (`harmonia operator add`), and when the workspace has none
/// it says how to create the first admin.
pub(crate) async fn serve(env: &Local, out: &Output, ws: &WorkspaceId, port: u16) -> Result<(), Error> {
    let ws = ws.clone();
    if env.reading_only.is_none() {
        gates::resume(&env.env, &ws).await?;
    }
    let active = crate::operators::active_operators(&*env.env.store, &ws).await?;
    let hint = (active == 0).then(|| crate::operators::first_admin_hint(&ws));
    if let Some(hint) = &hint {
        out.say(hint);
    }
    let credentials = Arc::new(Credentials::new(env.env.store.clone()));
    // Every function in one process: Nova answers the console's questions beside the API.
    let nova = harmonia_nova::NovaState { runtime: Arc::new(nova_runtime(env)?), credentials: credentials.clone() };
    let app = harmonia_operator::app_with(
        OperatorState { env: env.env.clone(), credentials },
        harmonia_nova::ask_routes(nova),
    );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|e| Error::new(Code::DependencyUnavailable, "the port is not available").with_cause(e))?;
    out.say(&match env.reading_only {
        None => format!(
            "Operator API on http://127.0.0.1:{port}; scheduled posts are dispatched every {} seconds (Ctrl-C to stop).",
            crate::schedule::WATCH_EVERY.as_secs()
        ),
        Some(_) => format!(
            "Operator API on http://127.0.0.1:{port}, reading only: every change is refused and nothing is dispatched (Ctrl-C to stop)."
        ),
    });
    out.value(&json!({ "listening": format!("127.0.0.1:{port}"), "active_operators": active, "hint": hint }));
    // The dispatcher ticks beside the server, so a post approved through the API goes out in
    // its window while `serve` runs (not on a data dir it only reads).
    let reading_only = env.reading_only.is_some();
    let ticker = {
        let env = env.env.clone();
        tokio::spawn(async move {
            if reading_only {
                return;
            }
            loop {
                tokio::time::sleep(crate::schedule::WATCH_EVERY).await;
                match harmonia_pipeline::gates::schedule::tick(&env).await {
                    Ok(done) if !done.released.is_empty() => {
                        tracing::info!(released = done.released.len(), "scheduled posts dispatched")
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(code = e.code.as_str(), "the dispatcher could not run; it tries again"),
                }
                match harmonia_pipeline::engagement::tick(&env).await {
                    Ok(done) if !done.taken.is_empty() => {
                        tracing::info!(taken = done.taken.len(), "engagement snapshots taken")
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(
                        code = e.code.as_str(),
                        "engagement snapshots could not be taken; the next tick tries again"
                    ),
                }
            }
        })
    };
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(async {
            crate::interrupted().await;
        })
        .await
        .map_err(|_| Error::from_code(Code::Internal));
    ticker.abort();
    served
}

/// The sample measured posts (mock provenance) `demo` loads into the demo workspace, so Nova's
/// engagement and posting-window skills have history to work from.
const SAMPLE_METRICS: &str = include_str!("../../../examples/post-metrics.json");
/// The sample public trend signals `demo` loads.
const SAMPLE_SIGNALS: &str = include_str!("../../../examples/trend-signals.json");

/// Load the bundled sample metrics and trend signals into the demo data dir (once: a second
/// demo finds them there).
async fn load_samples(env: &Local, ws: &WorkspaceId) -> Result<(), Error> {
    use harmonia_contracts::domain::PostMetrics;
    use harmonia_pipeline::records::{POST_METRICS, PUBLICATIONS};
    let store = &*env.env.store;
    let metrics: Vec<PostMetrics> =
        serde_json::from_str(SAMPLE_METRICS).map_err(|_| Error::from_code(Code::InvalidDocument))?;
    for m in &metrics {
        let data = harmonia_store::encode(m).map_err(Error::from)?;
        harmonia_store::create_if_absent(store, ws, POST_METRICS, &doc_id(&m.post), data).await?;
        // A metric is verified performance only for a verified publication of the workspace,
        // so the sample history includes the (sandbox) publications the metrics measure.
        let publication = encode_sample_publication(m)?;
        harmonia_store::create_if_absent(store, ws, PUBLICATIONS, &doc_id(&m.post), publication).await?;
    }
    let signals = harmonia_pipeline::imports::Format::Json;
    harmonia_pipeline::imports::signals::import(store, ws, SAMPLE_SIGNALS.as_bytes(), signals).await?;
    Ok(())
}

/// The sandbox publication a sample metric measures: claimed, applied and verified when the
/// sample post went out.
fn encode_sample_publication(
    m: &harmonia_contracts::domain::PostMetrics,
) -> Result<serde_json::Map<String, Value>, Error> {
    use harmonia_contracts::domain::Publication;
    let job = m.job.clone().ok_or_else(|| Error::new(Code::InvalidDocument, "a sample metric names no job"))?;
    let (draft, at, body) = (format!("draft-{}", m.post), m.published_at, "A post from the demo's sample history.");
    let hash = harmonia_contracts::domain::content_hash(&body);
    let publication: Publication = serde_json::from_value(json!({
        "job": job, "draft": draft, "platform": m.platform, "body": body, "content_hash": hash,
        "claim": {"job": job, "draft": draft, "content_hash": hash, "platform": m.platform, "connector": "sandbox",
                  "idempotency_key": format!("sample-{}", m.post), "claimed_at": at},
        "receipt": {"job": job, "draft": draft, "connector": "sandbox",
                    "outcome": {"outcome": "applied", "post": m.post}, "recorded_at": at},
        "verification": {"job": job, "draft": draft, "outcome": {"outcome": "verified", "post": m.post},
                         "checked_at": at},
    }))
    .map_err(|e| Error::new(Code::InvalidDocument, "a sample publication does not match its type").with_cause(e))?;
    harmonia_store::encode(&publication).map_err(Error::from)
}

/// Nova's runtime over the embedded state, with the command's model and Nova's tools.
fn nova_runtime(env: &Local) -> Result<harmonia_agents::Runtime, Error> {
    let skills = harmonia_agents::skills::SkillLibrary::configured()
        .map_err(|e| Error::new(Code::InvalidConfig, e.for_configured()))?;
    let runtime = harmonia_agents::Runtime::new(env.model.clone(), env.env.store.clone(), Arc::new(skills))
        .with_repairs(env.repairs);
    Ok(harmonia_nova::with_tools(runtime))
}

/// `harmonia ask QUESTION`: Nova over the embedded state, with the command's model. It writes
/// nothing but its activity record.
pub(crate) async fn ask(env: &Local, out: &Output, ws: &WorkspaceId, question: &str) -> Result<(), Error> {
    use harmonia_contracts::trace::TraceParent;

    let ws = ws.clone();
    let runtime = nova_runtime(env)?;
    let who = Identity { operator: "cli".parse()?, workspace: ws, role: Role::Operator };
    let asked = harmonia_nova::ask(&runtime, &who, question, TraceParent::new_root()).await?;
    out.say(&asked.answer.answer);
    for e in &asked.answer.errors {
        out.say(&format!("  tool error [{}]: {}", e.code, e.message));
    }
    out.say(&format!(
        "  skill: {}; tools: {}; evidence: {}",
        asked.skill.as_deref().unwrap_or("-"),
        asked.tool_calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", "),
        asked.evidence_ids.join(", ")
    ));
    let asked = serde_json::to_value(&asked)
        .map_err(|e| Error::new(Code::Internal, "the answer could not be written as JSON").with_cause(e))?;
    out.value(&asked);
    Ok(())
}

/// `harmonia activity JOB`: every specialist invocation of a job, from its activity records.
pub(crate) async fn activity(backend: &Backend, out: &Output, ws: &WorkspaceId, job: &str) -> Result<(), Error> {
    use harmonia_contracts::domain::{ActivityOutcome, ActivityRecord};
    let ws = ws.clone();
    let id: JobId = job.parse()?;
    let records: Vec<ActivityRecord> = match backend {
        Backend::Local(l) => {
            // An unknown job is `not_found`, not an empty list.
            gates::job(&l.env, &ws, &id).await?;
            harmonia_pipeline::detail::activity(&l.env, &ws, &id).await?
        }
        Backend::Cloud(client) => client.activity(&id).await?,
    };
    if !records.is_empty() {
        out.say(&format!(
            "{:<10} {:<10} {:<18} {:>11}  {:>8} {:>9}  {:<22} {:<32}  SPAN",
            "STAGE", "AGENT", "MODEL", "DURATION", "TOKENS IN", "OUT", "OUTCOME", "TRACE"
        ));
    }
    for r in &records {
        let outcome = match r.outcome {
            ActivityOutcome::Success => "success".to_owned(),
            ActivityOutcome::Failure { code } => format!("failure:{code}"),
        };
        out.say(&format!(
            "{:<10} {:<10} {:<18} {:>8} us  {:>8} {:>9}  {:<22} {:<32}  {}",
            r.stage.as_str(),
            r.agent.as_str(),
            r.model,
            r.duration_us,
            r.usage.input_tokens,
            r.usage.output_tokens,
            outcome,
            r.trace_id.to_string(),
            r.span_id
        ));
    }
    let by_role = harmonia_pipeline::detail::usage_by_role(&records);
    if records.is_empty() {
        out.say("No activity is recorded for this job.");
    } else {
        out.say("");
        for line in usage_lines(&by_role) {
            out.say(&line);
        }
    }
    out.value(&json!({ "activity": records, "model_use": by_role }));
    Ok(())
}

/// The model-use table: per role, invocations (and how many failed), model calls and tokens,
/// then the total.
pub(crate) fn usage_lines(by_role: &[harmonia_pipeline::detail::RoleUsage]) -> Vec<String> {
    let mut lines = vec![format!(
        "{:<10} {:>11} {:>6} {:>11} {:>7} {:>10} {:>10}",
        "AGENT", "INVOCATIONS", "FAILED", "MODEL CALLS", "REPAIRS", "TOKENS IN", "OUT"
    )];
    let row = |name: &str, u: &harmonia_pipeline::detail::RoleUsage| {
        format!(
            "{name:<10} {:>11} {:>6} {:>11} {:>7} {:>10} {:>10}",
            u.invocations, u.failed, u.model_calls, u.repairs, u.input_tokens, u.output_tokens
        )
    };
    // The total's role is not printed.
    let mut total = harmonia_pipeline::detail::RoleUsage::none(harmonia_contracts::Role::Harmonia);
    for u in by_role {
        lines.push(row(u.role.as_str(), u));
        total.add(u);
    }
    lines.push(row("total", &total));
    lines
}

/// The refusal of a command that reaches a deployment's backends, in a build without them.
#[cfg(not(feature = "cloud"))]
pub(crate) fn without_cloud(command: &str) -> Error {
    Error::new(
        Code::InvalidRequest,
        format!(
            "`harmonia {command}` reaches a deployment's Google Cloud backends, which this build leaves out: build it with `cargo build -p harmonia --features cloud`."
        ),
    )
}

/// `harmonia provision` in a build without the feature `cloud`.
#[cfg(not(feature = "cloud"))]
pub(crate) async fn provision(_out: &Output, _endpoints: &[String], _template: Option<&str>) -> Result<(), Error> {
    Err(without_cloud("provision"))
}

/// `harmonia provision`: create every topic, dead-letter topic and push subscription of the
/// registry in the configured project, pushing to each function's endpoint.
#[cfg(feature = "cloud")]
pub(crate) async fn provision(out: &Output, endpoints: &[String], template: Option<&str>) -> Result<(), Error> {
    let project = std::env::var("GOOGLE_CLOUD_PROJECT")
        .map_err(|e| Error::new(Code::InvalidRequest, "GOOGLE_CLOUD_PROJECT is required").with_cause(e))?;
    let prefix = std::env::var("HARMONIA_TOPIC_PREFIX").unwrap_or_default();
    let mut map = std::collections::HashMap::new();
    for e in endpoints {
        let (function, url) =
            e.split_once('=').ok_or_else(|| Error::new(Code::InvalidRequest, "endpoints are function=url"))?;
        map.insert(function.to_owned(), url.to_owned());
    }
    let bus = harmonia_bus_pubsub::PubSubBus::connect(harmonia_bus_pubsub::PubSubConfig::from_env(project))
        .await
        .map_err(|e| Error::from_code(e.code()).with_cause(e))?;
    let endpoint = |f: &str| map.get(f).cloned().or_else(|| template.map(|t| t.replace("{function}", f)));
    let n = harmonia_host::provision(&bus, &prefix, harmonia_pipeline::registry::Timing::CLOUD, endpoint).await?;
    out.say(&format!(
        "Provisioned {} topics and {n} push subscriptions.",
        harmonia_pipeline::registry::topics(&prefix).len()
    ));
    out.value(&json!({ "subscriptions": n }));
    Ok(())
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;

    #[test]
    fn an_undecodable_document_is_an_error_not_an_absent_one() {
        let doc = |data: Value| Document {
            id: "d1".parse().expect("id"),
            version: 1,
            updated_at: Utc::now(),
            data: data.as_object().cloned().expect("object"),
        };
        assert!(decode_optional::<AnalysisRecord>(None).is_ok_and(|d| d.is_none()));
        let corrupt = decode_optional::<AnalysisRecord>(Some(doc(json!({"not": "an analysis"}))));
        assert_eq!(corrupt.map(|_| ()).map_err(|e| e.code), Err(Code::StoreCorrupt));
    }

    #[test]
    fn status_names_are_the_serde_names() {
        assert_eq!(status_name(JobStatus::AwaitingDraftApproval), "awaiting_draft_approval");
    }
}
