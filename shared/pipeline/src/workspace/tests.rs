use harmonia_contracts::domain::WorkspaceMode;
use harmonia_store_sqlite::SqliteStore;
use harmonia_testkit::temp_dir;

use super::*;
use crate::records::WORKSPACE_VERSIONS;

const EXAMPLE: &str = include_str!("../../../../examples/workspace.toml");

fn example() -> WorkspaceConfig {
    WorkspaceConfig::from_toml(EXAMPLE).expect("the example is valid")
}

fn operator() -> OperatorId {
    "admin".parse().expect("id")
}

#[tokio::test]
async fn init_stores_version_one_and_refuses_a_second_init() {
    let dir = temp_dir();
    let store = SqliteStore::open(dir.path().join("s.sqlite")).expect("open");
    let ws: WorkspaceId = "library".parse().expect("id");
    assert_eq!(current(&store, &ws).await.map_err(|e| e.code), Err(Code::WorkspaceNotConfigured));
    let first = init(&store, &ws, example(), &operator()).await.expect("init");
    assert_eq!((first.version, first.content_hash.clone()), (1, content_hash(&example())));
    assert_eq!(current(&store, &ws).await.expect("current"), first);
    let again = init(&store, &ws, example(), &operator()).await;
    assert_eq!(again.map(|_| ()).map_err(|e| e.code), Err(Code::WorkspaceExists));
    assert_eq!(current(&store, &ws).await.expect("current").version, 1);
}

#[tokio::test]
async fn update_adds_a_version_only_when_the_content_changes_and_jobs_keep_theirs() {
    let dir = temp_dir();
    let store = SqliteStore::open(dir.path().join("s.sqlite")).expect("open");
    let ws: WorkspaceId = "library".parse().expect("id");
    let not_yet = update(&store, &ws, example(), &operator()).await;
    assert_eq!(not_yet.map(|_| ()).map_err(|e| e.code), Err(Code::WorkspaceNotConfigured));
    init(&store, &ws, example(), &operator()).await.expect("init");
    let same = update(&store, &ws, example(), &operator()).await.expect("update");
    assert!(matches!(&same, Updated::Unchanged(v) if v.version == 1), "{same:?}");
    let mut changed = example();
    changed.mode = WorkspaceMode::Production;
    changed.call_to_action = "Visit us.".into();
    let Updated::Changed(second) = update(&store, &ws, changed.clone(), &operator()).await.expect("update") else {
        panic!("a changed configuration must make a new version");
    };
    assert_eq!(second.version, 2);
    assert_eq!(current(&store, &ws).await.expect("current").config, changed);
    // Version 1 is still there, unchanged: a job that recorded it reads it.
    let job = Job::ingested(
        "job-1".parse().expect("id"),
        ws.clone(),
        1,
        "src-1".parse().expect("id"),
        "t".into(),
        Utc::now(),
    );
    assert_eq!(version_of_job(&store, &job).await.expect("v1").config, example());
    let stored = harmonia_store::scan_all(&store, &ws, WORKSPACE_VERSIONS).await.expect("scan");
    let ids: Vec<&str> = stored.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["000001", "000002"]);
}
