//! The offline model runs every role on the bundled sample through the real runtime; every
//! output validates and every quote is exact transcript text inside its time range.

use std::sync::Arc;

use harmonia_contracts::Role;
use harmonia_contracts::domain::{
    Analysis, ContentFormat, Draft, Plan, PlanItem, Platform, PolicyRule, PolicyViolation, Severity, Strategy, Verdict,
    content_hash,
};
use harmonia_contracts::event::{Pass, Stage};
use harmonia_contracts::tool::Provenance;
use harmonia_store::Query;

use super::Fixture;
use crate::eligibility::{EligibleMemory, VerifiedPerformance};
use crate::io::*;
use crate::offline::OfflineModel;
use crate::role;
use crate::runtime::ACTIVITY;
use crate::skills::LoadEvent;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_model_runs_every_role_on_the_sample() {
    let f = Fixture::new().await;
    let rt = f.runtime(Arc::new(OfflineModel));

    // Nimi, routed through Harmonia.
    let nimi_in = NimiInput::new(&f.source, VerifiedPerformance::none(), EligibleMemory::none());
    let inv = rt.run_task::<role::Nimi>(&f.seed(Stage::Analyze, nimi_in)).await.expect("nimi");
    let analysis: Analysis = inv.output;
    assert_eq!(analysis.provenance, Provenance::Mock);
    assert!(analysis.moments.len() >= 3);
    for m in &analysis.moments {
        assert!(f.source.quote_within(&m.quote, m.start_ms, m.end_ms), "quote {:?} not exact in range", m.quote);
    }
    assert!(matches!(inv.steps.first().map(|s| &s.event), Some(LoadEvent::Skill(s)) if s == "nimi-analysis-skills"));

    // Ryan.
    let config =
        harmonia_contracts::domain::WorkspaceConfig::from_toml(include_str!("../../../../examples/workspace.toml"))
            .expect("the example workspace is valid");
    let company = CompanyContext::from(&config);
    let ryan_in =
        RyanInput::new(analysis.clone(), company.clone(), VerifiedPerformance::none(), EligibleMemory::none());
    let strategy: Strategy = f.output::<role::Ryan>(&rt, Stage::Strategize, ryan_in).await;
    assert!(!strategy.briefs.is_empty());
    // Everything brand-specific comes from the configuration.
    assert_eq!(
        (strategy.audience.as_str(), strategy.voice.as_str()),
        (config.audience.as_str(), config.voice.as_str())
    );
    assert!(strategy.objective.starts_with(config.goals[0].as_str()), "{}", strategy.objective);
    for (n, brief) in strategy.briefs.iter().enumerate() {
        assert_eq!(brief.call_to_action.as_deref(), Some(config.call_to_action.as_str()));
        assert_eq!(brief.platforms, vec![company.channels[n % company.channels.len()]]);
    }

    // Temi reads the snapshot through its tools, after its references.
    let hash = content_hash(&strategy);
    let temi_in = TemiInput {
        strategy: strategy.clone(),
        strategy_hash: hash.clone(),
        evidence: analysis.moments.clone(),
        snapshot_id: f.snapshot.id.clone(),
    };
    let inv = rt.run_task::<role::Temi>(&f.seed(Stage::Plan, temi_in)).await.expect("temi");
    let plan: Plan = inv.output;
    assert_eq!(plan.snapshot, f.snapshot.id);
    assert_eq!(plan.items.len(), strategy.briefs.len());
    assert!(inv.steps.iter().any(|s| s.event == LoadEvent::DataTool("get_capacity".into())));
    for item in &plan.items {
        assert!(item.window.start > f.snapshot.taken_at, "scheduled after the snapshot");
    }

    // Noni pass 1, Dara asks for the revision, Noni pass 2, Dara passes.
    let item = plan.items[0].clone();
    let brief = strategy.briefs.iter().find(|b| b.id == item.brief).cloned().expect("brief");
    let noni_in = NoniInput::new(Pass::FIRST, item.clone(), brief.clone(), &analysis.moments, None);
    let first: DraftOutput = f.output::<role::Noni>(&rt, Stage::Draft, noni_in.clone()).await;
    assert!(!first.claims.is_empty());
    let dara_in = |pass, d: &DraftOutput| DaraInput {
        pass,
        draft: DraftView {
            platform: item.channel,
            body: d.body.clone(),
            claims: d.claims.clone(),
            thread: d.thread.clone(),
        },
        item: item.clone(),
        brief: brief.clone(),
        evidence: noni_in.evidence.clone(),
        research: Vec::new(),
        findings: Vec::new(),
    };
    let review: ReviewOutput = f.output::<role::Dara>(&rt, Stage::Review, dara_in(Pass::FIRST, &first)).await;
    assert_eq!(review.verdict, Verdict::Revise);
    let revision =
        Revision { previous_body: first.body.clone(), previous_claims: first.claims.clone(), issues: review.issues };
    let noni_in2 = NoniInput::new(Pass::REVISION, item.clone(), brief.clone(), &analysis.moments, Some(revision));
    let second: DraftOutput = f.output::<role::Noni>(&rt, Stage::Draft, noni_in2).await;
    let final_review: ReviewOutput = f.output::<role::Dara>(&rt, Stage::Review, dara_in(Pass::REVISION, &second)).await;
    assert_eq!(final_review.verdict, Verdict::Pass);
    // The same draft with policy's grounding finding handed to Dara is sent back, naming it.
    let finding = PolicyViolation {
        rule: PolicyRule::FiguresGrounded,
        detail: "the figure \"1\" does not appear in the evidence the draft cites".into(),
    };
    let flagged = DaraInput { findings: vec![finding], ..dara_in(Pass::REVISION, &second) };
    let caught: ReviewOutput = f.output::<role::Dara>(&rt, Stage::Review, flagged).await;
    assert_eq!(caught.verdict, Verdict::Revise);
    assert_eq!(caught.assessments.grounding.score.get(), 1);
    assert!(caught.issues.iter().any(|i| i.severity == Severity::High
        && i.problem == "Policy's check found that the figure \"1\" does not appear in the evidence the draft cites."));
    let limit = if item.channel == Platform::X { 280 } else { 3000 };
    assert!(second.body.chars().count() <= limit);
    let draft_hash = Draft::compute_hash(item.channel, &second.body, &second.claims, &[]);
    assert_eq!(draft_hash.len(), 64);
    assert!(second.thread.is_empty(), "a text item is one post");

    // The same brief as a Bluesky thread: an opening, a post per quote and the call to action,
    // each post within 300 graphemes, the text their join.
    let thread_item = PlanItem { channel: Platform::Bluesky, format: ContentFormat::Thread, ..item.clone() };
    let thread_in = NoniInput::new(Pass::REVISION, thread_item, brief.clone(), &analysis.moments, None);
    let thread: DraftOutput = f.output::<role::Noni>(&rt, Stage::Draft, thread_in).await;
    assert!(thread.thread.len() >= 3, "{:?}", thread.thread);
    assert!(thread.thread.iter().all(|p| !p.is_empty() && p.chars().count() <= 300), "{:?}", thread.thread);
    assert_eq!(thread.body, Draft::thread_body(&thread.thread));
    assert_eq!(thread.thread.last().map(String::as_str), brief.call_to_action.as_deref());

    // Maya lays out only what is in its catalog.
    let catalog = vec![
        EntityRef { kind: EntityKind::Job, id: "job-test".into() },
        EntityRef { kind: EntityKind::Draft, id: "draft-1".into() },
        EntityRef { kind: EntityKind::Review, id: "review-1".into() },
    ];
    let layout: Layout =
        f.output::<role::Maya>(&rt, Stage::Operator, MayaInput { catalog, view: "job_view".into() }).await;
    assert_eq!(layout.version, A2uiVersion::V09);
    crate::a2ui::tests::assert_valid(&layout);

    // Every session is gone; one activity record per invocation: 9 specialist runs, and a
    // route before each of the three routed ones (Nimi, Ryan, Temi) only.
    assert_eq!(f.sessions().await, 0);
    let activity = f.store.query(&f.workspace, ACTIVITY, &Query::all(100)).await.expect("activity");
    let mut runs = std::collections::BTreeMap::<String, usize>::new();
    for agent in activity.iter().filter_map(|d| d.data.get("agent").and_then(|a| a.as_str())) {
        *runs.entry(agent.to_owned()).or_default() += 1;
    }
    let expected = [
        (Role::Harmonia, 3),
        (Role::Nimi, 1),
        (Role::Ryan, 1),
        (Role::Temi, 1),
        (Role::Noni, 3),
        (Role::Dara, 3),
        (Role::Maya, 1),
    ];
    let expected: std::collections::BTreeMap<String, usize> =
        expected.into_iter().map(|(role, n)| (role.as_str().to_owned(), n)).collect();
    assert_eq!(runs, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invocations_are_counted_with_enum_labels_only() {
    use opentelemetry_sdk::metrics::{InMemoryMetricExporter, SdkMeterProvider};
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder().with_periodic_exporter(exporter.clone()).build();
    opentelemetry::global::set_meter_provider(provider.clone());

    let f = Fixture::new().await;
    let rt = f.runtime(Arc::new(OfflineModel));
    let nimi_in = NimiInput::new(&f.source, VerifiedPerformance::none(), EligibleMemory::none());
    rt.run_task::<role::Nimi>(&f.seed(Stage::Analyze, nimi_in)).await.expect("nimi");
    provider.force_flush().expect("flush");
    let exported = format!("{:?}", exporter.get_finished_metrics().expect("metrics"));
    for name in ["harmonia.agent.invocations", "gen_ai.client.operation.duration", "gen_ai.client.token.usage"] {
        assert!(exported.contains(name), "{name} exported");
    }
    for replaced in ["harmonia.agent.duration", "harmonia.agent.tokens"] {
        assert!(!exported.contains(replaced), "{replaced} is gone");
    }
    for label in ["nimi", "analyze", "success", "invoke_agent", "generate_content", "harmonia.offline", "offline"] {
        assert!(exported.contains(&format!("{label:?}")), "{label} is a label value: {exported}");
    }
    for token_type in ["input", "output"] {
        assert!(
            exported.contains(&format!("gen_ai.token.type\"), value: String(Static({token_type:?}))")),
            "{token_type}"
        );
    }
    // No label can carry content: nothing of the transcript appears in the export.
    for segment in &f.source.segments {
        assert!(!exported.contains(&segment.text), "transcript text in a metric");
    }
}
