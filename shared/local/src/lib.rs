//! The embedded default, wired: the SQLite store and the durable local queue in one file, a
//! blob folder beside it (`blobs/`, long sources' transcripts), the offline model, the sandbox
//! connector, and one local subscriber per registry subscription, all in this process. The `harmonia` CLI and the end-to-end tests use it.
//!
//! [`Local::drive`] follows one job to a terminal state or a human gate, reporting every
//! completed stage (from the stage markers) and, when asked, approving as the operator.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use harmonia_agents::Runtime;
use harmonia_agents::offline::OfflineModel;
use harmonia_agents::skills::SkillLibrary;
use harmonia_bus::Bus;
use harmonia_bus_local::LocalBus;
use harmonia_connectors::Sandbox;
use harmonia_contracts::domain::{ApprovalSubject, Decision, Job, JobStatus, ScheduleAction, WorkspaceConfig};
use harmonia_contracts::event::{Pass, Round, Stage};
use harmonia_contracts::ids::JobId;
use harmonia_contracts::ids::WorkspaceId;
use harmonia_contracts::{Code, Error};
use harmonia_pipeline::gates::{self, schedule};
use harmonia_pipeline::records::{JOBS, MARKERS, Marker, doc_id};
use harmonia_pipeline::registry::{Timing, topics};
use harmonia_pipeline::steps::handlers;
use harmonia_pipeline::{Env, workspace};
use harmonia_store::{MAX_QUERY_LIMIT, Query, decode_each, scan};
use harmonia_store_sqlite::SqliteStore;
use tokio::task::JoinHandle;

mod reading;

/// The folder of the data directory that holds blobs.
pub const BLOBS_DIR: &str = "blobs";

/// The data file of the data directory.
pub const DATA_FILE: &str = "harmonia.sqlite";

/// The stage events' attribute naming their job, by which a command follows its jobs.
const JOB_ATTRIBUTE: &str = "job";

/// How long a command following jobs waits for news from its own process before it looks at
/// the store again (another process on the same data dir may be doing the work).
const LOOK_AGAIN: Duration = Duration::from_millis(50);

/// The demo brand's workspace configuration file.
pub const DEMO_CONFIG: &str = include_str!("../../../examples/workspace.toml");

fn bus_error(e: harmonia_bus::Error) -> Error {
    Error::from(e)
}

/// A wrapper around one backend.
pub type Wrapper<T> = Box<dyn FnOnce(Arc<T>) -> Arc<T>>;

/// Optional wrappers around the store and the publisher.
#[derive(Default)]
pub struct Wrap {
    /// Wraps the store every stage uses.
    pub store: Option<Wrapper<dyn harmonia_store::Store>>,
    /// Wraps the publisher every stage uses.
    pub bus: Option<Wrapper<dyn Bus>>,
    /// The model that answers the specialists; unset, the offline model (`provenance: mock`).
    pub answering: Option<Arc<dyn harmonia_agents::model::Model>>,
    /// Wraps that model.
    pub model: Option<Wrapper<dyn harmonia_agents::model::Model>>,
    /// Replaces the sandbox connector.
    pub connector: Option<Arc<dyn harmonia_connectors::Connector>>,
    /// The channel accounts; unset, those of `channels.toml` in the data dir.
    pub accounts: Option<harmonia_connectors::accounts::Accounts>,
    /// The clock of the dispatcher, policy, planning and window checks; unset, the system's.
    pub clock: Option<Arc<dyn harmonia_pipeline::clock::Clock>>,
    /// Corrective turns per invocation (`HARMONIA_MODEL_REPAIRS`); unset, the default.
    pub repairs: Option<harmonia_agents::runtime::Repairs>,
}

/// The running embedded system.
pub struct Local {
    /// The backends the stages use.
    pub env: Arc<Env>,
    /// The local queue.
    pub bus: LocalBus,
    /// The sandbox connector (tests steer it).
    pub sandbox: Arc<Sandbox>,
    /// The data file itself (its check, backup and restore), unwrapped.
    pub data: SqliteStore,
    /// The model that answers the specialists (as wrapped).
    pub model: Arc<dyn harmonia_agents::model::Model>,
    /// Corrective turns per invocation, for runtimes built beside the stages' (Nova's).
    pub repairs: harmonia_agents::runtime::Repairs,
    /// Why the data directory was opened for reading only ([`Local::open_reading`]): its disk
    /// fault (`storage_read_only` or `storage_full`). `None` when it was opened to work.
    pub reading_only: Option<Error>,
    workers: Vec<JoinHandle<()>>,
}

impl Drop for Local {
    fn drop(&mut self) {
        self.workers.iter().for_each(JoinHandle::abort);
    }
}

impl Local {
    /// Open (creating if needed) the embedded system under `data_dir` and start every stage.
    pub async fn open(data_dir: &Path) -> Result<Self, Error> {
        Self::open_with(data_dir, Timing::LOCAL, Wrap::default()).await
    }

    /// Like [`open`](Self::open), with `model` answering the specialists.
    pub async fn open_answered_by(
        data_dir: &Path,
        model: Arc<dyn harmonia_agents::model::Model>,
    ) -> Result<Self, Error> {
        Self::open_with(data_dir, Timing::LOCAL, Wrap { answering: Some(model), ..Wrap::default() }).await
    }

    /// Like [`open`](Self::open), with other subscription timing and the store and publisher
    /// wrapped (tests duplicate every event; benchmarks count operations).
    pub async fn open_with(data_dir: &Path, timing: Timing, wrap: Wrap) -> Result<Self, Error> {
        let data = SqliteStore::open(data_dir.join(DATA_FILE)).map_err(Error::from)?;
        let bus = LocalBus::on(data.connection()).map_err(bus_error)?;
        let mut local = Self::assemble(data_dir, data, bus, timing, wrap, Ok)?;
        for topic in topics("") {
            local.bus.create_topic(&topic).await.map_err(bus_error)?;
        }
        for subscriber in handlers(&local.env, timing) {
            local.bus.create_subscription(&subscriber.spec).await.map_err(bus_error)?;
            local.workers.push(local.bus.spawn_subscriber(subscriber.spec.name.clone(), subscriber.handler, 2));
        }
        Ok(local)
    }

    /// Open the embedded system under `data_dir` for reading only, because `why` (its disk
    /// fault: the data file or its folder cannot be written, or the disk is full). No stage
    /// runs and nothing is resumed or dispatched; every read answers from the data file as it
    /// is, and a change is refused with the disk's fault. What a read leaves behind (a
    /// specialist's session, a console sign-in) is kept apart, for this process only.
    pub async fn open_reading(data_dir: &Path, wrap: Wrap, why: Error) -> Result<Self, Error> {
        let data = SqliteStore::open_read_only(data_dir.join(DATA_FILE)).map_err(Error::from)?;
        let bus = LocalBus::reading(data.connection());
        let mut local = Self::assemble(data_dir, data, bus, Timing::LOCAL, wrap, |store| {
            Ok(Arc::new(reading::Scratched::over(store)?) as Arc<dyn harmonia_store::Store>)
        })?;
        local.reading_only = Some(why);
        Ok(local)
    }

    /// The system over `data` and `bus`, its store wrapped by `over` and then by `wrap`, its
    /// steps leased for `timing`; no stage is started.
    fn assemble(
        data_dir: &Path,
        data: SqliteStore,
        bus: LocalBus,
        timing: Timing,
        wrap: Wrap,
        over: impl FnOnce(Arc<dyn harmonia_store::Store>) -> Result<Arc<dyn harmonia_store::Store>, Error>,
    ) -> Result<Self, Error> {
        let store = over(Arc::new(data.clone()))?;
        let store = match wrap.store {
            Some(w) => w(store),
            None => store,
        };
        let skills = SkillLibrary::configured().map_err(|e| Error::new(Code::InvalidConfig, e.for_configured()))?;
        let model = wrap.answering.unwrap_or_else(|| Arc::new(OfflineModel));
        let model = match wrap.model {
            Some(w) => w(model),
            None => model,
        };
        let repairs = wrap.repairs.unwrap_or_default();
        let runtime = Runtime::new(model.clone(), store.clone(), Arc::new(skills)).with_repairs(repairs);
        let sandbox = Arc::new(Sandbox::new(store.clone()));
        let connector: Arc<dyn harmonia_connectors::Connector> = wrap.connector.unwrap_or_else(|| sandbox.clone());
        let accounts = match wrap.accounts {
            Some(accounts) => accounts,
            None => harmonia_connectors::accounts::Accounts::load(
                &data_dir.join(harmonia_connectors::accounts::LOCAL_FILE),
                Some(&store),
            )?,
        };
        let env = Arc::new(Env {
            store: store.clone(),
            blobs: Arc::new(harmonia_blob::Folder::new(data_dir.join(BLOBS_DIR))),
            // Sources reach the embedded default through `harmonia run`, not a bucket.
            uploads: None,
            bus: match wrap.bus {
                Some(w) => w(Arc::new(bus.clone())),
                None => Arc::new(bus.clone()),
            },
            runtime: Arc::new(runtime),
            reach: harmonia_connectors::reach::Reach::of(connector.as_ref(), &accounts),
            connector,
            accounts,
            clock: wrap.clock.unwrap_or_else(|| Arc::new(harmonia_pipeline::clock::SystemClock)),
            topic_prefix: String::new(),
            pipeline_user: "pipeline".parse()?,
            step_lease: timing.model_ack_deadline,
            claims: Default::default(),
            liveness: Some(Arc::new(Heartbeats(bus.clone()))),
            faults: Default::default(),
            sweeps: Default::default(),
        });
        Ok(Self { env, bus, sandbox, data, model, repairs, reading_only: None, workers: Vec::new() })
    }

    /// The demo workspace (`demo`), configured from `examples/workspace.toml` when it has no
    /// configuration yet.
    pub async fn workspace(&self) -> Result<WorkspaceId, Error> {
        let id: WorkspaceId = "demo".parse()?;
        let config = WorkspaceConfig::from_toml(DEMO_CONFIG)?;
        match workspace::init(&*self.env.store, &id, config, &"demo".parse()?).await {
            // Configured by an earlier run (perhaps since updated): keep what is there.
            Err(e) if e.code == Code::WorkspaceExists => {}
            other => {
                other?;
            }
        }
        self.prepare(&id).await?;
        Ok(id)
    }

    /// Carry on with `workspace`'s unfinished jobs (their planning snapshots are built by the
    /// plan stage from the workspace's configuration and calendar).
    pub async fn prepare(&self, workspace: &WorkspaceId) -> Result<(), Error> {
        gates::resume(&self.env, workspace).await.map(|_| ())
    }

    /// Stop this process's part of the pipeline: no new deliveries, and the step claims and
    /// queue leases it holds given back at once, so that the next process carries on with
    /// them instead of waiting for them to lapse. For a command about to exit (also on
    /// SIGINT or SIGTERM). Returns how many claims and leases were given back.
    pub async fn shutdown(&self) -> Result<(usize, u64), Error> {
        self.workers.iter().for_each(JoinHandle::abort);
        let claims = harmonia_pipeline::step::claim::release_held(&self.env).await;
        let leases = self.bus.release().await.map_err(bus_error)?;
        Ok((claims, leases))
    }

    /// Wait until `jobs` each rest (wait for the operator, or are finished), at most `limit`;
    /// the jobs still moving then are left to continue. Other jobs on the queue are not
    /// waited for.
    pub async fn rest(&self, workspace: &WorkspaceId, jobs: &[JobId], limit: Duration) -> Result<(), Error> {
        if self.reading_only.is_some() {
            // Nothing moves a job here.
            return Ok(());
        }
        let deadline = tokio::time::Instant::now() + limit;
        let began = Utc::now();
        let began_here = std::time::Instant::now();
        let mut moving: Vec<&JobId> = jobs.iter().collect();
        let follow = self.bus.follow(JOB_ATTRIBUTE, jobs.iter().map(JobId::as_str));
        loop {
            let changed = follow.changed();
            let mut still = Vec::with_capacity(moving.len());
            for job in moving {
                let current = gates::job(&self.env, workspace, job).await?;
                // A job whose step stalled on its model while resting rests there too.
                let stalled = current.stalled.as_ref().is_some_and(|s| s.at >= began);
                let resting = current.status.is_terminal() || current.status == JobStatus::Scheduled;
                if gates::awaited(current.status).is_none() && !resting && !stalled {
                    still.push(job);
                }
            }
            moving = still;
            // A full or unwritable disk holds every job where it is.
            let stuck = self.fault_since(began_here).is_some();
            if moving.is_empty() || stuck || tokio::time::Instant::now() > deadline {
                return Ok(());
            }
            self.until_changed(changed).await;
        }
    }

    /// Wait until the queue is empty (every stage has settled), checking every few ms.
    pub async fn settle(&self, limit: Duration) -> Result<(), Error> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let changed = self.bus.changed();
            if self.bus.total_backlog().await.map_err(bus_error)? == 0 {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                return Err(Error::new(Code::DependencyUnavailable, "the pipeline did not settle in time"));
            }
            self.until_changed(changed).await;
        }
    }

    /// The last full or unwritable disk this process met at or after `at`, in a step or on the
    /// queue: every job here waits until it is dealt with.
    pub fn fault_since(&self, at: std::time::Instant) -> Option<Error> {
        self.env.faults.since(at).or_else(|| self.bus.fault_since(at).map(Error::from))
    }

    /// Wait for `changed` (this process changed the queue), or at most [`LOOK_AGAIN`]: the
    /// work may be going on in another process.
    async fn until_changed(&self, changed: impl std::future::Future<Output = ()>) {
        let _ = tokio::time::timeout(LOOK_AGAIN, changed).await;
    }
}

/// Whether another process on the same data file is alive: its queue holder's heartbeat.
struct Heartbeats(LocalBus);

#[async_trait::async_trait]
impl harmonia_pipeline::step::claim::Liveness for Heartbeats {
    fn holder(&self) -> &str {
        self.0.holder()
    }

    async fn alive(&self, holder: &str) -> bool {
        // A heartbeat that cannot be read says nothing: the claim then lapses with its lease.
        self.0.alive(holder).await.unwrap_or(true)
    }
}

/// What [`Local::drive`] reports.
#[derive(Clone, Debug, PartialEq)]
pub enum Progress {
    /// A stage completed (in completion order).
    Stage {
        /// The stage.
        stage: Stage,
        /// Its operator round.
        round: Round,
        /// Its pass.
        pass: Pass,
        /// When it completed.
        completed_at: DateTime<Utc>,
    },
    /// The stage failed: its step ended the job with this failure (a specialist's answer that
    /// missed its contract, or input it refused). Reported instead of [`Progress::Stage`].
    Failed {
        /// The stage.
        stage: Stage,
        /// Its operator round.
        round: Round,
        /// What ended it.
        failure: harmonia_contracts::domain::JobFailure,
    },
    /// The operator approved a version.
    Approved(ApprovalSubject, String),
    /// The operator published the scheduled post now instead of at its time.
    PublishedNow(harmonia_contracts::domain::Schedule),
}

impl Local {
    /// Follow `job` until it is terminal, or — without `approve` — until it waits for a human
    /// or for its scheduled time. With `approve`, act as the operator `cli` at every gate:
    /// approve each waiting version, and publish the approved draft now rather than at its
    /// time.
    pub async fn drive(
        &self,
        workspace: &WorkspaceId,
        job: &JobId,
        approve: bool,
        timeout: Duration,
        mut report: impl FnMut(Progress),
    ) -> Result<Job, Error> {
        let deadline = tokio::time::Instant::now() + timeout;
        let began = Utc::now();
        let began_here = std::time::Instant::now();
        let mut seen = std::collections::HashSet::new();
        let mut read_at = None;
        let follow = self.bus.follow(JOB_ATTRIBUTE, [job.as_str()]);
        loop {
            // Taken before reading, so a change made while reading is not missed.
            let changed = follow.changed();
            let doc = self.env.store.get(workspace, JOBS, &doc_id(job)).await.map_err(Error::from)?;
            let doc = doc.ok_or_else(|| Error::from_code(Code::NotFound))?;
            let current: Job = doc.decode().map_err(Error::from)?;
            // A stage's marker is written in the transaction that updates its job: while the
            // job's version stands, there is no new marker to read.
            if read_at != Some(doc.version) {
                read_at = Some(doc.version);
                let query = Query::all(MAX_QUERY_LIMIT).filter("job", job.to_string()).map_err(Error::from)?;
                let docs = scan(&*self.env.store, workspace, MARKERS, query).await.map_err(Error::from)?;
                let mut markers: Vec<Marker> = decode_each(MARKERS, &docs);
                markers.sort_by_key(|m| m.completed_at);
                // A failed step leaves a marker too (so redeliveries ack): the last marker of the
                // stage the job failed at is that step's, and says it failed.
                let failure = current.failure.as_ref().filter(|_| current.status == JobStatus::Failed);
                let failed_step = failure.and_then(|f| markers.iter().rposition(|m| m.stage == f.stage));
                for (i, m) in markers.into_iter().enumerate() {
                    if seen.insert((m.stage, m.round, m.pass)) {
                        match failure.filter(|_| Some(i) == failed_step) {
                            Some(failure) => {
                                report(Progress::Failed { stage: m.stage, round: m.round, failure: failure.clone() })
                            }
                            None => report(Progress::Stage {
                                stage: m.stage,
                                round: m.round,
                                pass: m.pass,
                                completed_at: m.completed_at,
                            }),
                        }
                    }
                }
            }
            match gates::awaited(current.status) {
                Some(subject) if approve => {
                    let version = gates::current_version(&self.env, workspace, &current, subject).await?;
                    let request = gates::DecisionRequest {
                        job: job.clone(),
                        operator: "cli".parse()?,
                        subject,
                        decision: Decision::Approved,
                        subject_hash: version.clone(),
                        trace: None,
                    };
                    gates::decide(&self.env, workspace, request).await?.finished()?;
                    report(Progress::Approved(subject, version));
                    continue;
                }
                Some(_) => return Ok(current),
                None if current.status == JobStatus::Scheduled && approve => {
                    // The operator at every gate also says when: now.
                    let acted = schedule::act(&self.env, workspace, job, "cli".parse()?, ScheduleAction::PublishNow)
                        .await?
                        .finished()?;
                    if let schedule::Acted::Released(s) = acted {
                        report(Progress::PublishedNow(s));
                    }
                    continue;
                }
                // Waiting for its time (or for a person) is a resting place.
                None if current.status.is_terminal() || current.status == JobStatus::Scheduled => return Ok(current),
                None => {}
            }
            // A full or unwritable disk met while following: the job cannot move until it is
            // dealt with, so say so now; the next command carries the job on.
            if let Some(fault) = self.fault_since(began_here) {
                return Err(fault);
            }
            // A model failure met while following: say so now rather than wait it out; the
            // job keeps its status and the next command carries it on.
            if let Some(stall) = current.stalled.as_ref().filter(|s| s.at >= began && s.code.is_stall()) {
                let by = stall.role.map(|r| format!(" for {r}")).unwrap_or_default();
                let once = match stall.code {
                    Code::BudgetExhausted => "the limit is raised (`harmonia workspace update FILE`)",
                    _ => "the model answers",
                };
                return Err(Error::new(
                    stall.code,
                    format!(
                        "{} The job waits at {}{by}; nothing was published, and the next command carries it on once {once}.",
                        stall.safe_message, stall.stage
                    ),
                ));
            }
            if tokio::time::Instant::now() > deadline {
                return Err(Error::new(Code::DependencyUnavailable, "the job did not finish in time"));
            }
            self.until_changed(changed).await;
        }
    }
}
