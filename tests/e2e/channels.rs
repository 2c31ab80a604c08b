//! Publishing to Bluesky on a real AT Protocol PDS (the reference `@atproto/pds` that
//! `infra/emulators/start.sh` starts, `HARMONIA_TEST_PDS`): the embedded default with a live
//! model (recorded OpenAI answers), a workspace whose Bluesky channel names the `bluesky`
//! connector, and the account's app password in the data dir's 0600 `channels.toml`.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use harmonia_connectors::bluesky::{Bluesky, BlueskyConfig};
use harmonia_connectors::{Connector, Found, Lookup, Outgoing, Sent};
use harmonia_contracts::domain::{ConnectorKind, Platform};
use harmonia_contracts::tool::Provenance;
use harmonia_e2e::FunctionProcess;
use harmonia_e2e::recorded::{RecordedModel, Wire};
use serde_json::{Value, json};
use tokio::sync::{Mutex, oneshot};

pub(crate) const KEY: &str = "recorded-key-1234";

pub(crate) fn pds() -> String {
    std::env::var("HARMONIA_TEST_PDS").expect(
        "HARMONIA_TEST_PDS names the test PDS: run infra/emulators/start.sh and source infra/emulators/.run/env",
    )
}

/// An XRPC call to the test PDS; (status, body).
async fn xrpc(
    method: Method,
    name: &str,
    token: Option<&str>,
    query: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, Value) {
    let client = reqwest::Client::new();
    let mut request = client.request(method, format!("{}/xrpc/{name}", pds())).query(query);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("the PDS answers");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A new account on the PDS with an app password: (handle, did, app password).
pub(crate) async fn account() -> (String, String, String) {
    let handle = format!("{}.test", harmonia_testkit::unique("u").replace('-', ""));
    let (status, created) = xrpc(
        Method::POST,
        "com.atproto.server.createAccount",
        None,
        &[],
        Some(json!({"handle": handle, "email": format!("{handle}@example.com"), "password": "account-password-1"})),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    let token = created["accessJwt"].as_str().expect("access token");
    let (status, app) =
        xrpc(Method::POST, "com.atproto.server.createAppPassword", Some(token), &[], Some(json!({"name": "harmonia"})))
            .await;
    assert_eq!(status, 200, "{app}");
    (handle, created["did"].as_str().expect("did").to_owned(), app["password"].as_str().expect("password").to_owned())
}

/// The DID of `priya.test`, the handle the recorded draft mentions (created once per PDS).
pub(crate) async fn priya() -> String {
    let _ = xrpc(
        Method::POST,
        "com.atproto.server.createAccount",
        None,
        &[],
        Some(json!({"handle": "priya.test", "email": "priya@example.com", "password": "account-password-2"})),
    )
    .await;
    let (status, resolved) =
        xrpc(Method::GET, "com.atproto.identity.resolveHandle", None, &[("handle", "priya.test")], None).await;
    assert_eq!(status, 200, "{resolved}");
    resolved["did"].as_str().expect("did").to_owned()
}

/// Every post record in `did`'s repository.
pub(crate) async fn posts(did: &str) -> Vec<Value> {
    let (status, listed) = xrpc(
        Method::GET,
        "com.atproto.repo.listRecords",
        None,
        &[("repo", did), ("collection", "app.bsky.feed.post"), ("limit", "100")],
        None,
    )
    .await;
    assert_eq!(status, 200, "{listed}");
    listed["records"].as_array().cloned().unwrap_or_default()
}

/// A forwarding proxy to the PDS that, once armed, lets the armed `createRecord` reach the PDS,
/// reports that the record was created, and then never answers: the caller is killed while it
/// waits, between the call and the receipt.
#[derive(Clone)]
pub(crate) struct Proxy {
    armed: Arc<Mutex<Option<Armed>>>,
}

/// The creates still to pass before the held one, and who hears the held one's record.
type Armed = (usize, oneshot::Sender<Value>);

async fn forward(State(proxy): State<Proxy>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let target = format!("{}{}", pds(), uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"));
    let mut request = reqwest::Client::new().request(method, target).body(body);
    for name in ["authorization", "content-type"] {
        if let Some(value) = headers.get(name) {
            request = request.header(name, value);
        }
    }
    let Ok(response) = request.send().await else { return StatusCode::BAD_GATEWAY.into_response() };
    let status = StatusCode::from_u16(response.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let bytes = response.bytes().await.unwrap_or_default();
    let create = uri.path().ends_with("com.atproto.repo.createRecord");
    let held = {
        let mut armed = proxy.armed.lock().await;
        match armed.as_mut() {
            Some((0, _)) if create => armed.take().map(|(_, created)| created),
            Some((passing, _)) if create => {
                *passing -= 1;
                None
            }
            _ => None,
        }
    };
    if let Some(created) = held {
        let _ = created.send(serde_json::from_slice(&bytes).unwrap_or(Value::Null));
        // The answer never leaves: the caller is killed before it could read one.
        std::future::pending::<()>().await;
    }
    (status, [("content-type", "application/json")], Body::from(bytes)).into_response()
}

impl Proxy {
    pub(crate) async fn start() -> (Self, String) {
        let proxy = Proxy { armed: Arc::default() };
        let app = axum::Router::new().fallback(forward).with_state(proxy.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (proxy, url)
    }

    /// Hold the next `createRecord`'s answer; the receiver hears the record it created.
    async fn arm(&self) -> oneshot::Receiver<Value> {
        self.arm_at(1).await
    }

    /// Let `n - 1` creates through, then hold the `n`-th one's answer; the receiver hears the
    /// record it created.
    pub(crate) async fn arm_at(&self, n: usize) -> oneshot::Receiver<Value> {
        let (tx, rx) = oneshot::channel();
        *self.armed.lock().await = Some((n.saturating_sub(1), tx));
        rx
    }
}

/// A data dir configured for `handle`'s Bluesky channel through `service`, with the
/// credentials `app_password` (file mode 0600).
pub(crate) async fn data_dir(service: &str, handle: &str, app_password: &str) -> harmonia_testkit::TempDir {
    let channel = format!("platform = \"bluesky\"\nhandle = \"@{handle}\"\nconnector = \"bluesky\"\n");
    let secret = format!("service = \"{service}\"\nidentifier = \"{handle}\"\napp_password = \"{app_password}\"\n");
    data_dir_for(&channel, &secret).await
}

/// A data dir whose workspace is the recorded job's, with `channel` (its `platform`, `handle`
/// and `connector` lines) as its first channel (the recorded strategy writes for the first),
/// the LinkedIn one through the sandbox, and that channel's entry in the 0600 `channels.toml`
/// (`channel` and then `secret`, its credentials).
pub(crate) async fn data_dir_for(channel: &str, secret: &str) -> harmonia_testkit::TempDir {
    let dir = harmonia_testkit::temp_dir();
    let recordings = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings/job");
    let workspace = std::fs::read_to_string(recordings.join("workspace.toml")).expect("workspace");
    let workspace = workspace
        .replace(
            "[[channels]]\nplatform = \"linkedin\"\nhandle = \"field-notes\"\n",
            "[[channels]]\nplatform = \"linkedin\"\nhandle = \"field-notes\"\nconnector = \"sandbox\"\n",
        )
        .replace("[[channels]]\nplatform = \"bluesky\"\nhandle = \"@fieldnotes.bsky.social\"\n", "")
        .replacen("[[channels]]", &format!("[[channels]]\n{channel}\n[[channels]]"), 1);
    let file = dir.path().join("workspace.toml");
    std::fs::write(&file, workspace).expect("write workspace");
    let secrets = dir.path().join("channels.toml");
    std::fs::write(&secrets, format!("[[channel]]\n{channel}{secret}")).expect("write secrets");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let (code, _, err) = cli(dir.path(), "", &["workspace", "init", file.to_str().expect("path")]).await;
    assert_eq!(code, 0, "{err}");
    dir
}

/// `harmonia --model openai ARGS` against the recorded model at `model_url`.
pub(crate) async fn cli(dir: &std::path::Path, model_url: &str, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["--model", "openai"];
    all.extend_from_slice(args);
    FunctionProcess::run_cli(dir, &all, &model_env(model_url), &["HARMONIA_MODEL"]).await
}

/// The environment that points `--model openai` at the recorded model at `model_url`.
pub(crate) fn model_env(model_url: &str) -> [(&'static str, &str); 3] {
    [("OPENAI_BASE_URL", model_url), ("OPENAI_MODEL", "gpt-4.1-mini"), ("OPENAI_API_KEY", KEY)]
}

/// Run the bundled sample to the draft gate on `dir`; the job id.
pub(crate) async fn to_the_draft_gate(dir: &std::path::Path, model: &str) -> String {
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/launch-talk.json");
    let (code, out, err) = cli(dir, model, &["--json", "run", source.to_str().expect("path")]).await;
    assert_eq!(code, 0, "{out}{err}");
    let job = serde_json::from_str::<Value>(&out).expect("json")["job"]["id"].as_str().expect("job").to_owned();
    let (code, out, err) = cli(dir, model, &["approve", &job, "strategy"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let (_, shown, _) = cli(dir, model, &["--json", "show", &job]).await;
    let shown: Value = serde_json::from_str(&shown).expect("show json");
    assert_eq!(shown["job"]["status"], "awaiting_draft_approval", "{}", shown["policy"]);
    assert_eq!(shown["selected_item"]["channel"], "bluesky");
    job
}

/// A new account on the PDS, whose Bluesky channel posts through a [`Proxy`], and the job of
/// the recorded `model` at its draft gate there: (the account's DID, the proxy, the data dir,
/// the job).
pub(crate) async fn through_a_proxy_to_the_draft_gate(model: &str) -> (String, Proxy, harmonia_testkit::TempDir, String) {
    let (handle, did, app_password) = account().await;
    priya().await;
    let (proxy, service) = Proxy::start().await;
    let dir = data_dir(&service, &handle, &app_password).await;
    let job = to_the_draft_gate(dir.path(), model).await;
    (did, proxy, dir, job)
}

/// Approve `job`'s draft at its gate and run the dispatcher when it is due, killing it once
/// `created` hears the create the proxy held: the record that create made.
pub(crate) async fn approved_then_killed(
    dir: &std::path::Path,
    model: &str,
    job: &str,
    created: oneshot::Receiver<Value>,
) -> Value {
    let (code, out, err) = cli(dir, model, &["approve", job, "draft"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = cli(dir, model, &["--json", "schedule"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let listed: Value = serde_json::from_str(&out).expect("schedule json");
    let due = listed["schedule"][0]["due_at"].as_str().expect("due_at").to_owned();
    assert_eq!(listed["schedule"][0]["job"], job, "{listed}");
    let mut env = model_env(model).to_vec();
    env.push(("HARMONIA_NOW", &due));
    let mut dispatch = FunctionProcess::cli_command(dir, &["--model", "openai", "dispatch"], &env, &["HARMONIA_MODEL"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("harmonia dispatch");
    let record = tokio::time::timeout(Duration::from_secs(60), created)
        .await
        .expect("the held create was made")
        .expect("record");
    dispatch.kill().await.expect("kill");
    record
}

/// Run `harmonia status` on `job` until the job is verified (at most 20 commands): what
/// `show` says then.
async fn carried_to_verified(dir: &std::path::Path, model: &str, job: &str) -> Value {
    let mut shown = Value::Null;
    for _ in 0..20 {
        let (code, out, err) = cli(dir, model, &["status", job]).await;
        assert_eq!(code, 0, "{out}{err}");
        shown = show(dir, model, job).await;
        if shown["job"]["status"] == "verified" {
            break;
        }
    }
    assert_eq!(shown["job"]["status"], "verified", "{}", shown["publication"]);
    shown
}

/// The post record `rkey` of `did`'s repository, as the PDS answers `getRecord`.
async fn post_record(did: &str, rkey: &str) -> Value {
    let query = [("repo", did), ("collection", "app.bsky.feed.post"), ("rkey", rkey)];
    let (status, record) = xrpc(Method::GET, "com.atproto.repo.getRecord", None, &query, None).await;
    assert_eq!(status, 200, "{record}");
    record
}

/// The recorded OpenAI answers of one whole job, served.
pub(crate) async fn recorded_model() -> RecordedModel {
    let recordings = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings/job/openai");
    RecordedModel::start(Wire::OpenAi, &recordings, KEY).await
}

pub(crate) async fn show(dir: &std::path::Path, model: &str, job: &str) -> Value {
    let (code, shown, err) = cli(dir, model, &["--json", "show", job]).await;
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&shown).expect("show json")
}

#[tokio::test]
async fn an_approved_draft_becomes_one_bluesky_post_whose_receipt_reads_back_with_its_facets() {
    let model = recorded_model().await;
    let (handle, did, app_password) = account().await;
    let priya = priya().await;
    let dir = data_dir(&pds(), &handle, &app_password).await;

    let (code, out, err) = cli(dir.path(), &model.url, &["--json", "channels", "check"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let checked: Value = serde_json::from_str(&out).expect("check json");
    let bluesky = checked["channels"].as_array().and_then(|c| c.iter().find(|c| c["platform"] == "bluesky")).cloned();
    assert_eq!(bluesky.map(|b| b["ok"].clone()), Some(json!(true)), "{checked}");

    let job = to_the_draft_gate(dir.path(), &model.url).await;
    let (code, out, err) = cli(dir.path(), &model.url, &["approve", &job, "draft"]).await;
    assert_eq!(code, 0, "{out}{err}");
    // Approved is scheduled, not posted; the operator publishes it now.
    assert_eq!(show(dir.path(), &model.url, &job).await["job"]["status"], "scheduled", "{out}");
    assert_eq!(posts(&did).await.len(), 0, "nothing posted at approval");
    let (code, out, err) = cli(dir.path(), &model.url, &["publish-now", &job]).await;
    assert_eq!(code, 0, "{out}{err}");
    let shown = show(dir.path(), &model.url, &job).await;
    assert_eq!(shown["job"]["status"], "verified", "{}", shown["publication"]);
    let body =
        shown["drafts"].as_array().and_then(|d| d.last()).expect("draft")["body"].as_str().expect("body").to_owned();

    // The receipt names the record; reading that URI back gives the same CID and the text.
    let receipt = &shown["publication"]["receipt"]["outcome"];
    assert_eq!(receipt["outcome"], "applied", "{receipt}");
    let uri = receipt["record"]["uri"].as_str().expect("an at:// URI");
    let rkey = uri.rsplit('/').next().expect("rkey");
    assert_eq!(uri, format!("at://{did}/app.bsky.feed.post/{rkey}"));
    let record = post_record(&did, rkey).await;
    assert_eq!(record["cid"], receipt["record"]["cid"]);
    assert_eq!(record["value"]["text"], body.as_str());
    assert_eq!(shown["publication"]["verification"]["outcome"]["post"], rkey);

    // Each facet covers exactly its substring, by UTF-8 bytes (the text has a curly quote and
    // a dash before them).
    let text = body.as_bytes();
    let facets: Vec<(String, Value)> = record["value"]["facets"]
        .as_array()
        .expect("facets")
        .iter()
        .map(|f| {
            let at = |k: &str| f["index"][k].as_u64().expect("offset") as usize;
            (
                String::from_utf8(text[at("byteStart")..at("byteEnd")].to_vec()).expect("a whole substring"),
                f["features"][0].clone(),
            )
        })
        .collect();
    assert_eq!(facets.len(), 2, "{facets:?}");
    assert_eq!(facets[0].0, "@priya.test");
    assert_eq!(facets[0].1, json!({"$type": "app.bsky.richtext.facet#mention", "did": priya}));
    assert_eq!(facets[1].0, "video.example.com/launch-talk");
    assert_eq!(facets[1].1["uri"], "https://video.example.com/launch-talk");
    assert_eq!(posts(&did).await.len(), 1, "one post for one approved draft");
    assert!(model.misses().is_empty(), "{:?}", model.misses());
}

#[tokio::test]
async fn a_kill_between_the_create_and_the_receipt_still_leaves_exactly_one_post() {
    let model = recorded_model().await;
    let (did, proxy, dir, job) = through_a_proxy_to_the_draft_gate(&model.url).await;
    // The dispatcher, run when the post is due, creates the record, then dies before it hears
    // the answer.
    let record = approved_then_killed(dir.path(), &model.url, &job, proxy.arm().await).await;
    assert!(record["uri"].as_str().is_some_and(|u| u.starts_with("at://")), "{record}");
    assert_eq!(posts(&did).await.len(), 1);
    let shown = show(dir.path(), &model.url, &job).await;
    assert!(shown["publication"]["receipt"].is_null(), "killed before the receipt: {}", shown["publication"]);

    // The next commands carry the job on: the claim without a receipt is unknown, and
    // verification reads the key back instead of posting again.
    let shown = carried_to_verified(dir.path(), &model.url, &job).await;
    assert_eq!(shown["publication"]["receipt"]["outcome"]["outcome"], "unknown", "{}", shown["publication"]);
    assert_eq!(shown["publication"]["verification"]["outcome"]["outcome"], "verified");
    let rkey = record["uri"].as_str().and_then(|u| u.rsplit('/').next()).expect("rkey");
    assert_eq!(shown["publication"]["verification"]["outcome"]["post"], rkey, "the record the killed call made");
    assert_eq!(posts(&did).await.len(), 1, "exactly one post after recovery");
}

#[tokio::test]
async fn a_retried_create_is_resolved_by_read_back_and_a_wrong_app_password_posts_nothing() {
    let (handle, did, app_password) = account().await;
    let connector = |password: &str| {
        Bluesky::new(BlueskyConfig {
            service: pds(),
            identifier: handle.clone(),
            app_password: password.to_owned().into(),
            timeout: Duration::from_secs(10),
        })
        .expect("connector")
    };
    let ws = "ws".parse().expect("workspace");
    let post = Outgoing {
        idempotency_key: harmonia_testkit::unique("ws:draft"),
        platform: Platform::Bluesky,
        body: "Rangers logged 4,200 notes offline.".into(),
        provenance: Provenance::Live,
        reply: None,
    };
    let bluesky = connector(&app_password);
    assert_eq!(bluesky.kind(), ConnectorKind::Bluesky);
    let Sent::Applied(first) = bluesky.send(&ws, &post).await else { panic!("the first create is applied") };
    // A second create under the same key: the PDS refuses it (with a 500), and the connector
    // reads the key back instead of believing an outage or posting again.
    let Sent::Applied(again) = connector(&app_password).send(&ws, &post).await else {
        panic!("the retried create resolves to the same post")
    };
    assert_eq!(first, again);
    assert_eq!(posts(&did).await.len(), 1);
    let found = bluesky.read_back(Lookup::key(&ws, &post.idempotency_key)).await.expect("read back");
    assert!(
        matches!(&found, Found::Post { body, record, .. } if *body == post.body && *record == first.record),
        "{found:?}"
    );
    assert_eq!(bluesky.read_back(Lookup::key(&ws, "ws:never-posted")).await.ok(), Some(Found::Missing));

    let wrong = connector("wrong-wrong-wrong-wrong");
    assert_eq!(wrong.check().await, Err(harmonia_contracts::Code::ConnectorAuth));
    let other = Outgoing { idempotency_key: harmonia_testkit::unique("ws:draft"), ..post };
    assert_eq!(wrong.send(&ws, &other).await, Sent::Rejected(harmonia_contracts::Code::ConnectorAuth));
    assert_eq!(posts(&did).await.len(), 1, "nothing more was posted");

    // The command says the same, with its code and exit 1.
    let dir = data_dir(&pds(), &handle, "wrong-wrong-wrong-wrong").await;
    let (code, out, err) = cli(dir.path(), "", &["channels", "check"]).await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("[connector_auth]") && err.contains("Nothing was posted"), "{err}");
    assert!(out.contains("FAILED") && !err.contains("wrong-wrong"), "{out}{err}");
    assert_eq!(posts(&did).await.len(), 1);
}

#[tokio::test]
async fn three_posts_each_replying_to_the_one_before_make_one_reply_chain_on_the_pds() {
    let (handle, did, app_password) = account().await;
    let bluesky = Bluesky::new(BlueskyConfig {
        service: pds(),
        identifier: handle.clone(),
        app_password: app_password.into(),
        timeout: Duration::from_secs(10),
    })
    .expect("connector");
    let ws = "ws".parse().expect("workspace");
    let key = harmonia_testkit::unique("ws:draft");
    let texts = ["A storm took the towers for nine days.", "Rangers logged 4,200 notes offline.", "None was lost."];
    let mut made: Vec<harmonia_connectors::Posted> = Vec::new();
    for (n, text) in texts.iter().enumerate() {
        let reply = made.first().map(|root| harmonia_connectors::ReplyTo {
            root: root.clone(),
            parent: made.last().expect("a parent").clone(),
        });
        let post = Outgoing {
            idempotency_key: format!("{key}.{n}"),
            platform: Platform::Bluesky,
            body: (*text).to_owned(),
            provenance: Provenance::Live,
            reply,
        };
        let Sent::Applied(posted) = bluesky.send(&ws, &post).await else { panic!("post {n} is applied") };
        made.push(posted);
    }
    assert_eq!(posts(&did).await.len(), 3);
    // Each record names the thread's first post as its root and the one before as its parent.
    let uri = |p: &harmonia_connectors::Posted| p.record.as_ref().expect("a record").uri.clone();
    for (n, posted) in made.iter().enumerate() {
        let record = post_record(&did, posted.post.as_str()).await;
        match n {
            0 => assert!(record["value"].get("reply").is_none(), "{record}"),
            _ => {
                assert_eq!(record["value"]["reply"]["root"]["uri"], uri(&made[0]), "{record}");
                assert_eq!(record["value"]["reply"]["parent"]["uri"], uri(&made[n - 1]), "{record}");
                assert_eq!(record["value"]["reply"]["parent"]["cid"], made[n - 1].record.as_ref().expect("cid").cid);
            }
        }
        // Reading back says the same.
        let found = bluesky.read_back(Lookup::key(&ws, &format!("{key}.{n}"))).await.expect("read back");
        let Found::Post { replying_to, .. } = found else { panic!("found") };
        assert_eq!(replying_to, n.checked_sub(1).map(|p| made[p].post.clone()));
    }
}
