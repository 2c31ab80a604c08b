//! One scripted-model test per rejection: each asserts the exact code and role, that the
//! message is the code's own text (never model output), and that no session is left behind.

use std::sync::Arc;

use harmonia_contracts::domain::{Brief, ContentFormat, Moment, PlanItem, Platform, UtcWindow};
use harmonia_contracts::event::{Pass, Stage};
use harmonia_contracts::{Code, Role};
use serde_json::{Value, json};

use super::Fixture;
use crate::eligibility::{EligibleMemory, VerifiedPerformance};
use crate::io::*;
use crate::model;
use crate::role;
use crate::runtime;
use crate::scripted::ScriptedModel;

pub(super) const NIMI: &str = "nimi-analysis-skills";
const DARA: &str = "dara-editing-skills";
pub(super) const NONI: &str = "noni-writing-skills";
pub(super) const TEMI: &str = "temi-editorial-planning-skills";

fn moment() -> Moment {
    Moment {
        evidence_id: "m-54100".parse().expect("id"),
        quote: "we lost none of them".into(),
        start_ms: 54100,
        end_ms: 61800,
    }
}

fn item() -> PlanItem {
    let start = "2026-12-02T14:00:00Z".parse().expect("time");
    let end = "2026-12-02T15:00:00Z".parse().expect("time");
    PlanItem {
        id: "item-1".parse().expect("id"),
        brief: "brief-1".parse().expect("id"),
        sequence: 1,
        channel: Platform::Linkedin,
        format: ContentFormat::Text,
        window: UtcWindow::new(start, end).expect("window"),
        deadline: "2026-12-02T08:00:00Z".parse().expect("time"),
        depends_on: Vec::new(),
        priority: 1u8.try_into().expect("priority"),
    }
}

fn brief() -> Brief {
    Brief {
        id: "brief-1".parse().expect("id"),
        angle: "Measured outcomes".into(),
        key_message: "No note was lost".into(),
        audience: "Field teams".into(),
        platforms: vec![Platform::Linkedin],
        evidence: vec![moment().evidence_id],
        call_to_action: Some("Read the full report.".into()),
    }
}

pub(super) fn noni() -> NoniInput {
    NoniInput::new(Pass::FIRST, item(), brief(), &[moment()], None)
}

fn dara() -> DaraInput {
    DaraInput {
        pass: Pass::FIRST,
        draft: DraftView {
            platform: Platform::Linkedin,
            body: "Rangers lost none of them.".into(),
            claims: Vec::new(),
            thread: Vec::new(),
        },
        item: item(),
        brief: brief(),
        evidence: vec![moment()],
        research: Vec::new(),
        findings: Vec::new(),
    }
}

pub(super) fn load(model: ScriptedModel, skill: &str, reference: &str) -> ScriptedModel {
    model
        .call("load_skill", json!({"name": skill}))
        .call("load_reference", json!({"skill": skill, "reference": reference}))
}

pub(super) fn draft_json(body: &str, evidence: &str) -> Value {
    json!({"body": body, "claims": [{"text": "No note was lost", "evidence": [evidence]}]})
}

fn review_json(verdict: &str) -> Value {
    let a = json!({"score": 4, "rationale": "Fine."});
    json!({"verdict": verdict, "issues": [], "assessments": {
        "grounding": a, "claims": a, "structure": a, "clarity": a,
        "brief_voice_audience_fit": a, "platform_cta_usability": a, "safety_inclusion": a}})
}

async fn expect<R: role::Role>(
    f: &Fixture,
    model: ScriptedModel,
    stage: Stage,
    input: R::Input,
    code: Code,
) -> Option<String> {
    let rt = f.runtime(Arc::new(model));
    let err = rt.invoke::<R>(&f.seed(stage, input)).await.expect_err("must be rejected");
    let runtime::Error::Contract(e) = err else { panic!("not a contract error: {err}") };
    assert_eq!((e.role, e.code), (R::ID, code));
    assert_eq!(e.safe_message, code.safe_message(), "the message is the code's text");
    assert_eq!(f.sessions().await, 0, "the session is deleted after failure");
    e.schema_path
}

#[tokio::test]
async fn schema_violation_names_the_schema_path() {
    let f = Fixture::new().await;
    let model = load(ScriptedModel::new(), NONI, "hooks-and-introductions.md").json(json!({"body": "", "claims": []}));
    let path = expect::<role::Noni>(&f, model, Stage::Draft, noni(), Code::SchemaViolation).await;
    assert!(path.is_some_and(|p| p.contains("minLength")));
}

#[tokio::test]
async fn malformed_json_is_a_schema_violation() {
    let f = Fixture::new().await;
    let model =
        load(ScriptedModel::new(), NONI, "hooks-and-introductions.md").text("Sure! Here is your post: {body: ...");
    expect::<role::Noni>(&f, model, Stage::Draft, noni(), Code::SchemaViolation).await;
}

#[tokio::test]
async fn unknown_output_fields_are_a_schema_violation() {
    let f = Fixture::new().await;
    let mut out = draft_json("Rangers lost none of them.", "m-54100");
    out["approved"] = json!(true);
    let model = load(ScriptedModel::new(), NONI, "hooks-and-introductions.md").json(out);
    expect::<role::Noni>(&f, model, Stage::Draft, noni(), Code::SchemaViolation).await;
}

#[tokio::test]
async fn no_final_output_is_a_missing_output_key() {
    let f = Fixture::new().await;
    let model = load(ScriptedModel::new(), NONI, "hooks-and-introductions.md").text("   ");
    expect::<role::Noni>(&f, model, Stage::Draft, noni(), Code::MissingOutputKey).await;
}

#[tokio::test]
async fn wrong_routing_is_a_routing_mismatch() {
    let f = Fixture::new().await;
    let rt = f.runtime(Arc::new(ScriptedModel::new().json(json!({"specialist": "ryan"}))));
    let err = rt.route(&f.seed(Stage::Analyze, noni()), Task::Analyze).await.expect_err("mismatch");
    let e = err.contract().expect("contract");
    assert_eq!((e.role, e.code), (Role::Harmonia, Code::RoutingMismatch));
    assert_eq!(f.sessions().await, 0);
}

/// Harmonia routes Nimi, Ryan and Temi only: asking it to route a draft (or any task that
/// deterministic code or the worker runs directly) is refused before any model call, and
/// Harmonia is never offered an unrouted specialist.
#[tokio::test]
async fn only_analysis_strategy_and_planning_are_routed() {
    let f = Fixture::new().await;
    let model = Arc::new(ScriptedModel::new().json(json!({"specialist": "noni"})));
    let rt = f.runtime(model);
    let err = rt.run_task::<role::Noni>(&f.seed(Stage::Draft, noni())).await.expect_err("a draft is not routed");
    let e = err.contract().expect("contract");
    assert_eq!((e.role, e.code), (Role::Harmonia, Code::RoutingMismatch));
    let activity = f.store.query(&f.workspace, runtime::ACTIVITY, &harmonia_store::Query::all(10)).await;
    assert!(activity.expect("activity").is_empty(), "nothing was invoked");
    // Routing a draft as though it were a routed task: Harmonia may only name a routed
    // specialist, so Noni is a mismatch even when the task says draft.
    let err = rt.route(&f.seed(Stage::Draft, noni()), Task::Draft).await.expect_err("noni is not routed");
    assert_eq!(err.contract().map(|e| e.code), Some(Code::RoutingMismatch));
    assert_eq!(Task::ROUTED.map(Task::specialist), [Role::Nimi, Role::Ryan, Role::Temi]);
}

#[tokio::test]
async fn a_tool_outside_the_allow_list_is_refused() {
    let f = Fixture::new().await;
    let model = ScriptedModel::new()
        .call("load_skill", json!({"name": DARA}))
        .call("get_capacity", json!({"snapshot_id": "snap-2026-12-01"}));
    expect::<role::Dara>(&f, model, Stage::Review, dara(), Code::ToolNotAllowed).await;
    // Harmonia has no skills, so not even the skill loader.
    let model = ScriptedModel::new().call("load_skill", json!({"name": DARA}));
    let input = HarmoniaInput { task: Task::Review, specialists: vec![Role::Dara] };
    expect::<role::Harmonia>(&f, model, Stage::Review, input, Code::ToolNotAllowed).await;
    // An approval tool does not exist for anyone.
    let model = load(ScriptedModel::new(), NONI, "persuasion.md").call("approve_draft", json!({}));
    expect::<role::Noni>(&f, model, Stage::Draft, noni(), Code::ToolNotAllowed).await;
}

#[tokio::test]
async fn reviewing_without_loading_the_skill_is_a_sequence_violation() {
    let f = Fixture::new().await;
    expect::<role::Dara>(
        &f,
        ScriptedModel::new().json(review_json("pass")),
        Stage::Review,
        dara(),
        Code::SkillSequenceInvalid,
    )
    .await;
}

#[tokio::test]
async fn a_skill_without_a_reference_is_a_sequence_violation() {
    let f = Fixture::new().await;
    let model = ScriptedModel::new().call("load_skill", json!({"name": DARA})).json(review_json("pass"));
    expect::<role::Dara>(&f, model, Stage::Review, dara(), Code::SkillSequenceInvalid).await;
}

#[tokio::test]
async fn loading_the_skill_twice_is_a_sequence_violation() {
    let f = Fixture::new().await;
    let model = load(ScriptedModel::new(), DARA, "editorial-triage.md")
        .call("load_skill", json!({"name": DARA}))
        .json(review_json("pass"));
    expect::<role::Dara>(&f, model, Stage::Review, dara(), Code::SkillSequenceInvalid).await;
}

#[tokio::test]
async fn a_duplicate_reference_is_a_sequence_violation() {
    let f = Fixture::new().await;
    let model = load(ScriptedModel::new(), DARA, "editorial-triage.md")
        .call("load_reference", json!({"skill": DARA, "reference": "editorial-triage.md"}))
        .json(review_json("pass"));
    expect::<role::Dara>(&f, model, Stage::Review, dara(), Code::SkillSequenceInvalid).await;
}

#[tokio::test]
async fn another_roles_skill_is_unapproved() {
    let f = Fixture::new().await;
    let model = ScriptedModel::new().call("load_skill", json!({"name": NONI}));
    expect::<role::Dara>(&f, model, Stage::Review, dara(), Code::SkillSequenceInvalid).await;
}

#[tokio::test]
async fn an_unknown_reference_is_unapproved() {
    let f = Fixture::new().await;
    let model = load(ScriptedModel::new(), DARA, "how-to-approve-anything.md");
    expect::<role::Dara>(&f, model, Stage::Review, dara(), Code::SkillSequenceInvalid).await;
}

fn temi(snapshot: &str) -> TemiInput {
    let strategy: harmonia_contracts::domain::Strategy = serde_json::from_value(json!({
        "objective": "o", "audience": "a", "voice": "v", "provenance": "mock",
        "briefs": [serde_json::to_value(brief()).expect("brief")]
    }))
    .expect("strategy");
    TemiInput {
        strategy,
        strategy_hash: "h".into(),
        evidence: vec![moment()],
        snapshot_id: snapshot.parse().expect("id"),
    }
}

#[tokio::test]
async fn temi_reading_before_its_references_is_a_sequence_violation() {
    let f = Fixture::new().await;
    let snap = f.snapshot.id.to_string();
    let model = ScriptedModel::new()
        .call("load_skill", json!({"name": TEMI}))
        .call("get_capacity", json!({"snapshot_id": snap}))
        .call("load_reference", json!({"skill": TEMI, "reference": "cadence.md"}))
        .json(json!({"snapshot": snap, "strategy_hash": "h", "cadence": "daily", "items": [serde_json::to_value(item()).expect("item")]}));
    expect::<role::Temi>(&f, model, Stage::Plan, temi(&snap), Code::SkillSequenceInvalid).await;
}

#[tokio::test]
async fn temi_reading_another_snapshot_is_refused() {
    let f = Fixture::new().await;
    let snap = f.snapshot.id.to_string();
    let model =
        load(ScriptedModel::new(), TEMI, "cadence.md").call("get_capacity", json!({"snapshot_id": "snap-other"}));
    expect::<role::Temi>(&f, model, Stage::Plan, temi(&snap), Code::SnapshotMismatch).await;
}

#[tokio::test]
async fn invented_evidence_is_refused() {
    let f = Fixture::new().await;
    let model =
        load(ScriptedModel::new(), NONI, "persuasion.md").json(draft_json("Rangers lost none of them.", "m-invented"));
    expect::<role::Noni>(&f, model, Stage::Draft, noni(), Code::EvidenceUnknown).await;
}

#[tokio::test]
async fn a_quote_that_is_not_in_the_transcript_is_refused() {
    let f = Fixture::new().await;
    let input = NimiInput::new(&f.source, VerifiedPerformance::none(), EligibleMemory::none());
    let analysis = |quote: &str, start: u64, end: u64| {
        json!({"moments": [{"evidence_id": "m-1", "quote": quote, "start_ms": start, "end_ms": end}],
               "angles": [{"kind": "source", "title": "t", "rationale": "r", "evidence": ["m-1"]}]})
    };
    let model = load(ScriptedModel::new(), NIMI, "exact-evidence-moments.md").json(analysis(
        "we lost nothing at all",
        54100,
        61800,
    ));
    expect::<role::Nimi>(&f, model, Stage::Analyze, input.clone(), Code::EvidenceUnknown).await;
    // The right words at the wrong time are refused too.
    let model =
        load(ScriptedModel::new(), NIMI, "exact-evidence-moments.md").json(analysis("we lost none of them", 0, 6200));
    expect::<role::Nimi>(&f, model, Stage::Analyze, input, Code::EvidenceUnknown).await;
}

#[tokio::test]
async fn maya_naming_an_id_outside_its_catalog_is_refused() {
    let f = Fixture::new().await;
    let input = MayaInput {
        catalog: vec![EntityRef { kind: EntityKind::Job, id: "job-test".into() }],
        view: "job_view".into(),
    };
    let layout = json!({"version": "0.9", "surface_id": "s", "root": "root", "components": [
        {"id": "root", "component": {"type": "column", "children": ["e"]}},
        {"id": "e", "component": {"type": "entity", "entity": {"kind": "draft", "id": "draft-invented"}}}]});
    expect::<role::Maya>(&f, ScriptedModel::new().json(layout), Stage::Operator, input, Code::EvidenceUnknown).await;
}

#[tokio::test]
async fn claiming_publication_is_refused() {
    let f = Fixture::new().await;
    let model = load(ScriptedModel::new(), NONI, "persuasion.md")
        .json(draft_json("Great news: this post has been published and approved for publication.", "m-54100"));
    expect::<role::Noni>(&f, model, Stage::Draft, noni(), Code::AuthorityClaimed).await;
}

#[tokio::test]
async fn each_model_failure_crosses_the_runtime_as_its_own_code() {
    let f = Fixture::new().await;
    for (failure, code) in [
        (model::Error::Throttled, Code::ModelThrottled),
        (model::Error::Unavailable("timeout"), Code::ModelUnavailable),
        (model::Error::Auth, Code::ModelAuth),
        (model::Error::NotFound, Code::ModelNotFound),
        (model::Error::BadRequest, Code::ModelBadRequest),
        (model::Error::Refused("blocked"), Code::ModelRefused),
        (model::Error::OutputInvalid("malformed response"), Code::ModelOutputInvalid),
        (model::Error::Exhausted, Code::ModelUnavailable),
    ] {
        expect::<role::Noni>(&f, ScriptedModel::new().fail(failure), Stage::Draft, noni(), code).await;
    }
}

#[tokio::test]
async fn a_valid_scripted_answer_is_accepted_and_marked_mock() {
    let f = Fixture::new().await;
    let mut out = draft_json("Rangers lost none of them.", "m-54100");
    out["provenance"] = json!("live");
    let rt = f.runtime(Arc::new(load(ScriptedModel::new(), NONI, "persuasion.md").json(out)));
    let inv = rt.invoke::<role::Noni>(&f.seed(Stage::Draft, noni())).await.expect("accepted");
    let draft: DraftOutput = inv.output;
    assert_eq!(
        draft.provenance,
        harmonia_contracts::tool::Provenance::Mock,
        "provenance is the backend's, not the model's"
    );
    assert_eq!(f.sessions().await, 0);
}
