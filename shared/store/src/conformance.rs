//! The conformance suite every [`Store`] backend runs unchanged.
//!
//! Each case takes a store and works in fresh, unique workspaces, so cases can share one
//! backend instance (one SQLite file, one emulator project). Backends instantiate the whole
//! suite with [`store_conformance!`](crate::store_conformance).

use std::sync::Arc;

use harmonia_contracts::ids::{DocId, WorkspaceId};
use serde_json::{Map, Value, json};

use crate::{
    Collection, Created, Direction, Error, Query, Store, Tx, Write, WriteOp, create_if_absent, create_immutable,
    run_transaction, update,
};

const THINGS: Collection = Collection::new("things");
const OTHERS: Collection = Collection::new("others");
const BRIEF: Collection = Collection::short_lived("brief");

fn ws() -> WorkspaceId {
    WorkspaceId::generate()
}

fn id(s: &str) -> DocId {
    s.parse().unwrap_or_else(|_| panic!("test id {s}"))
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_else(|| panic!("not an object: {v}"))
}

/// A missing document reads as `None`.
pub async fn get_missing_is_none(store: Arc<dyn Store>) {
    let got = store.get(&ws(), THINGS, &id("nope")).await.expect("get");
    assert!(got.is_none());
}

/// Created data reads back exactly, at version 1.
pub async fn create_then_get_round_trips_json(store: Arc<dyn Store>) {
    let w = ws();
    let data = obj(json!({
        "s": "héllo ✓", "n": 42, "neg": -7, "f": 1.5, "b": true, "null": null,
        "list": [1, "two", {"three": 3}], "nested": {"deep": {"x": "y"}}, "empty": {}
    }));
    let created = create_if_absent(&*store, &w, THINGS, &id("a"), data.clone()).await.expect("create");
    assert!(matches!(created, Created::New(_)));
    let doc = store.get(&w, THINGS, &id("a")).await.expect("get").expect("present");
    assert_eq!(doc.version, 1);
    assert_eq!(doc.data, data);
    assert_eq!(doc.id, id("a"));
}

/// create-if-absent twice leaves one document with the first data.
pub async fn create_if_absent_twice_yields_one_document(store: Arc<dyn Store>) {
    let w = ws();
    let first = create_if_absent(&*store, &w, THINGS, &id("k"), obj(json!({"v": 1}))).await.expect("first");
    let second = create_if_absent(&*store, &w, THINGS, &id("k"), obj(json!({"v": 2}))).await.expect("second");
    assert!(matches!(first, Created::New(_)));
    match second {
        Created::Existing(doc) => {
            assert_eq!(doc.data, obj(json!({"v": 1})));
            assert_eq!(doc.version, 1);
        }
        Created::New(_) => panic!("second create must find the first"),
    }
    let all = store.query(&w, THINGS, &Query::all(10)).await.expect("query");
    assert_eq!(all.len(), 1);
}

/// Racing create-if-absent calls: exactly one creates.
pub async fn concurrent_create_if_absent_yields_one_document(store: Arc<dyn Store>) {
    let w = ws();
    let mut tasks = Vec::new();
    for n in 0..8 {
        let (store, w) = (store.clone(), w.clone());
        tasks.push(tokio::spawn(async move {
            create_if_absent(&*store, &w, THINGS, &id("race"), obj(json!({"by": n}))).await
        }));
    }
    let mut new = 0;
    for t in tasks {
        if let Created::New(_) = t.await.expect("join").expect("create") {
            new += 1;
        }
    }
    assert_eq!(new, 1);
    assert_eq!(store.query(&w, THINGS, &Query::all(10)).await.expect("query").len(), 1);
}

/// An update naming an old version is refused and the stored document is untouched.
pub async fn stale_precondition_is_refused_and_nothing_changes(store: Arc<dyn Store>) {
    let w = ws();
    create_if_absent(&*store, &w, THINGS, &id("d"), obj(json!({"v": 1}))).await.expect("create");
    let v2 = update(&*store, &w, THINGS, &id("d"), obj(json!({"v": 2})), 1).await.expect("update");
    assert_eq!(v2, 2);
    let stale = update(&*store, &w, THINGS, &id("d"), obj(json!({"v": 3})), 1).await;
    assert!(matches!(stale, Err(Error::PreconditionFailed)), "{stale:?}");
    let doc = store.get(&w, THINGS, &id("d")).await.expect("get").expect("present");
    assert_eq!((doc.version, doc.data), (2, obj(json!({"v": 2}))));
}

/// Updating a missing document is `NotFound` and creates nothing.
pub async fn update_missing_is_not_found(store: Arc<dyn Store>) {
    let w = ws();
    let r = update(&*store, &w, THINGS, &id("ghost"), obj(json!({})), 1).await;
    assert!(matches!(r, Err(Error::NotFound)), "{r:?}");
    assert!(store.get(&w, THINGS, &id("ghost")).await.expect("get").is_none());
}

/// One failing precondition in a batch applies none of the batch.
pub async fn multi_document_commit_is_all_or_nothing(store: Arc<dyn Store>) {
    let w = ws();
    create_if_absent(&*store, &w, THINGS, &id("x"), obj(json!({"n": 1}))).await.expect("create");
    // Create `new` in OTHERS and update `x` in THINGS, expecting `x` at `version`.
    let writes = |version| {
        vec![
            Write { collection: OTHERS, id: id("new"), op: WriteOp::Create(obj(json!({"n": 1}))) },
            Write {
                collection: THINGS,
                id: id("x"),
                op: WriteOp::Update { data: obj(json!({"n": 2})), expected_version: version },
            },
        ]
    };
    let r = store.commit(&w, writes(9)).await;
    assert!(matches!(r, Err(Error::PreconditionFailed)), "{r:?}");
    assert!(store.get(&w, OTHERS, &id("new")).await.expect("get").is_none(), "partial commit");
    let x = store.get(&w, THINGS, &id("x")).await.expect("get").expect("x");
    assert_eq!((x.version, x.data), (1, obj(json!({"n": 1}))));
    // So does a create of a document that exists, after the batch's other writes.
    let again = vec![
        Write { collection: OTHERS, id: id("new"), op: WriteOp::Create(obj(json!({"n": 1}))) },
        Write { collection: THINGS, id: id("x"), op: WriteOp::Create(obj(json!({"n": 3}))) },
    ];
    let r = store.commit(&w, again).await;
    assert!(matches!(r, Err(Error::AlreadyExists)), "{r:?}");
    assert!(store.get(&w, OTHERS, &id("new")).await.expect("get").is_none(), "partial commit");
    let x = store.get(&w, THINGS, &id("x")).await.expect("get").expect("x");
    assert_eq!((x.version, x.data), (1, obj(json!({"n": 1}))));

    store.commit(&w, writes(1)).await.expect("commit");
    assert!(store.get(&w, OTHERS, &id("new")).await.expect("get").is_some());
    assert_eq!(store.get(&w, THINGS, &id("x")).await.expect("get").map(|d| d.version), Some(2));
}

/// N concurrent read-increment-write transactions on one counter lose nothing.
pub async fn concurrent_transactional_increments_lose_nothing(store: Arc<dyn Store>) {
    const N: u64 = 16;
    let w = ws();
    create_if_absent(&*store, &w, THINGS, &id("counter"), obj(json!({"n": 0}))).await.expect("create");
    let mut tasks = Vec::new();
    for _ in 0..N {
        let (store, w) = (store.clone(), w.clone());
        tasks.push(tokio::spawn(async move {
            let store = &*store;
            let w = &w;
            run_transaction(200, || async move {
                let mut tx = Tx::begin(store, w);
                let doc = tx.get(THINGS, &id("counter")).await?.ok_or(Error::NotFound)?;
                let n = doc.data.get("n").and_then(Value::as_u64).ok_or(Error::Corrupt)?;
                // A second document in the same transaction: both move together.
                let log = tx.get(OTHERS, &id("log")).await?;
                let entries = log.as_ref().and_then(|d| d.data.get("entries")).and_then(Value::as_u64).unwrap_or(0);
                tx.put(THINGS, &id("counter"), obj(json!({"n": n + 1})));
                tx.put(OTHERS, &id("log"), obj(json!({"entries": entries + 1})));
                tx.commit().await
            })
            .await
        }));
    }
    for t in tasks {
        t.await.expect("join").expect("transaction");
    }
    let counter = store.get(&w, THINGS, &id("counter")).await.expect("get").expect("counter");
    assert_eq!(counter.data.get("n"), Some(&json!(N)));
    assert_eq!(counter.version, N + 1);
    let log = store.get(&w, OTHERS, &id("log")).await.expect("get").expect("log");
    assert_eq!(log.data.get("entries"), Some(&json!(N)));
}

/// A transaction whose read changed underneath it fails with `Conflict`, writing nothing.
pub async fn transaction_detects_a_changed_read(store: Arc<dyn Store>) {
    let w = ws();
    create_if_absent(&*store, &w, THINGS, &id("guard"), obj(json!({"open": true}))).await.expect("create");
    let mut tx = Tx::begin(&*store, &w);
    tx.get(THINGS, &id("guard")).await.expect("read");
    tx.put(OTHERS, &id("effect"), obj(json!({"done": true})));
    update(&*store, &w, THINGS, &id("guard"), obj(json!({"open": false})), 1).await.expect("concurrent");
    let r = tx.commit().await;
    assert!(matches!(r, Err(Error::Conflict)), "{r:?}");
    assert!(store.get(&w, OTHERS, &id("effect")).await.expect("get").is_none());
}

/// Equality filter, order (both directions), limit; documents without the order field are
/// left out.
pub async fn query_filters_orders_and_limits(store: Arc<dyn Store>) {
    let w = ws();
    let rows = [
        ("a", json!({"status": "open", "rank": 3, "meta": {"day": "2026-01-03"}})),
        ("b", json!({"status": "open", "rank": 1, "meta": {"day": "2026-01-01"}})),
        ("c", json!({"status": "closed", "rank": 2, "meta": {"day": "2026-01-02"}})),
        ("d", json!({"status": "open", "rank": 10, "meta": {"day": "2026-01-10"}})),
        ("e", json!({"status": "open"})),
        ("f", json!({"status": "OPEN", "rank": 0})),
    ];
    for (k, v) in rows {
        create_if_absent(&*store, &w, THINGS, &id(k), obj(v)).await.expect("create");
    }
    let ids = |docs: Vec<crate::Document>| docs.into_iter().map(|d| d.id.to_string()).collect::<Vec<_>>();

    let q = Query::all(10).filter("status", "open").expect("f").order_by("rank", Direction::Ascending).expect("o");
    assert_eq!(ids(store.query(&w, THINGS, &q).await.expect("q")), ["b", "a", "d"]);

    let q = Query::all(2).filter("status", "open").expect("f").order_by("rank", Direction::Descending).expect("o");
    assert_eq!(ids(store.query(&w, THINGS, &q).await.expect("q")), ["d", "a"]);

    let q = Query::all(10).order_by("meta.day", Direction::Descending).expect("o");
    assert_eq!(ids(store.query(&w, THINGS, &q).await.expect("q")), ["d", "a", "c", "b"]);

    let q = Query::all(10).filter("rank", 2).expect("f");
    assert_eq!(ids(store.query(&w, THINGS, &q).await.expect("q")), ["c"]);

    let q = Query::all(10).filter("rank", "2").expect("f");
    assert!(store.query(&w, THINGS, &q).await.expect("q").is_empty(), "types are compared");

    let q = Query::all(10).filter("status", "open").expect("f").filter("rank", 10).expect("f");
    assert_eq!(ids(store.query(&w, THINGS, &q).await.expect("q")), ["d"]);

    assert_eq!(store.query(&w, THINGS, &Query::all(100)).await.expect("q").len(), 6);
    assert!(store.query(&w, OTHERS, &Query::all(100)).await.expect("q").is_empty());
}

/// The same collection and id in two workspaces are two documents; reads never cross.
pub async fn workspaces_are_isolated(store: Arc<dyn Store>) {
    let (a, b) = (ws(), ws());
    create_if_absent(&*store, &a, THINGS, &id("same"), obj(json!({"owner": "a"}))).await.expect("a");
    assert!(store.get(&b, THINGS, &id("same")).await.expect("get").is_none());
    assert!(store.query(&b, THINGS, &Query::all(100)).await.expect("q").is_empty());
    let q = Query::all(100).filter("owner", "a").expect("f");
    assert!(store.query(&b, THINGS, &q).await.expect("q").is_empty());
    create_if_absent(&*store, &b, THINGS, &id("same"), obj(json!({"owner": "b"}))).await.expect("b");
    let in_a = store.get(&a, THINGS, &id("same")).await.expect("get").expect("a doc");
    assert_eq!(in_a.data.get("owner"), Some(&json!("a")));
    let all_a = store.query(&a, THINGS, &Query::all(100)).await.expect("q");
    assert_eq!(all_a.len(), 1);
    assert_eq!(all_a[0].data.get("owner"), Some(&json!("a")));
}

/// Delete with a stale version is refused; with the right one it removes the document.
pub async fn delete_respects_preconditions(store: Arc<dyn Store>) {
    let w = ws();
    create_if_absent(&*store, &w, THINGS, &id("del"), obj(json!({}))).await.expect("create");
    let stale = store
        .commit(
            &w,
            vec![Write { collection: THINGS, id: id("del"), op: WriteOp::Delete { expected_version: Some(7) } }],
        )
        .await;
    assert!(matches!(stale, Err(Error::PreconditionFailed)), "{stale:?}");
    store
        .commit(
            &w,
            vec![Write { collection: THINGS, id: id("del"), op: WriteOp::Delete { expected_version: Some(1) } }],
        )
        .await
        .expect("delete");
    assert!(store.get(&w, THINGS, &id("del")).await.expect("get").is_none());
    // A recreated document starts again at version 1.
    let again = create_if_absent(&*store, &w, THINGS, &id("del"), obj(json!({}))).await.expect("recreate");
    assert_eq!(again.document().version, 1);
    // Without a version, a delete removes what is there, and deleting nothing succeeds.
    let unconditional =
        || vec![Write { collection: THINGS, id: id("del"), op: WriteOp::Delete { expected_version: None } }];
    store.commit(&w, unconditional()).await.expect("delete");
    assert!(store.get(&w, THINGS, &id("del")).await.expect("get").is_none());
    store.commit(&w, unconditional()).await.expect("deleting nothing");
}

/// Bad limits, duplicate writes, empty and oversized batches are `Invalid`, storing nothing.
pub async fn invalid_requests_are_refused(store: Arc<dyn Store>) {
    let w = ws();
    assert!(matches!(store.query(&w, THINGS, &Query::all(0)).await, Err(Error::Invalid(_))));
    assert!(matches!(store.query(&w, THINGS, &Query::all(1001)).await, Err(Error::Invalid(_))));
    assert!(matches!(store.commit(&w, vec![]).await, Err(Error::Invalid(_))));
    let dup = vec![
        Write { collection: THINGS, id: id("z"), op: WriteOp::Create(Map::new()) },
        Write { collection: THINGS, id: id("z"), op: WriteOp::Upsert(Map::new()) },
    ];
    assert!(matches!(store.commit(&w, dup).await, Err(Error::Invalid(_))));
    let big = obj(json!({"blob": "x".repeat(crate::MAX_DOCUMENT_BYTES)}));
    let r = store.commit(&w, vec![Write { collection: THINGS, id: id("big"), op: WriteOp::Create(big) }]).await;
    assert!(matches!(r, Err(Error::Invalid(_))), "{r:?}");
    assert!(store.query(&w, THINGS, &Query::all(10)).await.expect("q").is_empty());
}

/// A scan pages through a collection in id order and misses nothing; a cursor continues
/// strictly after its id; filters hold across pages.
pub async fn scan_reads_past_every_page(store: Arc<dyn Store>) {
    let w = ws();
    let mut writes = Vec::new();
    for i in 0..25 {
        let data = obj(json!({"i": i, "even": i % 2 == 0}));
        writes.push(Write { collection: THINGS, id: id(&format!("d{i:03}")), op: WriteOp::Create(data) });
    }
    store.commit(&w, writes).await.expect("commit");
    let all = crate::scan(&*store, &w, THINGS, Query::all(4)).await.expect("scan");
    let ids: Vec<String> = all.iter().map(|d| d.id.to_string()).collect();
    let expected: Vec<String> = (0..25).map(|i| format!("d{i:03}")).collect();
    assert_eq!(ids, expected);
    let page = store.query(&w, THINGS, &Query::all(3).after(id("d010"))).await.expect("page");
    assert_eq!(page.iter().map(|d| d.id.to_string()).collect::<Vec<_>>(), ["d011", "d012", "d013"]);
    let even = crate::scan(&*store, &w, THINGS, Query::all(5).filter("even", true).expect("f")).await.expect("scan");
    assert_eq!(even.len(), 13);
    assert!(
        crate::scan(&*store, &w, THINGS, Query::all(5).order_by("i", Direction::Ascending).expect("o")).await.is_err()
    );
    assert_eq!(crate::scan_all(&*store, &w, THINGS).await.expect("all").len(), 25);
}

/// Times written by the contracts' types (through [`crate::encode`]) order by time, not by
/// their string form: `…13.486Z` and `…13.4861Z` written by a variable-fraction format would
/// sort the wrong way round (`Z` sorts after every digit), and "the newest planning snapshot"
/// would be the wrong one.
pub async fn times_written_by_contract_types_order_as_times(store: Arc<dyn Store>) {
    use harmonia_contracts::domain::PlanningSnapshot;

    const SNAPSHOTS: Collection = Collection::new("planning_snapshots");
    let w = ws();
    // Inserted out of order; each differs from another only in its fraction's length.
    let times = [
        "2026-03-01T09:30:13.486Z",
        "2026-03-01T09:30:13.4861Z",
        "2026-03-01T09:30:13Z",
        "2026-03-01T09:30:13.486000001Z",
        "2026-03-01T09:30:12.999999999Z",
    ];
    for (n, t) in times.iter().enumerate() {
        let snapshot = PlanningSnapshot {
            id: format!("snap-{n}").parse().expect("snapshot id"),
            workspace: w.clone(),
            taken_at: harmonia_contracts::time::parse(t).expect("a time"),
            commitments: Vec::new(),
            capacity: Vec::new(),
            asset_readiness: Vec::new(),
            posting_windows: Vec::new(),
            calendar: Vec::new(),
            blocked_dependencies: Vec::new(),
        };
        let data = crate::encode(&snapshot).expect("encode");
        create_if_absent(&*store, &w, SNAPSHOTS, &id(&format!("snap-{n}")), data).await.expect("create");
    }
    let mut want: Vec<_> = times.iter().map(|t| harmonia_contracts::time::parse(t).expect("a time")).collect();
    want.sort();
    for direction in [Direction::Ascending, Direction::Descending] {
        let query = Query::all(10).order_by("taken_at", direction).expect("order");
        let got: Vec<_> = store
            .query(&w, SNAPSHOTS, &query)
            .await
            .expect("query")
            .iter()
            .map(|d| d.decode::<PlanningSnapshot>().expect("decode").taken_at)
            .collect();
        if direction == Direction::Descending {
            want.reverse();
        }
        assert_eq!(got, want, "{direction:?}");
    }
    let newest = Query::all(1).order_by("taken_at", Direction::Descending).expect("order");
    let newest = store.query(&w, SNAPSHOTS, &newest).await.expect("query");
    // Written with a variable fraction, `…13Z` would sort last of all and be taken as the newest.
    assert_eq!(newest[0].id, id("snap-1"), "the newest is …13.4861Z");
}

/// A workspace's own record (its id in [`Collection::WORKSPACES`]) reads, updates and deletes
/// like any document, and the collection cannot be queried (on Firestore the record is the
/// workspace's root document, which a sub-collection query would miss).
pub async fn the_workspace_record_is_read_by_id_and_never_queried(store: Arc<dyn Store>) {
    let w = ws();
    let own: DocId = w.as_str().parse().expect("a workspace id is a document id");
    let workspaces = Collection::WORKSPACES;
    create_if_absent(&*store, &w, workspaces, &own, obj(json!({"name": "Test Brand"}))).await.expect("create");
    let doc = store.get(&w, workspaces, &own).await.expect("get").expect("present");
    assert_eq!((doc.version, doc.data.clone()), (1, obj(json!({"name": "Test Brand"}))));
    update(&*store, &w, workspaces, &own, obj(json!({"name": "Test Brand 2"})), 1).await.expect("update");
    let doc = store.get(&w, workspaces, &own).await.expect("get").expect("present");
    assert_eq!((doc.version, doc.id.clone()), (2, own.clone()));
    let stale = update(&*store, &w, workspaces, &own, obj(json!({"name": "lost"})), 1).await;
    assert!(matches!(stale, Err(Error::PreconditionFailed)), "{stale:?}");
    // Another id in the collection is an ordinary document beside it.
    create_if_absent(&*store, &w, workspaces, &id("elsewhere"), obj(json!({"n": 1}))).await.expect("create");
    assert!(store.get(&w, workspaces, &id("elsewhere")).await.expect("get").is_some());
    assert_eq!(store.get(&w, workspaces, &own).await.expect("get").expect("present").version, 2);
    // The same id in another workspace is another record.
    assert!(store.get(&ws(), workspaces, &own).await.expect("get").is_none());
    assert!(matches!(store.query(&w, workspaces, &Query::all(10)).await, Err(Error::Invalid(_))));
    store
        .commit(
            &w,
            vec![Write { collection: workspaces, id: own.clone(), op: WriteOp::Delete { expected_version: Some(2) } }],
        )
        .await
        .expect("delete");
    assert!(store.get(&w, workspaces, &own).await.expect("get").is_none());
}

/// An immutable document is written once: the same content again is accepted and changes
/// nothing (a whole-valued float read back as an integer is still the same content), other
/// content is refused with `ImmutableConflict` and stores nothing.
pub async fn immutable_documents_accept_identical_content_and_refuse_other(store: Arc<dyn Store>) {
    let w = ws();
    let frozen = obj(json!({"hash": "abc", "rate": 1.0, "half": 0.5, "items": [{"n": 1}]}));
    let first = create_immutable(&*store, &w, THINGS, &id("snap"), frozen.clone()).await.expect("first");
    assert!(matches!(first, Created::New(_)), "{first:?}");
    let again = create_immutable(&*store, &w, THINGS, &id("snap"), frozen.clone()).await.expect("identical");
    assert!(matches!(&again, Created::Existing(doc) if doc.version == 1), "{again:?}");
    let other = obj(json!({"hash": "abc", "rate": 1.0, "half": 0.5, "items": [{"n": 2}]}));
    let refused = create_immutable(&*store, &w, THINGS, &id("snap"), other).await;
    assert!(matches!(refused, Err(Error::ImmutableConflict)), "{refused:?}");
    assert_eq!(Error::ImmutableConflict.code(), harmonia_contracts::Code::ImmutableConflict);
    let stored = store.get(&w, THINGS, &id("snap")).await.expect("get").expect("present");
    assert_eq!(stored.version, 1, "neither the repeat nor the refusal wrote");
    assert_eq!(stored.data["items"], json!([{"n": 1}]));
    assert_eq!(store.query(&w, THINGS, &Query::all(10)).await.expect("query").len(), 1);
}

/// A sweep removes the documents it picks and nothing else; counting only removes nothing; a
/// second sweep finds nothing more.
pub async fn a_sweep_removes_only_what_it_picks_as_it_was_read(store: Arc<dyn Store>) {
    let w = ws();
    let writes = (0..4).map(|n| Write {
        collection: BRIEF,
        id: id(&format!("b{n}")),
        op: WriteOp::Create(obj(json!({"n": n}))),
    });
    let mut writes: Vec<Write> = writes.collect();
    writes.push(Write { collection: THINGS, id: id("b0"), op: WriteOp::Create(obj(json!({"n": 0}))) });
    store.commit(&w, writes).await.expect("commit");
    let old = |d: &crate::Document| d.data.get("n").and_then(Value::as_i64).is_some_and(|n| n < 2);
    assert_eq!(crate::sweep(&*store, &w, BRIEF, false, old).await.expect("count"), 2);
    assert_eq!(crate::scan_all(&*store, &w, BRIEF).await.expect("scan").len(), 4, "counting removes nothing");
    assert_eq!(crate::sweep(&*store, &w, BRIEF, true, old).await.expect("sweep"), 2);
    let left = crate::scan_all(&*store, &w, BRIEF).await.expect("scan");
    assert_eq!(left.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(), ["b2", "b3"]);
    assert!(store.get(&w, THINGS, &id("b0")).await.expect("get").is_some(), "another collection is left alone");
    assert_eq!(crate::sweep(&*store, &w, BRIEF, true, old).await.expect("again"), 0, "nothing twice");
}

/// Short-lived documents behave as any other: read back, found by a query (by job too),
/// refused on a stale precondition, committed all or nothing beside lasting ones, deleted.
pub async fn short_lived_documents_behave_as_any_other(store: Arc<dyn Store>) {
    let w = ws();
    let with = |n: i64, job: &str| obj(json!({"n": n, "job": job}));
    store
        .commit(
            &w,
            vec![
                Write { collection: BRIEF, id: id("s1"), op: WriteOp::Create(with(1, "job-a")) },
                Write { collection: BRIEF, id: id("s2"), op: WriteOp::Create(with(2, "job-b")) },
                Write { collection: THINGS, id: id("t"), op: WriteOp::Create(with(0, "job-a")) },
            ],
        )
        .await
        .expect("commit");
    let s1 = store.get(&w, BRIEF, &id("s1")).await.expect("get").expect("s1");
    assert_eq!((s1.version, s1.data), (1, with(1, "job-a")));
    assert!(store.get(&ws(), BRIEF, &id("s1")).await.expect("get").is_none(), "another workspace");
    let by_job = Query::all(10).filter("job", "job-b").expect("filter");
    let found = store.query(&w, BRIEF, &by_job).await.expect("query");
    assert_eq!(found.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(), ["s2"]);
    let ordered = Query::all(10).order_by("n", Direction::Descending).expect("order");
    let found = store.query(&w, BRIEF, &ordered).await.expect("query");
    assert_eq!(found.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(), ["s2", "s1"]);
    assert!(store.get(&w, THINGS, &id("s1")).await.expect("get").is_none(), "another collection");

    let again = store.commit(&w, vec![Write { collection: BRIEF, id: id("s1"), op: WriteOp::Create(with(9, "x")) }]);
    assert!(matches!(again.await, Err(Error::AlreadyExists)));
    let after = vec![
        Write { collection: THINGS, id: id("u"), op: WriteOp::Create(with(0, "job-a")) },
        Write { collection: BRIEF, id: id("s1"), op: WriteOp::Create(with(9, "x")) },
    ];
    assert!(matches!(store.commit(&w, after).await, Err(Error::AlreadyExists)));
    assert!(store.get(&w, THINGS, &id("u")).await.expect("get").is_none(), "partial commit");
    // A stale precondition on the lasting document takes the short-lived delete back with it.
    let both = |version| {
        vec![
            Write { collection: BRIEF, id: id("s1"), op: WriteOp::Delete { expected_version: Some(1) } },
            Write {
                collection: THINGS,
                id: id("t"),
                op: WriteOp::Update { data: with(1, "job-a"), expected_version: version },
            },
        ]
    };
    assert!(matches!(store.commit(&w, both(7)).await, Err(Error::PreconditionFailed)));
    assert!(store.get(&w, BRIEF, &id("s1")).await.expect("get").is_some(), "partial commit");
    store.commit(&w, both(1)).await.expect("commit");
    assert!(store.get(&w, BRIEF, &id("s1")).await.expect("get").is_none());
    assert_eq!(store.get(&w, THINGS, &id("t")).await.expect("get").map(|d| d.version), Some(2));
    update(&*store, &w, BRIEF, &id("s2"), with(3, "job-c"), 1).await.expect("update");
    let moved = Query::all(10).filter("job", "job-c").expect("filter");
    assert_eq!(store.query(&w, BRIEF, &moved).await.expect("query").len(), 1, "its new job is found");
    assert!(store.query(&w, BRIEF, &by_job).await.expect("query").is_empty(), "its old job is not");
}

/// What a conformance fixture builds: a store, possibly with a guard that must outlive it
/// (the temporary directory of a SQLite file, removed when the test ends).
pub trait Backend {
    /// The store under test.
    fn store(&self) -> Arc<dyn Store>;
}

impl Backend for Arc<dyn Store> {
    fn store(&self) -> Arc<dyn Store> {
        self.clone()
    }
}

impl<Guard> Backend for (Arc<dyn Store>, Guard) {
    fn store(&self) -> Arc<dyn Store> {
        self.0.clone()
    }
}

/// Instantiate every conformance case as a `#[tokio::test]`, given an async expression that
/// builds a [`Backend`]: an `Arc<dyn Store>`, or one paired with a guard kept alive until the
/// case ends.
#[macro_export]
macro_rules! store_conformance {
    ($make:expr) => {
        $crate::store_conformance!(@cases $make;
            get_missing_is_none,
            create_then_get_round_trips_json,
            create_if_absent_twice_yields_one_document,
            concurrent_create_if_absent_yields_one_document,
            stale_precondition_is_refused_and_nothing_changes,
            update_missing_is_not_found,
            multi_document_commit_is_all_or_nothing,
            concurrent_transactional_increments_lose_nothing,
            transaction_detects_a_changed_read,
            query_filters_orders_and_limits,
            workspaces_are_isolated,
            delete_respects_preconditions,
            invalid_requests_are_refused,
            scan_reads_past_every_page,
            times_written_by_contract_types_order_as_times,
            the_workspace_record_is_read_by_id_and_never_queried,
            immutable_documents_accept_identical_content_and_refuse_other,
            short_lived_documents_behave_as_any_other,
            a_sweep_removes_only_what_it_picks_as_it_was_read,
        );
    };
    (@cases $make:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                let backend = $make.await;
                $crate::conformance::$case($crate::conformance::Backend::store(&backend)).await;
                drop(backend);
            }
        )*
    };
}
