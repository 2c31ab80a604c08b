use harmonia_contracts::Code;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use harmonia_contracts::ids::{DocId, WorkspaceId};
use harmonia_store::{Collection, Direction, Document, Query, Store, Write, WriteOp};
use rusqlite::Connection;
use serde_json::{Map, Value};

use crate::checkpoint::*;
use crate::format::*;
use crate::pool::*;
use crate::store::*;

/// A store in a fresh directory, with the directory's guard: the suite keeps it alive
/// until the case ends, then the file is removed.
async fn shared() -> (Arc<dyn Store>, harmonia_testkit::TempDir) {
    let dir = harmonia_testkit::temp_dir();
    let store = SqliteStore::open(dir.path().join("conformance.sqlite")).expect("open");
    (Arc::new(store), dir)
}

harmonia_store::store_conformance!(shared());

/// A data file of an older layout `version` at `path`: the lasting documents' table and indexes,
/// the tables `extra` creates, and the one row `row` inserts.
fn older_file(path: &std::path::Path, version: i32, extra: &str, row: &str) {
    let conn = Connection::open(path).expect("an older file");
    conn.execute_batch(SCHEMA)
        .and_then(|()| conn.execute_batch(INDEXES))
        .and_then(|()| conn.execute_batch(extra))
        .expect("the older layout");
    conn.pragma_update(None, "application_id", APPLICATION_ID).expect("stamp");
    conn.pragma_update(None, "user_version", version).expect("its version");
    conn.execute(row, []).expect("its row");
}

/// Short-lived documents are rows of their own table, never of `documents`, and a data file
/// of layout 3 (which has no such table) gains it when opened, every lasting row kept; the
/// check reads both tables.
#[tokio::test]
async fn short_lived_documents_are_kept_in_a_table_of_their_own() {
    let dir = harmonia_testkit::temp_dir();
    let path = dir.path().join("v3.sqlite");
    older_file(
        &path,
        3,
        "",
        "INSERT INTO documents VALUES ('ws-1', 'notes', 'kept', 1, '2026-01-01T00:00:00.000000Z', '{}', NULL)",
    );

    let store = SqliteStore::open(&path).expect("a v3 file opens");
    let ws: WorkspaceId = "ws-1".parse().expect("ws");
    let (brief, notes) = (Collection::short_lived("brief"), Collection::new("notes"));
    let data = serde_json::json!({"job": "j1"}).as_object().cloned().unwrap_or_default();
    let create = |collection| Write { collection, id: "d".parse().expect("id"), op: WriteOp::Create(data.clone()) };
    store.commit(&ws, vec![create(brief)]).await.expect("a short-lived document");
    store.commit(&ws, vec![create(Collection::new("lasting"))]).await.expect("a lasting document");
    let conn = Connection::open(&path).expect("read the file");
    let rows = |table: &str| -> Vec<String> {
        let mut stmt = conn.prepare(&format!("SELECT collection || '/' || id FROM {table} ORDER BY 1")).expect("rows");
        stmt.query_map([], |r| r.get(0)).expect("rows").collect::<Result<_, _>>().expect("rows")
    };
    assert_eq!(rows("short_lived"), ["brief/d"]);
    assert_eq!(rows("documents"), ["lasting/d", "notes/kept"]);
    let version: i32 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).expect("version");
    assert_eq!(version, LAYOUT_VERSION);
    assert!(store.get(&ws, notes, &"kept".parse().expect("id")).await.expect("get").is_some());

    conn.execute("UPDATE short_lived SET data = '[1]' WHERE id = 'd'", []).expect("spoil the row");
    let check = store.check().await.expect("check");
    assert_eq!(check.unreadable, [("ws-1".to_owned(), "brief".to_owned(), "d".to_owned())]);
}

/// A data file of layout 4 (short-lived documents in a rowid table with an index on their key)
/// is brought to layout 5 when opened: the table is rebuilt keyed by its own key, its rows
/// kept and readable, and the store writes and deletes in it as before.
#[tokio::test]
async fn a_layout_four_file_keys_its_short_lived_table_by_its_own_key() {
    let dir = harmonia_testkit::temp_dir();
    let path = dir.path().join("v4.sqlite");
    let v4_short_lived = "CREATE TABLE short_lived (workspace TEXT NOT NULL, collection TEXT NOT NULL,
        id TEXT NOT NULL, version INTEGER NOT NULL, updated_at TEXT NOT NULL, data TEXT NOT NULL, job TEXT,
        UNIQUE (workspace, collection, id));";
    older_file(
        &path,
        4,
        v4_short_lived,
        "INSERT INTO short_lived VALUES ('ws-1', 'brief', 'open', 3, '2026-01-01T00:00:00.000000Z', '{\"n\":1}', NULL)",
    );

    let store = SqliteStore::open(&path).expect("a v4 file opens");
    let ws: WorkspaceId = "ws-1".parse().expect("ws");
    let brief = Collection::short_lived("brief");
    let kept = store.get(&ws, brief, &"open".parse().expect("id")).await.expect("get").expect("the row is kept");
    assert_eq!((kept.version, kept.data.get("n")), (3, Some(&Value::from(1))));
    let conn = Connection::open(&path).expect("read the file");
    let (table, version): (String, i32) = conn
        .query_row("SELECT sql FROM sqlite_master WHERE name = 'short_lived'", [], |r| r.get(0))
        .and_then(|sql| Ok((sql, conn.pragma_query_value(None, "user_version", |r| r.get(0))?)))
        .expect("the layout");
    assert!(table.contains("WITHOUT ROWID"), "{table}");
    assert_eq!(version, LAYOUT_VERSION);
    let delete =
        Write { collection: brief, id: "open".parse().expect("id"), op: WriteOp::Delete { expected_version: Some(3) } };
    store.commit(&ws, vec![delete]).await.expect("deleted where it now lives");
    assert!(store.get(&ws, brief, &"open".parse().expect("id")).await.expect("get").is_none());
}

/// A data file of layout version 1 (a `WITHOUT ROWID` table, no `job` column) is brought to
/// the current layout when opened — and when restored from a backup — every row kept, and
/// its documents are found by job.
#[tokio::test]
async fn a_version_one_file_gains_the_job_index_when_opened_or_restored() {
    let dir = harmonia_testkit::temp_dir();
    let old = dir.path().join("v1.sqlite");
    let conn = Connection::open(&old).expect("v1 file");
    conn.execute_batch(
        "CREATE TABLE documents (workspace TEXT NOT NULL, collection TEXT NOT NULL, id TEXT NOT NULL,
           version INTEGER NOT NULL, updated_at TEXT NOT NULL, data TEXT NOT NULL,
           PRIMARY KEY (workspace, collection, id)) WITHOUT ROWID;
         PRAGMA user_version = 1;",
    )
    .expect("v1 layout");
    conn.pragma_update(None, "application_id", APPLICATION_ID).expect("stamp");
    for (id, data) in [("a", r#"{"job":"j1","n":1}"#), ("b", r#"{"job":"j2"}"#), ("c", r#"{"job":7}"#)] {
        conn.execute(
            "INSERT INTO documents VALUES ('ws-1', 'markers', ?1, 1, '2026-01-01T00:00:00.000000Z', ?2)",
            [id, data],
        )
        .expect("v1 row");
    }
    drop(conn);
    let backup = dir.path().join("v1-backup.sqlite");
    std::fs::copy(&old, &backup).expect("keep a v1 copy as a backup");

    let ws: WorkspaceId = "ws-1".parse().expect("ws");
    let markers = Collection::new("markers");
    let by_job = |job: &str| Query::all(10).filter("job", job).expect("filter");
    let ids = |docs: Vec<Document>| docs.into_iter().map(|d| d.id.to_string()).collect::<Vec<_>>();
    let store = SqliteStore::open(&old).expect("a v1 file opens");
    assert_eq!(ids(store.query(&ws, markers, &by_job("j1")).await.expect("query")), ["a"]);
    // Only a string `job` is indexed: a number is no job id.
    assert!(store.query(&ws, markers, &by_job("7")).await.expect("query").is_empty());
    let version: i32 =
        Connection::open(&old).and_then(|c| c.pragma_query_value(None, "user_version", |r| r.get(0))).expect("version");
    assert_eq!(version, LAYOUT_VERSION);
    let table: String = Connection::open(&old)
        .and_then(|c| c.query_row("SELECT sql FROM sqlite_master WHERE name = 'documents'", [], |r| r.get(0)))
        .expect("the table");
    assert!(!table.contains("WITHOUT ROWID"), "{table}");
    let all = store.query(&ws, markers, &Query::all(10)).await.expect("query");
    assert_eq!(all.iter().map(|d| d.data.clone()).collect::<Vec<_>>().len(), 3, "every row is kept");
    assert_eq!(all[0].data.get("n"), Some(&Value::from(1)));

    // A new write keeps the column; a restored v1 backup is migrated too.
    let write = Write {
        collection: markers,
        id: "d".parse().expect("id"),
        op: WriteOp::Create(serde_json::json!({"job": "j1"}).as_object().cloned().unwrap_or_default()),
    };
    store.commit(&ws, vec![write]).await.expect("write");
    assert_eq!(ids(store.query(&ws, markers, &by_job("j1")).await.expect("query")), ["a", "d"]);
    store.restore(&backup).await.expect("restore a v1 backup");
    assert_eq!(ids(store.query(&ws, markers, &by_job("j2")).await.expect("query")), ["b"]);
    assert_eq!(ids(store.query(&ws, markers, &by_job("j1")).await.expect("query")), ["a"]);
}

#[tokio::test]
async fn documents_survive_reopening_the_file() {
    let dir = harmonia_testkit::temp_dir();
    let path = dir.path().join("durable.sqlite");
    let ws: WorkspaceId = "ws-1".parse().expect("ws");
    let id: DocId = "d".parse().expect("id");
    let things = Collection::new("things");
    {
        let s = SqliteStore::open(&path).expect("open");
        let data = serde_json::json!({"kept": true}).as_object().cloned().unwrap_or_default();
        harmonia_store::create_if_absent(&s, &ws, things, &id, data).await.expect("create");
    }
    let s = SqliteStore::open(&path).expect("reopen");
    let doc = s.get(&ws, things, &id).await.expect("get").expect("present");
    assert_eq!(doc.data.get("kept"), Some(&Value::Bool(true)));
}

/// A data file opened for reading only answers every read and refuses every write as a disk
/// that cannot be written, changing nothing; opened as immutable (no shared-memory index, as on
/// a read-only mount) from a folder whose name SQLite's URIs would misread, it reads the same.
#[tokio::test]
async fn a_file_opened_for_reading_only_reads_everything_and_writes_nothing() {
    let dir = harmonia_testkit::temp_dir();
    let folder = dir.path().join("backup ?#%é");
    std::fs::create_dir(&folder).expect("folder");
    let path = folder.join("harmonia.sqlite");
    let ws: WorkspaceId = "ws-1".parse().expect("ws");
    let things = Collection::new("things");
    let data = |n: i64| serde_json::json!({ "n": n }).as_object().cloned().unwrap_or_default();
    {
        let s = SqliteStore::open(&path).expect("open");
        for n in 0..3 {
            let id: DocId = format!("d{n}").parse().expect("id");
            harmonia_store::create_if_absent(&s, &ws, things, &id, data(n)).await.expect("create");
        }
    }
    let before = std::fs::read(&path).expect("bytes");
    let reading = SqliteStore::open_read_only(&path).expect("open read-only");
    let all = reading.query(&ws, things, &Query::all(10)).await.expect("query");
    assert_eq!(all.len(), 3);
    let id: DocId = "d9".parse().expect("id");
    let refused = harmonia_store::create_if_absent(&reading, &ws, things, &id, data(9)).await.expect_err("write");
    assert_eq!(refused.code(), Code::StorageReadOnly, "{refused}");
    drop(reading);
    assert_eq!(std::fs::read(&path).expect("bytes"), before, "nothing changed");

    // What a read-only mount leaves: the file alone, no log or index beside it.
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(with_suffix(&path, suffix));
    }
    let conn = Connection::open_with_flags(
        immutable_uri(&path),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .expect("immutable");
    let n: i64 = conn.query_row("SELECT count(*) FROM documents", [], |r| r.get(0)).expect("count");
    assert_eq!(n, 3);
    assert!(!with_suffix(&path, "-shm").exists(), "no shared-memory index was made");

    // A file of an older layout is brought up to date only where it can be written.
    let old = folder.join("v3.sqlite");
    let conn = Connection::open(&old).expect("a v3 file");
    conn.execute_batch(SCHEMA).expect("layout");
    conn.pragma_update(None, "application_id", APPLICATION_ID).expect("stamp");
    conn.pragma_update(None, "user_version", 3).expect("v3");
    drop(conn);
    let e = SqliteStore::open_read_only(&old).map(|_| ()).expect_err("older layout");
    assert!(e.to_string().contains("older version"), "{e}");
}

/// A call runs inline while nothing is in its way; one that meets another process's
/// write lock does not fail and does not block the runtime's thread: it waits for the lock
/// in a blocking task and then goes through, leaving the other writer's work intact.
#[tokio::test(flavor = "current_thread")]
async fn a_call_that_meets_another_writers_lock_waits_for_it_off_the_runtime() {
    use std::future::Future as _;
    use std::task::Poll;

    let dir = harmonia_testkit::temp_dir();
    let path = dir.path().join("locked.sqlite");
    let store = SqliteStore::open(&path).expect("open");
    let ws: WorkspaceId = "ws-1".parse().expect("ws");
    let things = Collection::new("things");
    let data = |n: i64| serde_json::json!({ "n": n }).as_object().cloned().unwrap_or_default();
    let create =
        |id: &str, n: i64| Write { collection: things, id: id.parse().expect("id"), op: WriteOp::Create(data(n)) };
    store.commit(&ws, vec![create("free", 1)]).await.expect("a free file is written inline");

    // Another process takes the write lock and writes, without committing yet.
    let other = open_connection(&path).expect("another connection");
    other.execute_batch("BEGIN IMMEDIATE").expect("the other writer's lock");
    other
        .execute(
            "INSERT INTO documents (workspace, collection, id, version, updated_at, data) VALUES ('ws-1', 'things', 'theirs', 1, ?1, '{}')",
            [now_text()],
        )
        .expect("the other writer's row");

    let mut commit = std::pin::pin!(store.commit(&ws, vec![create("ours", 2)]));
    // The first poll tries inline, meets the lock and hands the call to a blocking task.
    let first = std::future::poll_fn(|cx| Poll::Ready(commit.as_mut().poll(cx))).await;
    assert!(first.is_pending(), "a call that meets a lock waits instead of failing: {first:?}");
    // Reads are not in the writer's way (WAL): they still run inline.
    let free = store.get(&ws, things, &"free".parse().expect("id")).await.expect("read");
    assert_eq!(free.map(|d| d.data), Some(data(1)));

    other.execute_batch("COMMIT").expect("the other writer commits");
    commit.await.expect("the waiting call goes through once the lock is released");
    for (id, n) in [("ours", Some(data(2))), ("theirs", Some(Map::new()))] {
        let doc = store.get(&ws, things, &id.parse().expect("id")).await.expect("get");
        assert_eq!(doc.map(|d| d.data), n, "{id}");
    }
}

fn refused(path: &Path) -> (Code, String) {
    let e = SqliteStore::open(path).expect_err("refused");
    let e = harmonia_contracts::Error::from(e);
    (e.code, e.message.into_owned())
}

#[test]
fn anything_but_a_harmonia_data_file_is_refused_naming_it_and_left_as_it_was() {
    let dir = harmonia_testkit::temp_dir();
    let foreign = dir.path().join("foreign.sqlite");
    Connection::open(&foreign).and_then(|c| c.execute_batch("CREATE TABLE notes (x TEXT);")).expect("foreign");
    let other_app = dir.path().join("other-app.sqlite");
    Connection::open(&other_app)
        .and_then(|c| c.execute_batch("CREATE TABLE documents (x TEXT); PRAGMA application_id = 42;"))
        .expect("another application's");
    let newer = dir.path().join("newer.sqlite");
    SqliteStore::open(&newer).expect("create");
    Connection::open(&newer).and_then(|c| c.pragma_update(None, "user_version", LAYOUT_VERSION + 1)).expect("age");
    let cases: [(&str, Option<&[u8]>, &str); 5] = [
        ("empty.sqlite", Some(b""), "the file is empty (0 bytes)"),
        ("garbage.sqlite", Some(&[0x5a; 8192]), "SQLite reports the file damaged or not a database"),
        ("foreign.sqlite", None, "it is an empty or foreign SQLite database"),
        ("other-app.sqlite", None, "it is another application's SQLite database"),
        ("newer.sqlite", None, "it was written by a newer version of Harmonia"),
    ];
    for (name, bytes, reason) in cases {
        let path = dir.path().join(name);
        if let Some(bytes) = bytes {
            std::fs::write(&path, bytes).expect("write");
        }
        let before = std::fs::read(&path).expect("read");
        let (code, message) = refused(&path);
        assert_eq!(code, Code::StoreCorrupt, "{name}");
        assert!(message.contains(&path.display().to_string()) && message.contains(reason), "{name}: {message}");
        let unchanged = std::fs::read(&path).expect("read") == before;
        assert!(unchanged, "{name} is left exactly as it was");
    }
}

#[tokio::test]
async fn a_data_file_from_before_the_stamp_is_adopted_and_a_new_one_is_stamped() {
    let dir = harmonia_testkit::temp_dir();
    let old = dir.path().join("old.sqlite");
    Connection::open(&old).and_then(|c| c.execute_batch(SCHEMA)).expect("an unstamped data file");
    SqliteStore::open(&old).expect("adopted");
    let fresh = dir.path().join("fresh.sqlite");
    SqliteStore::open(&fresh).expect("created");
    for path in [old, fresh] {
        let c = Connection::open(&path).expect("open");
        let app: i32 = c.pragma_query_value(None, "application_id", |r| r.get(0)).expect("id");
        assert_eq!(app, APPLICATION_ID);
    }
    // No temporary file is left beside the data file.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("dir")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.ends_with(".new"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

#[tokio::test]
async fn one_unreadable_row_hides_nothing_else_and_the_check_names_it() {
    let dir = harmonia_testkit::temp_dir();
    let path = dir.path().join("rows.sqlite");
    let store = SqliteStore::open(&path).expect("open");
    let ws: WorkspaceId = "ws-1".parse().expect("ws");
    let jobs = Collection::new("jobs");
    for n in 1..=3 {
        let data = serde_json::json!({"job": format!("j{n}"), "rank": n}).as_object().cloned().unwrap_or_default();
        let id: DocId = format!("j{n}").parse().expect("id");
        harmonia_store::create_if_absent(&store, &ws, jobs, &id, data).await.expect("create");
    }
    Connection::open(&path)
        .and_then(|c| c.execute("UPDATE documents SET data = '{not json' WHERE id = 'j2'", []))
        .expect("damage one row");
    let before = harmonia_store::undecodable_documents();
    let ids = |docs: Vec<Document>| docs.into_iter().map(|d| d.id.to_string()).collect::<Vec<_>>();
    let all = store.query(&ws, jobs, &Query::all(10)).await.expect("a listing");
    assert_eq!(ids(all), ["j1", "j3"]);
    let ordered = Query::all(10).order_by("rank", Direction::Descending).expect("order");
    assert_eq!(ids(store.query(&ws, jobs, &ordered).await.expect("ordered")), ["j3", "j1"]);
    let filtered = Query::all(10).filter("job", "j3").expect("filter");
    assert_eq!(ids(store.query(&ws, jobs, &filtered).await.expect("filtered")), ["j3"]);
    assert!(harmonia_store::undecodable_documents() > before, "skipped rows are counted");
    let check = store.check().await.expect("check");
    assert_eq!(check.integrity, ["ok"]);
    assert_eq!(check.unreadable, [("ws-1".to_owned(), "jobs".to_owned(), "j2".to_owned())]);
}

#[tokio::test]
async fn a_backup_restores_the_data_file_exactly() {
    let dir = harmonia_testkit::temp_dir();
    let store = SqliteStore::open(dir.path().join("live.sqlite")).expect("open");
    let ws: WorkspaceId = "ws-1".parse().expect("ws");
    let things = Collection::new("things");
    let put = |n: u32| serde_json::json!({"n": n}).as_object().cloned().unwrap_or_default();
    let id: DocId = "kept".parse().expect("id");
    harmonia_store::create_if_absent(&store, &ws, things, &id, put(1)).await.expect("create");
    let backup = dir.path().join("backup.sqlite");
    store.backup(&backup).await.expect("backup");
    assert!(store.backup(&backup).await.is_err(), "a backup never overwrites a file");
    // Work after the backup: a change and a new document, then the restore undoes both.
    let doc = store.get(&ws, things, &id).await.expect("get").expect("present");
    harmonia_store::update(&store, &ws, things, &id, put(2), doc.version).await.expect("update");
    let later: DocId = "later".parse().expect("id");
    harmonia_store::create_if_absent(&store, &ws, things, &later, put(3)).await.expect("create");
    store.restore(&backup).await.expect("restore");
    let doc = store.get(&ws, things, &id).await.expect("get").expect("present");
    assert_eq!(doc.data.get("n"), Some(&Value::from(1)));
    assert!(store.get(&ws, things, &later).await.expect("get").is_none());
    // Only a Harmonia backup restores, and a refused one changes nothing.
    let foreign = dir.path().join("foreign.sqlite");
    Connection::open(&foreign).and_then(|c| c.execute_batch("CREATE TABLE notes (x TEXT);")).expect("foreign");
    let e = harmonia_contracts::Error::from(store.restore(&foreign).await.expect_err("refused"));
    assert_eq!(e.code, Code::StoreCorrupt);
    assert!(store.get(&ws, things, &id).await.expect("get").is_some());
}

/// A backup whose page size is not the data file's (an older version's, or from a file an
/// older version made) restores all the same, converted on the way; the backup is left as
/// it was and no copy is left beside the data file.
#[tokio::test]
async fn a_backup_of_another_page_size_restores_either_way() {
    let dir = harmonia_testkit::temp_dir();
    let ws: WorkspaceId = "ws-1".parse().expect("ws");
    let things = Collection::new("things");
    let page_size = |p: &Path| {
        Connection::open(p).and_then(|c| c.pragma_query_value(None, "page_size", |r| r.get::<_, i64>(0))).expect("size")
    };
    let body =
        |n: u32| serde_json::json!({"n": n, "body": "words ".repeat(2000)}).as_object().cloned().unwrap_or_default();
    let new_file = dir.path().join("new.sqlite");
    let store = SqliteStore::open(&new_file).expect("open");
    assert_eq!(page_size(&new_file), PAGE_SIZE, "a new data file has this build's page size");
    for n in 0..20 {
        harmonia_store::create_if_absent(&store, &ws, things, &format!("d{n}").parse().expect("id"), body(n))
            .await
            .expect("create");
    }
    // The same content at 4096-byte pages, as a version before PAGE_SIZE wrote it.
    let old_backup = dir.path().join("old-backup.sqlite");
    store.backup(&old_backup).await.expect("backup");
    Connection::open(&old_backup)
        .and_then(|c| c.execute_batch("PRAGMA journal_mode = DELETE; PRAGMA page_size = 4096; VACUUM;"))
        .expect("rebuild at 4096");
    assert_eq!(page_size(&old_backup), 4096);
    let untouched = std::fs::read(&old_backup).expect("read");
    // Into this build's file, which has moved on since.
    harmonia_store::create_if_absent(&store, &ws, things, &"later".parse().expect("id"), body(99))
        .await
        .expect("create");
    store.restore(&old_backup).await.expect("restore a 4096-byte backup");
    assert!(store.get(&ws, things, &"later".parse().expect("id")).await.expect("get").is_none());
    for n in 0..20 {
        let doc = store.get(&ws, things, &format!("d{n}").parse().expect("id")).await.expect("get").expect("present");
        assert_eq!(doc.data, body(n));
    }
    assert_eq!(std::fs::read(&old_backup).expect("read"), untouched, "the backup is only read");
    assert_eq!(page_size(&new_file), PAGE_SIZE);
    assert_eq!(store.check().await.expect("check").integrity, ["ok"]);
    // And a backup of this build's file into a data file an older version made.
    let old_file = dir.path().join("old.sqlite");
    std::fs::copy(&old_backup, &old_file).expect("an older data file");
    let older = SqliteStore::open(&old_file).expect("open the older file");
    let new_backup = dir.path().join("new-backup.sqlite");
    store.backup(&new_backup).await.expect("backup");
    assert_eq!(page_size(&new_backup), PAGE_SIZE);
    harmonia_store::create_if_absent(&older, &ws, things, &"stray".parse().expect("id"), body(7))
        .await
        .expect("create");
    older.restore(&new_backup).await.expect("restore into the older file");
    assert!(older.get(&ws, things, &"stray".parse().expect("id")).await.expect("get").is_none());
    assert_eq!(older.get(&ws, things, &"d3".parse().expect("id")).await.expect("get").expect("present").data, body(3));
    assert_eq!(page_size(&old_file), 4096, "an existing file keeps its page size");
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .expect("list")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.contains(".resize"))
        .collect();
    assert!(left.is_empty(), "no converted copy is left behind: {left:?}");
}

/// Under commits that never pause (two writers, one always waiting for the other), the
/// write-ahead log is started again from its beginning (its checkpoint sequence, bytes
/// 12-16 of its header, moves on) instead of growing for as long as the commits go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_starts_again_under_commits_that_never_pause() {
    let dir = harmonia_testkit::temp_dir();
    let path = dir.path().join("busy.sqlite");
    let store = Arc::new(SqliteStore::open(&path).expect("open"));
    let ws: WorkspaceId = "ws-1".parse().expect("ws");
    let things = Collection::new("things");
    let log = PathBuf::from(format!("{}-wal", path.display()));
    let sequence = || {
        use std::io::Read;
        let mut header = [0_u8; 16];
        std::fs::File::open(&log).and_then(|mut f| f.read_exact(&mut header)).expect("the log's header");
        u32::from_be_bytes([header[12], header[13], header[14], header[15]])
    };
    let put = |n: u64| serde_json::json!({"n": n, "body": "x".repeat(2000)}).as_object().cloned().unwrap_or_default();
    harmonia_store::create_if_absent(&*store, &ws, things, &"0".parse().expect("id"), put(0)).await.expect("write");
    let first = sequence();
    // The writers stop when the log starts again, or after 20 s, whichever comes first.
    let started = std::time::Instant::now();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..2_u64)
        .map(|w| {
            let (store, ws, stop) = (store.clone(), ws.clone(), stop.clone());
            tokio::spawn(async move {
                let mut n = 0_u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed)
                    && started.elapsed() < std::time::Duration::from_secs(20)
                {
                    n += 1;
                    let id: DocId = format!("{w}-{}", n % 2000).parse().expect("id");
                    let write = Write { collection: things, id, op: WriteOp::Upsert(put(n)) };
                    store.commit(&ws, vec![write]).await.expect("write");
                    // A commit that went straight through never gave the thread back.
                    tokio::task::yield_now().await;
                }
                n
            })
        })
        .collect();
    while sequence() == first && writers.iter().any(|w| !w.is_finished()) {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut commits = 0;
    for w in writers {
        commits += w.await.expect("writer");
    }
    assert_ne!(sequence(), first, "the log grew through {commits} commits without starting again");
    let size = std::fs::metadata(&log).expect("the log").len();
    assert!(size <= u64::try_from(LOG_SIZE_LIMIT).expect("limit"), "{size} bytes of log");
}

/// A connection in memory with one counter, for the hand-over's cases.
fn counter() -> Blocking {
    let conn = Connection::open_in_memory().expect("memory");
    conn.execute_batch("CREATE TABLE n (v INTEGER NOT NULL); INSERT INTO n VALUES (0);").expect("counter");
    Blocking::new(conn)
}

fn lost(why: &'static str) -> String {
    why.to_owned()
}

/// A task that adds one to the counter.
fn increment(conn: &Blocking) -> tokio::task::JoinHandle<Result<usize, String>> {
    let conn = conn.clone();
    tokio::spawn(
        async move { conn.run(|c| c.execute("UPDATE n SET v = v + 1", []).map_err(|e| e.to_string()), lost).await },
    )
}

/// Calls that meet on the connection from two worker threads are handed to whichever holds
/// it: every one runs, and runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_handed_to_the_holder_all_run_once() {
    let conn = counter();
    let calls: Vec<_> = (0..2000).map(|_| increment(&conn)).collect();
    let all = async {
        for call in calls {
            call.await.expect("task").expect("call");
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), all).await.expect("no call is left waiting");
    let v = conn.run(|c| c.query_row("SELECT v FROM n", [], |r| r.get::<_, i64>(0)).map_err(|e| e.to_string()), lost);
    assert_eq!(v.await, Ok(2000));
    assert!(conn.0.handed.lock().expect("queue").is_empty());
}

/// A call that panics holding the connection loses it (its lock is poisoned); the calls
/// handed to it meanwhile fail with the loss instead of waiting for ever, and so do later
/// ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_panics_holding_the_connection_fails_the_calls_handed_to_it() {
    let conn = counter();
    let holding = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let panicking = tokio::spawn({
        let (conn, holding) = (conn.clone(), holding.clone());
        let shared = conn.0.clone();
        async move {
            conn.run(
                move |_| -> Result<(), String> {
                    holding.store(true, std::sync::atomic::Ordering::Release);
                    // Until three calls are handed to it.
                    while shared.handed.lock().map(|h| h.len()).unwrap_or(0) < 3 {
                        std::thread::yield_now();
                    }
                    panic!("a bug in a call");
                },
                lost,
            )
            .await
        }
    });
    while !holding.load(std::sync::atomic::Ordering::Acquire) {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    let handed: Vec<_> = (0..3).map(|_| increment(&conn)).collect();
    assert!(panicking.await.is_err(), "the call panicked");
    let all = async {
        let mut outcomes = Vec::new();
        for call in handed {
            outcomes.push(call.await.expect("task"));
        }
        outcomes
    };
    let outcomes = tokio::time::timeout(std::time::Duration::from_secs(60), all).await.expect("no call waits for ever");
    assert_eq!(outcomes, vec![Err("poisoned".to_owned()); 3]);
    assert_eq!(increment(&conn).await.expect("task"), Err("poisoned".to_owned()));
}
