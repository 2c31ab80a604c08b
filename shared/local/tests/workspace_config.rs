//! Must show (issue 11): a held-out transcript (a library board meeting, not the bundled
//! sample) run in a workspace configured for its own organisation yields a strategy and a
//! post that carry that workspace's call to action, audience and channels, and no text of the
//! demo brand.

use std::time::Duration;

use harmonia_contracts::domain::{Draft, JobStatus, WorkspaceConfig};
use harmonia_contracts::ids::WorkspaceId;
use harmonia_local::{DEMO_CONFIG, Local};
use harmonia_pipeline::formats::{self, Format};
use harmonia_pipeline::records::{DRAFTS, STRATEGIES, StrategyRecord, doc_id};
use harmonia_pipeline::steps::{current_draft_id, ingest};
use harmonia_pipeline::workspace;
use serde_json::Value;

use harmonia_testkit::samples::{HELD_OUT_TRANSCRIPT_VTT, HELD_OUT_WORKSPACE as CONFIG};

const TRANSCRIPT: &[u8] = HELD_OUT_TRANSCRIPT_VTT.as_bytes();
const WAIT: Duration = Duration::from_secs(120);

/// Every text value of the demo brand's configuration (name, audience, voice, goals, call to
/// action, handles): none may reach another workspace's output.
fn demo_brand_texts() -> Vec<String> {
    let demo: Value = toml::from_str(DEMO_CONFIG).expect("the demo file is TOML");
    let mut texts = Vec::new();
    for key in ["name", "audience", "voice", "call_to_action"] {
        texts.push(demo[key].as_str().expect("text").to_owned());
    }
    texts.extend(demo["goals"].as_array().expect("goals").iter().filter_map(Value::as_str).map(str::to_owned));
    // The distinctive phrases inside them, so a paraphrase built from fragments is caught too.
    texts.extend(["Field Notes", "offline-first", "teams in the field", "Watch the full talk"].map(str::to_owned));
    texts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_held_out_transcript_carries_its_own_workspaces_call_to_action_and_no_demo_brand() {
    let dir = tempfile::tempdir().expect("temp dir");
    let local = Local::open(dir.path()).await.expect("open");
    let ws: WorkspaceId = "riverside".parse().expect("id");
    let config = WorkspaceConfig::from_toml(CONFIG).expect("valid configuration");
    let first =
        workspace::init(&*local.env.store, &ws, config.clone(), &"admin".parse().expect("id")).await.expect("init");
    local.prepare(&ws).await.expect("prepare");

    let input = formats::parse(TRANSCRIPT, Format::WebVtt, "October board meeting", "en").expect("transcript");
    let job = ingest(&local.env, &ws, input, None, None).await.expect("ingest");
    assert_eq!(job.workspace_version, first.version);
    let done = local.drive(&ws, &job.id, true, WAIT, |_| {}).await.expect("drive");
    assert_eq!(done.status, JobStatus::Verified, "{:?}", done.failure);

    let store = &*local.env.store;
    let strategy: StrategyRecord =
        store.get(&ws, STRATEGIES, &doc_id(&job.id)).await.expect("read").expect("strategy").decode().expect("decode");
    let strategy = strategy.strategy;
    assert_eq!(strategy.audience, config.audience);
    assert_eq!(strategy.voice, config.voice);
    assert!(strategy.objective.starts_with(config.goals[0].as_str()), "{}", strategy.objective);
    let platforms: Vec<_> = config.channels.iter().map(|c| c.platform).collect();
    for brief in &strategy.briefs {
        assert_eq!(brief.call_to_action.as_deref(), Some(config.call_to_action.as_str()));
        assert!(brief.platforms.iter().all(|p| platforms.contains(p)), "{:?}", brief.platforms);
    }
    let draft: Draft = store
        .get(&ws, DRAFTS, &doc_id(current_draft_id(&done)))
        .await
        .expect("read")
        .expect("draft")
        .decode()
        .expect("decode");
    assert!(draft.body.contains(&config.call_to_action), "{}", draft.body);
    assert!(platforms.contains(&draft.platform));

    let produced = [serde_json::to_string(&strategy).expect("json"), serde_json::to_string(&draft).expect("json")];
    for text in demo_brand_texts() {
        for output in &produced {
            assert!(!output.to_lowercase().contains(&text.to_lowercase()), "demo-brand text {text:?} in {output}");
        }
    }
}

#[tokio::test]
async fn a_workspace_without_a_configuration_refuses_sources_and_stores_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let local = Local::open(dir.path()).await.expect("open");
    let ws: WorkspaceId = "unconfigured".parse().expect("id");
    let input = formats::parse(TRANSCRIPT, Format::WebVtt, "October board meeting", "en").expect("transcript");
    let refused = ingest(&local.env, &ws, input, None, None).await.expect_err("no configuration");
    assert_eq!(refused.code, harmonia_contracts::Code::WorkspaceNotConfigured);
    assert!(refused.message.contains("harmonia workspace init FILE"), "{}", refused.message);
    let jobs = harmonia_store::scan_all(&*local.env.store, &ws, harmonia_pipeline::records::JOBS).await.expect("scan");
    assert!(jobs.is_empty());
}
