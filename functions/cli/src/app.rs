//! The commands, over the embedded backends.

use std::io::Write as _;
use std::path::Path;

use chrono::Utc;
use harmonia_bus::{Bus, Name, OutboundMessage, SubscriptionSpec};
use harmonia_bus_local::LocalBus;
use harmonia_contracts::domain::{Job, JobStatus, SourceInput, Workspace, WorkspaceMode};
use harmonia_contracts::event::{Pass, SourceIngested, StageEvent, TOPICS};
use harmonia_contracts::ids::{DocId, JobId, SourceId, WorkspaceId};
use harmonia_contracts::trace::TraceParent;
use harmonia_contracts::{Code, Error};
use harmonia_store::{Collection, Direction, Query, Store, Tx, encode, run_transaction};
use harmonia_store_sqlite::SqliteStore;

const WORKSPACES: Collection = Collection::new("workspaces");
const SOURCES: Collection = Collection::new("sources");
const JOBS: Collection = Collection::new("jobs");

/// The bundled sample source.
const SAMPLE: &str = include_str!("../../../examples/launch-talk.json");

struct Embedded {
    store: SqliteStore,
    bus: LocalBus,
}

async fn open(data_dir: &Path) -> Result<Embedded, Error> {
    let file = data_dir.join("harmonia.sqlite");
    let store = SqliteStore::open(&file).map_err(Error::from)?;
    let bus = LocalBus::open(&file).map_err(|e| Error::from_code(e.code()))?;
    // Every topic, with the subscription its consuming stage will read and a dead letter.
    for (topic, _) in TOPICS {
        let topic: Name = topic.parse().map_err(|_| Error::from_code(Code::Internal))?;
        let dead: Name = format!("{topic}.dead-letter").parse().map_err(|_| Error::from_code(Code::Internal))?;
        for t in [&topic, &dead] {
            bus.create_topic(t).await.map_err(|e| Error::from_code(e.code()))?;
        }
        let spec = SubscriptionSpec {
            name: format!("{topic}.pipeline").parse().map_err(|_| Error::from_code(Code::Internal))?,
            topic,
            max_attempts: 5,
            dead_letter_topic: Some(dead),
            ack_deadline: std::time::Duration::from_secs(120),
            min_backoff: std::time::Duration::from_millis(200),
            max_backoff: std::time::Duration::from_secs(10),
        };
        bus.create_subscription(&spec).await.map_err(|e| Error::from_code(e.code()))?;
    }
    Ok(Embedded { store, bus })
}

fn doc_id(id: &impl ToString) -> Result<DocId, Error> {
    id.to_string().parse()
}

fn say(json: bool, line: &str) {
    if !json {
        let _ = writeln!(std::io::stdout(), "{line}");
    }
}

/// Ingest the bundled sample into the `demo` workspace.
pub(crate) async fn demo(data_dir: &Path, json: bool) -> Result<(), Error> {
    let env = open(data_dir).await?;
    let workspace: WorkspaceId = "demo".parse()?;
    let input: SourceInput = serde_json::from_str(SAMPLE).map_err(|_| Error::from_code(Code::SourceMalformed))?;
    let now = Utc::now();
    let source = input.validate(SourceId::generate(), workspace.clone(), now)?;
    say(
        json,
        &format!(
            "ingest   validated \"{}\" ({} segments, {} frames)",
            source.title,
            source.segments.len(),
            source.frames.len()
        ),
    );
    let job = Job {
        id: JobId::generate(),
        workspace: workspace.clone(),
        source: source.id.clone(),
        title: source.title.clone(),
        status: JobStatus::Ingested,
        pass: Pass::FIRST,
        created_at: now,
        updated_at: now,
        failure: None,
    };
    let ws_doc = Workspace {
        id: workspace.clone(),
        name: "Demo workspace".into(),
        mode: WorkspaceMode::Development,
        banned_phrases: Vec::new(),
        link_allow_list: vec!["video.example.com".into()],
        goals: vec!["Show how field teams benefit from offline-first tools".into()],
        created_at: now,
    };
    let store: &dyn Store = &env.store;
    let (ws, src, jb) = (&workspace, &source, &job);
    let ws_data = encode(&ws_doc).map_err(Error::from)?;
    run_transaction(10, || {
        let ws_data = ws_data.clone();
        async move {
            let mut tx = Tx::begin(store, ws);
            if tx.get(WORKSPACES, &doc_id(ws).map_err(|_| harmonia_store::Error::Corrupt)?).await?.is_none() {
                tx.put(WORKSPACES, &doc_id(ws).map_err(|_| harmonia_store::Error::Corrupt)?, ws_data);
            }
            tx.put(SOURCES, &doc_id(&src.id).map_err(|_| harmonia_store::Error::Corrupt)?, encode(src)?);
            tx.put(JOBS, &doc_id(&jb.id).map_err(|_| harmonia_store::Error::Corrupt)?, encode(jb)?);
            tx.commit().await
        }
    })
    .await
    .map_err(Error::from)?;
    say(json, &format!("ingest   stored source {} and job {}", source.id, job.id));

    let event = StageEvent::new(
        workspace,
        job.id.clone(),
        Pass::FIRST,
        &TraceParent::new_root(),
        SourceIngested { source: source.id.clone() },
    );
    let message = OutboundMessage::event("", &event).map_err(|e| Error::from_code(e.code()))?;
    let message_id = env.bus.publish(message).await.map_err(|e| Error::from_code(e.code()))?;
    say(
        json,
        &format!("ingest   published source.ingested (message {message_id}, trace {})", event.traceparent.trace_id()),
    );
    say(json, "analyze  waiting: the specialist stages are not part of this build yet; the event stays queued");
    if json {
        let out = serde_json::json!({
            "job": job,
            "event": { "topic": "source.ingested", "message_id": message_id, "traceparent": event.traceparent.to_string() },
        });
        let _ = writeln!(std::io::stdout(), "{out}");
    }
    Ok(())
}

/// Show one job or every job of the `demo` workspace.
pub(crate) async fn status(data_dir: &Path, job: Option<&str>, json: bool) -> Result<(), Error> {
    let env = open(data_dir).await?;
    let workspace: WorkspaceId = "demo".parse()?;
    let docs = match job {
        Some(id) => {
            let id: JobId = id.parse()?;
            let doc = env.store.get(&workspace, JOBS, &doc_id(&id)?).await.map_err(Error::from)?;
            vec![doc.ok_or_else(|| Error::from_code(Code::NotFound))?]
        }
        None => {
            let query = Query::all(1000).order_by("created_at", Direction::Descending).map_err(Error::from)?;
            env.store.query(&workspace, JOBS, &query).await.map_err(Error::from)?
        }
    };
    let jobs: Vec<Job> = docs.iter().map(|d| d.decode()).collect::<Result<_, _>>().map_err(Error::from)?;
    if json {
        let _ = writeln!(std::io::stdout(), "{}", serde_json::json!({ "jobs": jobs }));
    } else if jobs.is_empty() {
        say(json, "no jobs yet: run `harmonia demo`");
    } else {
        for j in &jobs {
            let status =
                serde_json::to_value(j.status).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
            say(json, &format!("{}  {:<28} {}", j.id, status, j.title));
        }
    }
    Ok(())
}
