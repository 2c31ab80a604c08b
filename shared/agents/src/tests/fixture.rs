//! A workspace with the sample source and planning snapshot in a fresh SQLite store.

use std::sync::Arc;

use chrono::Utc;
use harmonia_contracts::domain::{PlanningSnapshot, Source, SourceInput};
use harmonia_contracts::event::Stage;
use harmonia_contracts::ids::{DocId, WorkspaceId};
use harmonia_contracts::trace::TraceParent;
use harmonia_store::{Query, Store, create_if_absent, encode};
use harmonia_store_sqlite::SqliteStore;

use crate::model::Model;
use crate::role::Role;
use crate::session::SESSIONS;
use crate::skills::SkillLibrary;
use crate::tools::PLANNING_SNAPSHOTS;
use crate::{InvocationSeed, Runtime};

pub(crate) const SAMPLE: &str = include_str!("../../../../examples/launch-talk.json");
pub(crate) const SNAPSHOT: &str = include_str!("../../../../examples/planning-snapshot.json");

pub(crate) struct Fixture {
    pub store: Arc<dyn Store>,
    pub workspace: WorkspaceId,
    pub source: Source,
    pub snapshot: PlanningSnapshot,
    /// Holds the SQLite file's directory until the fixture is dropped.
    _dir: harmonia_testkit::TempDir,
}

impl Fixture {
    pub(crate) async fn new() -> Self {
        let dir = harmonia_testkit::temp_dir();
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("agents.sqlite")).expect("open"));
        let workspace = WorkspaceId::generate();
        let input: SourceInput = serde_json::from_str(SAMPLE).expect("sample parses");
        let source = input.validate("src-sample".parse().expect("id"), workspace.clone(), Utc::now()).expect("valid");
        let mut snapshot: PlanningSnapshot = serde_json::from_str(SNAPSHOT).expect("snapshot parses");
        snapshot.workspace = workspace.clone();
        let id: DocId = snapshot.id.as_str().parse().expect("doc id");
        create_if_absent(&*store, &workspace, PLANNING_SNAPSHOTS, &id, encode(&snapshot).expect("encode"))
            .await
            .expect("store snapshot");
        Self { store, workspace, source, snapshot, _dir: dir }
    }

    /// A runtime over `model` with repairs off: most tests here hold one answer to its
    /// contract as it is (`repairs.rs` gives them back with [`Runtime::with_repairs`]).
    pub(crate) fn runtime(&self, model: Arc<dyn Model>) -> Runtime {
        let skills = SkillLibrary::configured().expect("skills");
        Runtime::new(model, self.store.clone(), Arc::new(skills))
            .with_repairs(crate::runtime::Repairs::new(0).expect("in range"))
    }

    pub(crate) fn seed<I>(&self, stage: Stage, input: I) -> InvocationSeed<I> {
        InvocationSeed {
            workspace: self.workspace.clone(),
            user: "pipeline".parse().expect("user"),
            job: "job-test".parse().expect("job"),
            stage,
            input,
            trace: TraceParent::new_root(),
            budget: None,
        }
    }

    /// Runs one task of the role `R` on `rt` as the pipeline does (routed through Harmonia
    /// when it is a routed task, else invoked directly) and gives its accepted output.
    pub(crate) async fn output<R: Role>(&self, rt: &Runtime, stage: Stage, input: R::Input) -> R::Output {
        let seed = self.seed(stage, input);
        let routed = R::TASK.is_some_and(crate::io::Task::routed);
        let invocation = if routed { rt.run_task::<R>(&seed).await } else { rt.invoke::<R>(&seed).await };
        invocation.unwrap_or_else(|e| panic!("{}: {e:?}", R::ID)).output
    }

    /// Sessions left behind (there must be none after any invocation).
    pub(crate) async fn sessions(&self) -> usize {
        self.store.query(&self.workspace, SESSIONS, &Query::all(100)).await.expect("query").len()
    }
}

/// The warnings this thread logs from now on, as Cloud Logging JSON lines, until the guard is
/// dropped.
pub(crate) fn warnings() -> (harmonia_telemetry::Memory, tracing::subscriber::DefaultGuard) {
    let logs = harmonia_telemetry::Memory::default();
    let guard = tracing::subscriber::set_default(harmonia_telemetry::subscriber(
        harmonia_telemetry::Format::CloudJson { project: None },
        "warn",
        logs.clone(),
    ));
    // Another test's subscriber coming or going on another thread may have left this one's
    // events filtered out of the process-wide interest cache: compute it again with this one.
    tracing::callsite::rebuild_interest_cache();
    (logs, guard)
}
