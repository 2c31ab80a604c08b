//! `GET`/`PUT /v1/workspace` through real HTTP: invalid files are refused naming the field path
//! and store nothing; valid ones make version 1, then new versions only when content changes.

use std::sync::Arc;

use harmonia_contracts::ids::WorkspaceId;
use harmonia_local::Local;
use harmonia_pipeline::records::{WORKSPACE_VERSIONS, WORKSPACES};
use harmonia_store::scan_all;
use harmonia_testkit::samples::HELD_OUT_WORKSPACE;
use harmonia_testkit::{error_code, send, spawn_app};
use serde_json::{Value, json};

use super::*;

struct Fx {
    url: String,
    token: String,
    local: Local,
    ws: WorkspaceId,
    _server: harmonia_testkit::Spawned,
    _dir: harmonia_testkit::TempDir,
}

async fn fixture() -> Fx {
    let dir = harmonia_testkit::temp_dir();
    let local = Local::open(dir.path()).await.expect("open");
    let ws: WorkspaceId = "riverside".parse().expect("id");
    // Changing the configuration is an admin's decision.
    let token = crate::tests::credential(&*local.env.store, &ws, "ana", Role::Admin).await;
    let credentials = Credentials::new(local.env.store.clone());
    let server = spawn_app(app(OperatorState { env: local.env.clone(), credentials: Arc::new(credentials) })).await;
    Fx { url: format!("{server}/v1/workspace"), token, local, ws, _server: server, _dir: dir }
}

impl Fx {
    async fn put(&self, content_type: &str, body: String) -> (u16, Value) {
        let req = reqwest::Client::new()
            .put(&self.url)
            .bearer_auth(&self.token)
            .header("content-type", content_type)
            .body(body);
        send(req).await
    }

    async fn get(&self) -> (u16, Value) {
        send(reqwest::Client::new().get(&self.url).bearer_auth(&self.token)).await
    }

    /// How many head records and versions the workspace holds.
    async fn stored(&self) -> (usize, usize) {
        let store = &*self.local.env.store;
        let head = store.get(&self.ws, WORKSPACES, &harmonia_pipeline::records::doc_id(&self.ws)).await.expect("get");
        let versions = scan_all(store, &self.ws, WORKSPACE_VERSIONS).await.expect("scan");
        (usize::from(head.is_some()), versions.len())
    }
}

/// Bad files (edits of the held-out file) and the field path each error must name.
fn bad_files() -> Vec<(String, &'static str)> {
    let base = HELD_OUT_WORKSPACE;
    vec![
        (base.replace("platform = \"linkedin\"", "platform = \"myspace\""), "`channels[1].platform`"),
        (
            base.replace("handle = \"riverside-public-library\"", "handle = \"r\"\nfollowers = 2"),
            "`channels[1].followers`",
        ),
        (base.replace("mode = \"development\"", "mode = \"staging\""), "`mode`"),
        (base.replace("America/Chicago", "America/Springfield"), "`timezone`"),
        (base.replace("end = \"14:00\"", "end = \"09:00\""), "`posting_windows[0].end`"),
        (base.replace("start = \"09:00\"", "start = \"9am\""), "`posting_windows[1].start`"),
        (base.replace("name = \"Riverside Public Library\"", "name = \"\""), "`name`"),
        (
            base.replace("goals = [", "goals = [\"a\", \"b\", \"c\", \"d\", \"e\", \"f\", \"g\", \"h\", \"i\", \"j\","),
            "`goals`",
        ),
        (base.replace("posts_per_week = 3", "posts_per_week = 0"), "`cadence.posts_per_week`"),
        (format!("surprise = true\n{base}"), "`surprise`"),
        (format!("{base}\nsurprise = true\n"), "`cadence.surprise`"),
        (base.replace("voice = \"Friendly", "voice = Friendly"), "line 4"),
    ]
}

#[tokio::test]
async fn invalid_files_are_refused_with_their_path_and_nothing_is_stored() {
    let fx = fixture().await;
    for (file, path) in bad_files() {
        let (status, body) = fx.put("application/toml", file).await;
        assert_eq!((status, error_code(&body)), (400, "invalid_workspace_config"), "{path}: {body}");
        let message = body["error"]["message"].as_str().expect("message");
        assert!(message.contains(path), "{path}: {message}");
        assert_eq!(fx.stored().await, (0, 0), "{path}: nothing stored");
    }
    let (status, body) = fx.get().await;
    assert_eq!((status, error_code(&body)), (409, "workspace_not_configured"), "{body}");

    // Once configured, an invalid update leaves version 1 as it was.
    let (status, _) = fx.put("application/toml", HELD_OUT_WORKSPACE.to_owned()).await;
    assert_eq!(status, 201);
    for (file, path) in bad_files() {
        let (status, body) = fx.put("application/toml", file).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert_eq!(fx.stored().await, (1, 1), "{path}: nothing stored");
    }
}

#[tokio::test]
async fn a_put_makes_a_new_version_only_when_the_content_changes() {
    let fx = fixture().await;
    let (status, body) = fx.put("application/toml", HELD_OUT_WORKSPACE.to_owned()).await;
    assert_eq!((status, body["workspace"]["version"].as_u64(), body["changed"].as_bool()), (201, Some(1), Some(true)));
    let (status, body) = fx.put("application/toml", HELD_OUT_WORKSPACE.to_owned()).await;
    assert_eq!((status, body["workspace"]["version"].as_u64(), body["changed"].as_bool()), (200, Some(1), Some(false)));

    // The same keys as JSON, one changed: version 2.
    let (_, current) = fx.get().await;
    let mut config = current["workspace"]["config"].clone();
    config["call_to_action"] = json!("Renew your card online.");
    let (status, body) = fx.put("application/json", config.to_string()).await;
    assert_eq!((status, body["workspace"]["version"].as_u64(), body["changed"].as_bool()), (200, Some(2), Some(true)));
    let (status, body) = fx.get().await;
    assert_eq!(status, 200);
    assert_eq!(body["workspace"]["config"]["call_to_action"], "Renew your card online.");
    assert_eq!(body["workspace"]["created_by"], "ana");
    assert_eq!(fx.stored().await, (1, 2));
    // The file GET gives, sent back unchanged, is the same version: what the console edits.
    let file = body["file"].as_str().expect("the configuration as TOML").to_owned();
    assert!(file.contains("Renew your card online."), "{file}");
    let (status, body) = fx.put("application/toml", file).await;
    assert_eq!((status, body["workspace"]["version"].as_u64(), body["changed"].as_bool()), (200, Some(2), Some(false)));

    let (status, body) = fx.put("text/plain", HELD_OUT_WORKSPACE.to_owned()).await;
    assert_eq!((status, error_code(&body)), (400, "invalid_request"), "{body}");
}

#[tokio::test]
async fn only_an_admin_changes_the_configuration_while_every_operator_reads_it() {
    let fx = fixture().await;
    let (status, _) = fx.put("application/toml", HELD_OUT_WORKSPACE.to_owned()).await;
    assert_eq!(status, 201);
    let store = &*fx.local.env.store;
    let by = "ana".parse().expect("op");
    let operator =
        harmonia_auth::operators::add(store, &fx.ws, &"bo".parse().expect("op"), harmonia_auth::Role::Operator, &by)
            .await
            .expect("operator")
            .credential;
    assert!(!HELD_OUT_WORKSPACE.contains("mode = \"production\""));
    let changed = HELD_OUT_WORKSPACE.replacen("mode = \"development\"", "mode = \"production\"", 1);
    let put = reqwest::Client::new()
        .put(&fx.url)
        .bearer_auth(&operator)
        .header("content-type", "application/toml")
        .body(changed);
    let (status, body) = send(put).await;
    assert_eq!((status, error_code(&body)), (403, "forbidden"), "{body}");
    let (status, body) = send(reqwest::Client::new().get(&fx.url).bearer_auth(&operator)).await;
    assert_eq!((status, body["workspace"]["version"].as_u64()), (200, Some(1)), "{body}");
    assert_eq!(fx.stored().await, (1, 1), "the refused change stored nothing");
}
