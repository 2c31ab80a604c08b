//! The job view: Maya chooses an A2UI layout over typed references to the job's entities;
//! the host (this function) hydrates each reference from storage. The model never sees or
//! returns entity contents, and a reference outside the catalog is refused by the runtime.

use std::collections::BTreeMap;

use harmonia_agents::InvocationSeed;
use harmonia_agents::io::{EntityKind, EntityRef, Layout, MayaInput};
use harmonia_agents::role::Maya;
use harmonia_contracts::domain::StoredSource;
use harmonia_contracts::event::Stage;
use harmonia_contracts::ids::JobId;
use harmonia_contracts::trace::TraceParent;
use harmonia_contracts::{Code, Error};
use harmonia_pipeline::gates;
use harmonia_pipeline::records::{DRAFTS, PLANS, POLICY_RESULTS, PUBLICATIONS, REVIEWS, SOURCES, STRATEGIES, doc_id};
use harmonia_pipeline::steps::every_draft_id;
use harmonia_store::Collection;
use serde_json::{Value, json};

use crate::{Identity, OperatorState};

fn key(r: &EntityRef) -> String {
    format!("{}:{}", r.kind.as_str(), r.id)
}

/// The job view: `{layout: [A2UI messages], version, entities: {"kind:id": data}}`.
pub(crate) async fn job_view(
    state: &OperatorState,
    who: &Identity,
    job_id: &JobId,
    trace: TraceParent,
) -> Result<Value, Error> {
    let ws = &who.workspace;
    let job = gates::job(&state.env, ws, job_id).await?;
    let store = &*state.env.store;
    let mut entities: BTreeMap<String, Value> = BTreeMap::new();
    let mut catalog = Vec::new();
    let mut add = |kind: EntityKind, id: String, data: Value| {
        let r = EntityRef { kind, id };
        entities.insert(key(&r), data);
        catalog.push(r);
    };
    add(EntityKind::Job, job.id.to_string(), serde_json::to_value(&job).unwrap_or_default());
    let fetch = |collection: Collection, id: String| async move {
        store
            .get(ws, collection, &doc_id(&id))
            .await
            .map_err(Error::from)
            .map(|d| d.map(|d| (id, Value::Object(d.data))))
    };
    if let Some((id, mut source)) = fetch(SOURCES, job.source.to_string()).await? {
        // The view shows what the source is, not the whole transcript: its counts, wherever
        // the transcript is kept (a long source's is a blob the document only names).
        let stored: StoredSource =
            serde_json::from_value(source.clone()).map_err(|_| Error::from_code(Code::StoreCorrupt))?;
        if let Some(o) = source.as_object_mut() {
            o.remove("body");
            o.insert("segments".into(), json!(stored.segment_count()));
            o.insert("frames".into(), json!(stored.frame_count()));
        }
        add(EntityKind::Source, id, source);
    }
    // Ryan's strategy with the version an approval names, and Temi's whole plan: the operator
    // decides on them, so the view shows them, not only the job and its source.
    if let Some((_, strategy)) = fetch(STRATEGIES, job.id.to_string()).await? {
        add(EntityKind::Strategy, format!("strategy-{}", job.id), strategy);
    }
    let plan = fetch(PLANS, job.id.to_string()).await?;
    if let Some((_, plan)) = &plan {
        add(EntityKind::Plan, format!("plan-{}", job.id), plan.clone());
    }
    if let Some((_, plan)) = plan
        && let Some(selected) = plan.get("selected").and_then(Value::as_str)
        && let Some(item) =
            plan["plan"]["items"].as_array().and_then(|items| items.iter().find(|i| i["id"] == selected))
    {
        add(EntityKind::PlanItem, selected.to_owned(), item.clone());
    }
    // Every draft version of every round: the operator sees what each round changed.
    for draft in every_draft_id(&job.id) {
        let draft = draft.to_string();
        if let Some((id, data)) = fetch(DRAFTS, draft.clone()).await? {
            add(EntityKind::Draft, id, data);
        }
        if let Some((_, data)) = fetch(REVIEWS, draft.clone()).await? {
            add(EntityKind::Review, format!("review-{draft}"), data);
        }
        if let Some((_, data)) = fetch(POLICY_RESULTS, draft.clone()).await? {
            add(EntityKind::PolicyResult, format!("policy-{draft}"), data);
        }
        if let Some((_, data)) = fetch(PUBLICATIONS, draft.clone()).await? {
            add(EntityKind::Publication, format!("publication-{draft}"), data);
        }
    }
    let seed = InvocationSeed {
        workspace: ws.clone(),
        user: who.operator.clone(),
        job: job.id.clone(),
        stage: Stage::Operator,
        input: MayaInput { catalog, view: "job_view".into() },
        trace,
        budget: None,
    };
    let invocation = state.env.runtime.invoke::<Maya>(&seed).await.map_err(|e| match e.contract() {
        Some(c) => Error::from_code(c.code),
        None => Error::from_code(Code::StoreUnavailable),
    })?;
    let layout: Layout = invocation.output;
    Ok(json!({ "version": layout.version, "layout": layout.to_a2ui(), "entities": entities }))
}
