//! Snapshots of the JSON shapes other parties depend on: the stage-event envelope on every
//! topic, the error body of every API, Nova's tool envelope, the activity record and a job's
//! failure. A change to any of them shows up as a snapshot diff to review, never silently.
//!
//! Generated ids and times are redacted, after checking their form: every time must be
//! RFC 3339 UTC with nine fraction digits (see `harmonia_contracts::time`).

use chrono::{DateTime, Utc};
use harmonia_contracts::domain::{ActivityOutcome, ActivityRecord, JobFailure, Operation, TokenUsage};
use harmonia_contracts::event::{AnalysisCompleted, Pass, Stage, StageEvent};
use harmonia_contracts::tool::{Evidence, EvidenceLevel, Provenance, ToolEnvelope};
use harmonia_contracts::trace::TraceParent;
use harmonia_contracts::{Code, ErrorBody, Role};
use insta::internals::{Content, ContentPath};

/// Redacts a time after checking it is written with the fixed-width format.
fn time(value: Content, path: ContentPath<'_>) -> &'static str {
    let text = value.as_str().unwrap_or_else(|| panic!("{path} is not a string"));
    assert!(
        text.len() == "2026-03-01T09:30:13.486000000Z".len() && text.ends_with('Z'),
        "{path} = {text} is not RFC 3339 with nine fraction digits"
    );
    assert!(harmonia_contracts::time::parse(text).is_ok(), "{path} = {text}");
    "[time]"
}

fn at(s: &str) -> DateTime<Utc> {
    harmonia_contracts::time::parse(s).expect("a time")
}

#[test]
fn stage_event_envelope() {
    let event = StageEvent::new(
        "ws-demo".parse().expect("ws"),
        "job-0001".parse().expect("job"),
        Pass::FIRST,
        &TraceParent::new_root(),
        AnalysisCompleted { moments: 12 },
    );
    insta::assert_json_snapshot!(event, {
        ".event_id" => "[event id]",
        ".traceparent" => "[traceparent]",
        ".emitted_at" => insta::dynamic_redaction(time),
    });
}

#[test]
fn error_body() {
    let body = ErrorBody::new(Code::StaleVersion, "the approved version is no longer current");
    insta::assert_json_snapshot!(body);
}

#[test]
fn tool_envelope_success() {
    let data = serde_json::json!({"count": 1, "signals": [{"topic": "offline maps", "score": 0.82}]});
    let evidence = vec![Evidence {
        evidence_id: "trend-offline-maps".parse().expect("evidence id"),
        level: EvidenceLevel::Record,
        provenance: Provenance::Live,
    }];
    let envelope = ToolEnvelope::success(data.as_object().cloned().expect("an object"), evidence).expect("unique ids");
    insta::assert_json_snapshot!(envelope);
}

#[test]
fn tool_envelope_error() {
    let envelope = ToolEnvelope::error(ErrorBody::new(Code::OutOfRange, "limit must be between 1 and 10"));
    insta::assert_json_snapshot!(envelope);
}

#[test]
fn activity_record() {
    let record = ActivityRecord {
        tenant: "ws-demo".parse().expect("ws"),
        job: "job-0001".parse().expect("job"),
        operation: Operation::Invoke,
        agent: Role::Nimi,
        stage: Stage::Analyze,
        model: "offline".into(),
        started_at: at("2026-03-01T09:30:13.486Z"),
        ended_at: at("2026-03-01T09:30:13.4861Z"),
        duration_us: 100,
        usage: TokenUsage { input_tokens: 1200, output_tokens: 340 },
        model_calls: 3,
        repairs: 2,
        repaired: vec![Code::SchemaViolation, Code::EvidenceUnknown],
        outcome: ActivityOutcome::Failure { code: Code::SchemaViolation },
        trace_id: "4bf92f3577b34da6a3ce929d0e0e4736".parse().expect("trace id"),
        span_id: "00f067aa0ba902b7".parse().expect("span id"),
        parent_span_id: "53995c3f42cd8ad8".parse().expect("span id"),
    };
    insta::assert_json_snapshot!(record, {
        ".tenant" => "[workspace id]",
        ".job" => "[job id]",
        ".trace_id" => "[trace id]",
        ".span_id" => "[span id]",
        ".parent_span_id" => "[span id]",
        ".started_at" => insta::dynamic_redaction(time),
        ".ended_at" => insta::dynamic_redaction(time),
    });
}

#[test]
fn job_failure() {
    let failure = JobFailure {
        stage: Stage::Review,
        role: Some(Role::Dara),
        code: Code::SchemaViolation,
        category: Code::SchemaViolation.category(),
        safe_message: "Dara's review did not match its schema".into(),
        retryable: false,
        schema_path: Some("/assessments/3/verdict".into()),
        at: at("2026-03-01T09:30:13Z"),
        step: Some(harmonia_contracts::domain::FailedStep {
            status: harmonia_contracts::domain::JobStatus::Drafted,
            round: harmonia_contracts::event::Round::ORIGINAL,
            pass: harmonia_contracts::event::Pass::FIRST,
        }),
    };
    insta::assert_json_snapshot!(failure, { ".at" => insta::dynamic_redaction(time) });
}
