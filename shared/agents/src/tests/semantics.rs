//! The meaning of Nimi's angles and Temi's plans, checked by deterministic code whatever the
//! model says: an angle's kind must be backed by its evidence, and a plan must be one that can
//! be carried out.

use std::collections::HashSet;

use harmonia_contracts::Code;
use harmonia_contracts::domain::{Analysis, Plan};
use serde_json::{Value, json};

use super::Fixture;
use crate::eligibility::{EligibleMemory, VerifiedPerformance};
use crate::io::{NimiInput, TemiInput};
use crate::validate;

/// The sample's analysis with one angle of `kind` citing `evidence` (and `facts`).
fn analysis(kind: &str, evidence: &[&str], facts: &[&str]) -> Analysis {
    serde_json::from_value(json!({
        "moments": [{"evidence_id": "m-54100", "quote": "In the first month after launch, rangers logged 4,200 notes while offline, and we lost none of them.", "start_ms": 54100, "end_ms": 61800}],
        "angles": [{"kind": kind, "title": "t", "rationale": "r", "evidence": evidence, "facts": facts}],
        "provenance": "mock",
    }))
    .expect("analysis")
}

/// Nimi's validator over `analysis`, as an invocation that returned `researched` and has not
/// read the answer yet.
fn nimi(
    input: &NimiInput,
    analysis: &Analysis,
    researched: &HashSet<&harmonia_contracts::ids::EvidenceId>,
) -> Result<(), validate::Miss> {
    validate::nimi(input, analysis, crate::role::Seen { researched, steps: &[], read: &validate::Readings::default() })
}

#[tokio::test]
async fn an_angle_is_only_the_kind_its_evidence_backs() {
    let f = Fixture::new().await;
    let input = NimiInput::new(&f.source, VerifiedPerformance::none(), EligibleMemory::none());
    let none = HashSet::new();
    assert_eq!(nimi(&input, &analysis("source", &["m-54100"], &[]), &none).map_err(|m| m.code), Ok(()));
    for (kind, why) in [
        ("context", "a context angle needs research evidence, not only a moment"),
        ("performance", "a performance angle needs a verified post"),
        ("memory", "a memory angle needs an eligible fact"),
    ] {
        assert_eq!(
            nimi(&input, &analysis(kind, &["m-54100"], &[]), &none).map_err(|m| m.code),
            Err(Code::AngleUnqualified),
            "{why}"
        );
    }
    // Research returned in this invocation qualifies a context angle.
    let web = "web-1".parse().expect("id");
    let researched = HashSet::from([&web]);
    assert_eq!(nimi(&input, &analysis("context", &["m-54100", "web-1"], &[]), &researched).map_err(|m| m.code), Ok(()));
    // ... and a source angle is only moments.
    assert_eq!(
        nimi(&input, &analysis("source", &["m-54100", "web-1"], &[]), &researched).map_err(|m| m.code),
        Err(Code::AngleUnqualified)
    );
}

/// Temi's input: two briefs, for LinkedIn and for X.
fn temi_input() -> TemiInput {
    let brief = |id: &str, platform: &str| json!({"id": id, "angle": "a", "key_message": "k", "audience": "people", "platforms": [platform], "evidence": ["m-1"]});
    serde_json::from_value(json!({
        "strategy": {"objective": "o", "audience": "a", "voice": "v", "provenance": "mock",
                     "briefs": [brief("brief-1", "linkedin"), brief("brief-2", "x")]},
        "strategy_hash": "h", "evidence": [], "snapshot_id": "snap-1",
    }))
    .expect("temi input")
}

/// An item for `brief` on `channel` in `format`, in a window opening at 18:00 on 3 December.
fn item(id: &str, brief: &str, channel: &str, format: &str, deadline: &str, depends_on: &[&str]) -> Value {
    json!({"id": id, "brief": brief, "sequence": 1, "channel": channel, "format": format,
           "window": {"start": "2026-12-03T18:00:00Z", "end": "2026-12-03T19:00:00Z"},
           "deadline": deadline, "depends_on": depends_on, "priority": 1})
}

fn plan(items: Vec<Value>, deferred: Value) -> Plan {
    serde_json::from_value(json!({"snapshot": "snap-1", "strategy_hash": "h", "cadence": "c", "provenance": "mock",
                                  "items": items, "deferred": deferred}))
    .expect("plan")
}

#[test]
fn a_plan_is_checked_for_channel_format_deadline_cycles_and_coverage() {
    let input = temi_input();
    let early = "2026-12-03T12:00:00Z";
    let good = || {
        vec![
            item("item-1", "brief-1", "linkedin", "article", early, &[]),
            item("item-2", "brief-2", "x", "text", early, &["item-1"]),
        ]
    };
    assert_eq!(validate::temi(&input, &plan(good(), json!([]))).map_err(|m| m.code), Ok(()));

    let cases = [
        (
            vec![
                item("item-1", "brief-1", "x", "text", early, &[]),
                item("item-2", "brief-2", "x", "text", early, &[]),
            ],
            "a channel outside its brief's",
        ),
        (
            vec![
                item("item-1", "brief-1", "linkedin", "text", early, &[]),
                item("item-2", "brief-2", "x", "article", early, &[]),
            ],
            "a format X does not publish",
        ),
        (
            vec![
                item("item-1", "brief-1", "linkedin", "text", "2026-12-03T18:30:00Z", &[]),
                item("item-2", "brief-2", "x", "text", early, &[]),
            ],
            "a deadline after the window opens",
        ),
        (
            vec![
                item("item-1", "brief-1", "linkedin", "text", early, &["item-2"]),
                item("item-2", "brief-2", "x", "text", early, &["item-1"]),
            ],
            "a dependency cycle",
        ),
        (vec![item("item-1", "brief-1", "linkedin", "text", early, &[])], "a brief neither planned nor deferred"),
    ];
    for (items, why) in cases {
        assert_eq!(
            validate::temi(&input, &plan(items, json!([]))).map_err(|m| m.code),
            Err(Code::PlanInvalid),
            "{why}"
        );
    }

    let one = || vec![item("item-1", "brief-1", "linkedin", "text", early, &[])];
    let deferred = json!([{"brief": "brief-2", "reason": "No X slot before the launch week."}]);
    assert_eq!(
        validate::temi(&input, &plan(one(), deferred)).map_err(|m| m.code),
        Ok(()),
        "a deferral with its reason covers a brief"
    );
    let both = json!([{"brief": "brief-1", "reason": "later"}, {"brief": "brief-2", "reason": "later"}]);
    assert_eq!(
        validate::temi(&input, &plan(one(), both)).map_err(|m| m.code),
        Err(Code::PlanInvalid),
        "planned and deferred at once"
    );
    let unknown = json!([{"brief": "brief-2", "reason": "later"}, {"brief": "brief-9", "reason": "later"}]);
    assert_eq!(
        validate::temi(&input, &plan(one(), unknown)).map_err(|m| m.code),
        Err(Code::EvidenceUnknown),
        "a brief that does not exist"
    );
}
