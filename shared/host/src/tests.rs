//! A stage function's router through real HTTP on an ephemeral port.

use harmonia_local::{Local, Wrap};
use harmonia_pipeline::registry::Timing;
use harmonia_testkit::{assert_json_fallbacks, error_code, send, spawn_app};

use super::*;
use crate::cloud::reach;
use harmonia_connectors::Sandbox;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stage_function_answers_unknown_paths_and_methods_with_json_errors() {
    let dir = harmonia_testkit::temp_dir();
    let local = Local::open_with(dir.path(), Timing::CLOUD, Wrap::default()).await.expect("open");
    let app = stage_router(Function::Policy, &local.env).expect("the policy stage has subscriptions");
    let base = spawn_app(app).await;
    // The push endpoint itself (policy consumes `review.passed`) takes POST only.
    assert_json_fallbacks(&base, reqwest::Method::GET, "/push/review.passed").await;
    let http = reqwest::Client::new();
    let (status, body) = send(http.get(format!("{base}/push/nope"))).await;
    assert_eq!((status, error_code(&body)), (404, "unknown_route"));
    let (status, body) = send(http.delete(format!("{base}/healthz"))).await;
    assert_eq!((status, error_code(&body)), (405, "method_not_allowed"));
}

/// The configuration `vars` give, with a blob bucket named (Firestore state needs one).
fn config(vars: &[(&str, &str)]) -> Config {
    let table: std::collections::HashMap<&str, &str> =
        vars.iter().copied().chain([("HARMONIA_BLOBS", "gcs:harmonia-blobs")]).collect();
    Config::from_lookup(|name| table.get(name).map(Into::into)).expect("valid")
}

#[test]
fn a_function_judges_by_the_declaration_unless_it_holds_connectors_which_must_agree() {
    use harmonia_connectors::accounts::Accounts;
    use harmonia_contracts::domain::{Channel, ConnectorKind, Platform};
    let dir = harmonia_testkit::temp_dir();
    let store: Arc<dyn harmonia_store::Store> =
        Arc::new(harmonia_store_sqlite::SqliteStore::open(dir.path().join("s.sqlite")).expect("store"));
    let sandbox = Sandbox::new(store);
    let declared = r#"{"connector":"webhook","accounts":[{"platform":"bluesky","handle":"@fieldnotes.bsky.social","connector":"bluesky"}]}"#;
    let bluesky = Channel {
        platform: Platform::Bluesky,
        handle: "@fieldnotes.bsky.social".into(),
        max_posts_per_day: None,
        connector: ConnectorKind::Bluesky,
        max_characters: None,
    };

    // Policy on Cloud Run: no connector of its own, so it judges by what the deployment declares.
    let judged = reach(&config(&[("HARMONIA_PUBLISHING", declared)]), &sandbox, &Accounts::none()).expect("declared");
    assert_eq!(judged.connector, ConnectorKind::Webhook);
    assert!(judged.holds_account(&bluesky));
    // Nothing declared, nothing held: the sandbox alone.
    let alone = reach(&config(&[]), &sandbox, &Accounts::none()).expect("sandbox");
    assert_eq!((alone.connector, alone.holds_account(&bluesky)), (ConnectorKind::Sandbox, false));
    // A publisher whose connectors are not what is declared refuses to start, saying how.
    let e = reach(
        &config(&[("HARMONIA_CONNECTOR", "sandbox"), ("HARMONIA_PUBLISHING", declared)]),
        &sandbox,
        &Accounts::none(),
    )
    .expect_err("differs");
    assert_eq!(e.code, Code::InvalidConfig);
    assert!(
        e.message.contains("publishes through sandbox, not webhook")
            && e.message.contains("holds no account for bluesky @fieldnotes.bsky.social"),
        "{}",
        e.message
    );
    // One that agrees runs with what it holds.
    let same = reach(
        &config(&[("HARMONIA_CONNECTOR", "sandbox"), ("HARMONIA_PUBLISHING", r#"{"connector":"sandbox"}"#)]),
        &sandbox,
        &Accounts::none(),
    )
    .expect("agrees");
    assert_eq!(same.connector, ConnectorKind::Sandbox);
}
