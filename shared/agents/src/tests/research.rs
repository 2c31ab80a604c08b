//! Research tools and memory eligibility.

use std::sync::Arc;

use chrono::Utc;
use harmonia_contracts::domain::{
    ConnectorKind, Platform, Publication, PublicationClaim, PublicationReceipt, ReceiptOutcome, Verification,
    VerificationOutcome,
};
use harmonia_contracts::event::{Pass, Stage};
use harmonia_contracts::ids::{DocId, WorkspaceId};
use harmonia_contracts::tool::Provenance;
use harmonia_contracts::{Code, Role};
use harmonia_store::{create_if_absent, encode};
use serde_json::json;

use super::Fixture;
use crate::io::{DraftOutput, NoniInput, RoleInput};
use crate::research::{PUBLICATIONS, SearchVerifiedPublications};
use crate::scripted::ScriptedModel;
use crate::tools::{Tool, ToolContext};

pub(super) fn publication(
    n: u32,
    receipt: Option<ReceiptOutcome>,
    verification: Option<VerificationOutcome>,
) -> Publication {
    let job = "job-r".parse().expect("job");
    let draft: harmonia_contracts::ids::DraftId = format!("draft-{n}").parse().expect("draft");
    Publication {
        job: "job-r".parse().expect("job"),
        draft: draft.clone(),
        platform: Platform::Linkedin,
        body: format!("Offline sync story number {n}"),
        content_hash: "h".into(),
        claim: PublicationClaim {
            job,
            draft: draft.clone(),
            content_hash: "h".into(),
            platform: Platform::Linkedin,
            connector: ConnectorKind::Sandbox,
            idempotency_key: format!("k{n}"),
            claimed_at: Utc::now(),
        },
        receipt: receipt.map(|outcome| PublicationReceipt {
            job: "job-r".parse().expect("job"),
            draft: draft.clone(),
            connector: ConnectorKind::Sandbox,
            outcome,
            recorded_at: Utc::now(),
        }),
        verification: verification.map(|outcome| Verification {
            job: "job-r".parse().expect("job"),
            draft,
            outcome,
            checked_at: Utc::now(),
        }),
    }
}

#[tokio::test]
async fn only_applied_and_verified_publications_of_the_workspace_are_found() {
    let f = Fixture::new().await;
    let post = |p: &str| p.parse().expect("post");
    let applied = |p: &str| Some(ReceiptOutcome::Applied { post: post(p), url: None });
    let rows = [
        publication(1, applied("post-1"), Some(VerificationOutcome::Verified { post: post("post-1") })),
        publication(2, applied("post-2"), Some(VerificationOutcome::Missing)),
        publication(3, Some(ReceiptOutcome::Unknown), None),
        publication(4, applied("post-4"), None),
    ];
    for (n, p) in rows.iter().enumerate() {
        let id: DocId = format!("pub-{n}").parse().expect("id");
        create_if_absent(&*f.store, &f.workspace, PUBLICATIONS, &id, encode(p).expect("encode")).await.expect("store");
    }
    let ctx = ToolContext { workspace: &f.workspace, store: &*f.store, snapshot: None };
    let out = SearchVerifiedPublications.call(&ctx, &json!({"query": "offline sync"})).await.expect("search");
    assert_eq!(out["evidence"], json!(["pub-post-1"]));
    assert_eq!(out["results"].as_array().map(Vec::len), Some(1));
    let other = WorkspaceId::generate();
    let ctx = ToolContext { workspace: &other, store: &*f.store, snapshot: None };
    let out = SearchVerifiedPublications.call(&ctx, &json!({"query": "offline"})).await.expect("search");
    assert_eq!(out["evidence"], json!([]), "another workspace sees nothing");
    assert!(SearchVerifiedPublications.call(&ctx, &json!({"query": "  "})).await.is_err());
}

fn noni() -> RoleInput {
    let moment = harmonia_contracts::domain::Moment {
        evidence_id: "m-1".parse().expect("id"),
        quote: "q".into(),
        start_ms: 0,
        end_ms: 1,
    };
    let item = serde_json::from_value(json!({
        "id": "item-1", "brief": "brief-1", "sequence": 1, "channel": "linkedin", "format": "text",
        "window": {"start": "2026-12-02T14:00:00Z", "end": "2026-12-02T15:00:00Z"},
        "deadline": "2026-12-02T08:00:00Z", "depends_on": [], "priority": 1}))
    .expect("item");
    let brief = serde_json::from_value(json!({
        "id": "brief-1", "angle": "a", "key_message": "k", "audience": "a", "platforms": ["linkedin"], "evidence": ["m-1"]}))
    .expect("brief");
    RoleInput::Noni(NoniInput::new(Pass::FIRST, item, brief, &[moment], None))
}

fn web_id(uri: &str) -> String {
    use sha2::Digest;
    format!("web-{}", &hex::encode(sha2::Sha256::digest(uri.as_bytes()))[..16])
}

#[tokio::test]
async fn grounded_search_evidence_is_citable_in_the_same_invocation_only() {
    let f = Fixture::new().await;
    let uri = "https://example.org/offline-first";
    let skill = "noni-writing-skills";
    let script = || {
        ScriptedModel::new()
            .call("load_skill", json!({"name": skill}))
            .call("load_reference", json!({"skill": skill, "reference": "case-studies.md"}))
            .call("google_search", json!({"query": "offline-first field apps"}))
            .grounded("Offline-first apps keep working without signal.", &[(uri, "Offline first")])
    };
    let cited = |id: &str| json!({"body": "Apps keep working without signal.", "claims": [{"text": "keep working", "evidence": [id]}]});
    let rt = f.runtime(Arc::new(script().json(cited(&web_id(uri)))));
    let inv = rt.invoke(&f.seed(Stage::Draft, noni())).await.expect("accepted");
    assert!(inv.steps.iter().any(|s| s.evidence.iter().any(|e| e.as_str() == web_id(uri))), "recorded in the trace");
    let draft: DraftOutput = inv.state_delta.require("draft").expect("draft");
    assert_eq!(draft.provenance, Provenance::Mock);

    let rt = f.runtime(Arc::new(script().json(cited(&web_id("https://example.org/never-returned")))));
    let err = rt.invoke(&f.seed(Stage::Draft, noni())).await.expect_err("unknown web evidence");
    assert_eq!(err.contract().map(|e| (e.role, e.code)), Some((Role::Noni, Code::EvidenceUnknown)));

    // A child answer without grounding yields no evidence at all.
    let rt = f.runtime(Arc::new(
        ScriptedModel::new()
            .call("load_skill", json!({"name": skill}))
            .call("load_reference", json!({"skill": skill, "reference": "case-studies.md"}))
            .call("google_search", json!({"query": "x"}))
            .text("ungrounded words")
            .json(cited(&web_id(uri))),
    ));
    let err = rt.invoke(&f.seed(Stage::Draft, noni())).await.expect_err("nothing to cite");
    assert_eq!(err.contract().map(|e| e.code), Some(Code::EvidenceUnknown));
}
