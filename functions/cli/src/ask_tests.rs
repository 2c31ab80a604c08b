//! Must show (issue 11): after `harmonia demo`, three `harmonia ask` questions leave every
//! document but the activity records exactly as they were (compared over a full dump of every
//! collection of every workspace in the data dir's store).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use harmonia_contracts::ids::WorkspaceId;
use harmonia_local::Local;

use crate::app::{self, Output};

/// (workspace, collection, id) → (version, data) for every stored document.
type Dump = BTreeMap<(String, String, String), (i64, String)>;

fn dump(file: &Path) -> Dump {
    let conn = harmonia_store_sqlite::open_connection(file).expect("open the store file");
    // Lasting documents and short-lived ones (each in its own table).
    let mut stmt = conn
        .prepare(
            "SELECT workspace, collection, id, version, data FROM documents
             UNION ALL SELECT workspace, collection, id, version, data FROM short_lived",
        )
        .expect("prepare the dump");
    let rows = stmt
        .query_map([], |r| Ok(((r.get(0)?, r.get(1)?, r.get(2)?), (r.get(3)?, r.get(4)?))))
        .expect("dump every document");
    rows.map(|r| r.expect("a row")).collect()
}

fn split(all: Dump) -> (Dump, usize) {
    let (activity, rest): (Dump, Dump) = all.into_iter().partition(|((_, collection, _), _)| collection == "activity");
    (rest, activity.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_the_demo_three_questions_change_nothing_but_activity_records() {
    let dir = harmonia_testkit::temp_dir();
    let data_dir = dir.path().join("demo");
    let local = Local::open(&data_dir).await.expect("open");
    let out = Output { json: true };
    app::demo(&local, &out, &data_dir).await.expect("the demo verifies its post");
    local.settle(Duration::from_secs(60)).await.expect("settle");
    let file = data_dir.join("harmonia.sqlite");
    let (before, activity_before) = split(dump(&file));
    assert!(before.keys().any(|(_, c, _)| c == "post_metrics"), "the demo loaded its sample metrics");

    let ws: WorkspaceId = "demo".parse().expect("id");
    for question in ["What is pending in the feed?", "Which post performed best?", "When should we post next?"] {
        app::ask(&local, &out, &ws, question).await.expect("Nova answers");
    }
    local.settle(Duration::from_secs(60)).await.expect("settle");
    let (after, activity_after) = split(dump(&file));
    assert_eq!(before, after, "ask changed a document other than its activity records");
    assert!(activity_after >= activity_before + 3, "each question leaves its activity record");
}

#[tokio::test]
async fn ask_in_a_fresh_workspace_seeds_nothing() {
    let dir = harmonia_testkit::temp_dir();
    let local = Local::open(dir.path()).await.expect("open");
    let ws: WorkspaceId = "default".parse().expect("id");
    let before = split(dump(&dir.path().join("harmonia.sqlite"))).0;
    // Nova refuses or answers; either way the operator's store gains no sample data.
    let _answered = app::ask(&local, &Output { json: true }, &ws, "Which post performed best?").await;
    let after = split(dump(&dir.path().join("harmonia.sqlite"))).0;
    assert_eq!(before, after);
}
