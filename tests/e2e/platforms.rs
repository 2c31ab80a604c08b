//! Publishing to LinkedIn and X through the whole pipeline: the embedded default with a live
//! model (recorded OpenAI answers), a workspace whose LinkedIn and X channels name their own
//! connectors, their OAuth tokens in the data dir's 0600 `channels.toml`, and the recorded
//! LinkedIn and X servers (`harmonia_testkit::linkedin`, `harmonia_testkit::x`) answering with
//! the connectors' recordings and holding the posts made to them.

use harmonia_e2e::FunctionProcess;
use serde_json::Value;

use crate::channels::{cli, recorded_model, show};

/// The tokens each recorded server accepts.
const LINKEDIN: [&str; 2] = [harmonia_testkit::linkedin::TOKEN, harmonia_testkit::linkedin::REFRESH];
pub(crate) const X: [&str; 2] = [harmonia_testkit::x::TOKEN, harmonia_testkit::x::REFRESH];

/// The LinkedIn channel's workspace lines and its secrets (`token` and `refresh`) for the
/// server at `api`.
fn linkedin(api: &str, token_url: &str, [token, refresh]: [&str; 2]) -> (String, String) {
    use harmonia_testkit::linkedin::{AUTHOR, CLIENT_ID, CLIENT_SECRET};
    (
        "platform = \"linkedin\"\nhandle = \"field-notes\"\nconnector = \"linkedin\"\n".to_owned(),
        format!(
            "service = \"{api}\"\ntoken_url = \"{token_url}\"\nauthor = \"{AUTHOR}\"\naccess_token = \"{token}\"\nrefresh_token = \"{refresh}\"\nclient_id = \"{CLIENT_ID}\"\nclient_secret = \"{CLIENT_SECRET}\"\n"
        ),
    )
}

/// The X channel's workspace lines and its secrets (`token` and `refresh`) for the server at
/// `api`.
pub(crate) fn x(api: &str, token_url: &str, [token, refresh]: [&str; 2]) -> (String, String) {
    use harmonia_testkit::x::{CLIENT_ID, CLIENT_SECRET};
    (
        "platform = \"x\"\nhandle = \"@fieldnotes\"\nconnector = \"x\"\n".to_owned(),
        format!(
            "service = \"{api}\"\ntoken_url = \"{token_url}\"\naccess_token = \"{token}\"\nrefresh_token = \"{refresh}\"\nclient_id = \"{CLIENT_ID}\"\nclient_secret = \"{CLIENT_SECRET}\"\n"
        ),
    )
}

/// A data dir whose workspace is the recorded job's with `channels` (workspace lines and
/// secrets) as its channels, the first first (the recorded strategy writes for the first), and
/// their entries in the 0600 `channels.toml`.
pub(crate) async fn data_dir(channels: &[(String, String)]) -> harmonia_testkit::TempDir {
    let dir = harmonia_testkit::temp_dir();
    let recordings = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings/job");
    let recorded = std::fs::read_to_string(recordings.join("workspace.toml")).expect("workspace");
    let listed: String = channels.iter().map(|(lines, _)| format!("[[channels]]\n{lines}\n")).collect();
    let workspace = recorded
        .replace("[[channels]]\nplatform = \"linkedin\"\nhandle = \"field-notes\"\n\n", "")
        .replace("[[channels]]\nplatform = \"bluesky\"\nhandle = \"@fieldnotes.bsky.social\"\n", &listed);
    assert!(workspace.contains(&listed) && workspace.matches("[[channels]]").count() == channels.len(), "{workspace}");
    let file = dir.path().join("workspace.toml");
    std::fs::write(&file, workspace).expect("write workspace");
    let secrets = dir.path().join("channels.toml");
    let entries: String = channels.iter().map(|(lines, secret)| format!("[[channel]]\n{lines}{secret}\n")).collect();
    std::fs::write(&secrets, entries).expect("write secrets");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let (code, _, err) = cli(dir.path(), "", &["workspace", "init", file.to_str().expect("path")]).await;
    assert_eq!(code, 0, "{err}");
    dir
}

/// Run the bundled sample on `dir` and take it to its post: both approvals, then publish now.
/// The job's `show` afterwards, and what the commands said.
pub(crate) async fn published(dir: &std::path::Path, model: &str, platform: &str) -> Value {
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/launch-talk.json");
    let (code, out, err) = cli(dir, model, &["--json", "run", source.to_str().expect("path")]).await;
    assert_eq!(code, 0, "{out}{err}");
    let ran: Value = serde_json::from_str(&out).expect("run json");
    let job = ran["job"]["id"].as_str().expect("job").to_owned();
    for args in [["approve", job.as_str(), "strategy"].as_slice(), &["approve", &job, "draft"], &["publish-now", &job]]
    {
        let (code, out, err) = cli(dir, model, args).await;
        assert_eq!(code, 0, "{args:?}: {out}{err}");
    }
    let shown = show(dir, model, &job).await;
    assert_eq!(shown["selected_item"]["channel"], platform, "{}", shown["selected_item"]);
    shown
}

/// A recorded LinkedIn and a recorded X, and their channels with the tokens they accept.
pub(crate) async fn servers() -> (harmonia_testkit::linkedin::Server, harmonia_testkit::x::Server, [(String, String); 2]) {
    let (lserver, lapi, ltoken) = harmonia_testkit::linkedin::start().await;
    let (xserver, xapi, xtoken) = harmonia_testkit::x::start().await;
    (lserver, xserver, [linkedin(&lapi, &ltoken, LINKEDIN), x(&xapi, &xtoken, X)])
}

/// The approved text of a shown job.
fn body(shown: &Value) -> String {
    shown["drafts"].as_array().and_then(|d| d.last()).expect("draft")["body"].as_str().expect("body").to_owned()
}

#[tokio::test]
async fn a_workspace_with_linkedin_and_x_channels_publishes_once_to_each_and_reads_each_back() {
    let model = recorded_model().await;
    let (lserver, xserver, [l, x]) = servers().await;

    // The LinkedIn channel first: the job's post goes there.
    let dir = data_dir(&[l.clone(), x.clone()]).await;
    let (code, out, err) = cli(dir.path(), "", &["--json", "channels", "check"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let checked: Value = serde_json::from_str(&out).expect("check json");
    let rows = checked["channels"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "{checked}");
    assert!(rows.iter().all(|r| r["ok"] == true), "{checked}");
    assert_eq!((lserver.count(), xserver.count()), (0, 0), "a check posts nothing");

    let shown = published(dir.path(), &model.url, "linkedin").await;
    assert_eq!(shown["job"]["status"], "verified", "{}", shown["publication"]);
    let receipt = &shown["publication"]["receipt"]["outcome"];
    let held = lserver.posts.lock().expect("lock").clone();
    assert_eq!(held.len(), 1, "exactly one LinkedIn post");
    assert_eq!(receipt["post"], held[0].urn.as_str(), "the receipt holds the URN from x-restli-id");
    assert!(held[0].urn.starts_with("urn:li:share:"));
    assert_eq!(shown["publication"]["verification"]["outcome"]["post"], held[0].urn.as_str());
    // The text went as escaped commentary and came back whole.
    let creates = lserver.creates.lock().expect("lock").clone();
    assert_eq!(creates.len(), 1);
    assert!(creates[0]["commentary"].as_str().is_some_and(|c| c.contains("\\@priya.test")), "{}", creates[0]);
    assert!(body(&shown).contains("@priya.test"));
    assert_eq!(xserver.count(), 0, "nothing went to X");

    // The X channel first: the next job's post goes there.
    let dir = data_dir(&[x, l]).await;
    let shown = published(dir.path(), &model.url, "x").await;
    assert_eq!(shown["job"]["status"], "verified", "{}", shown["publication"]);
    let held = xserver.posts.lock().expect("lock").clone();
    assert_eq!(held.len(), 1, "exactly one X post");
    assert_eq!(shown["publication"]["receipt"]["outcome"]["post"], held[0].id.as_str());
    assert_eq!(held[0].text, body(&shown));
    assert_eq!(shown["publication"]["verification"]["outcome"]["post"], held[0].id.as_str());
    assert_eq!(lserver.count(), 1, "still one LinkedIn post");
    assert!(model.misses().is_empty(), "{:?}", model.misses());
}

/// A job whose post on `platform` (the channel `first`, beside `second`) is made but its
/// answer lost (`lose` cuts the connection after the create): verification resolves it by listing the account's
/// posts, and the server holds one post from one create (`held`: posts, creates).
async fn resolved_by_listing(
    model: &str,
    [first, second]: [(String, String); 2],
    platform: &str,
    lose: impl Fn(),
    held: impl Fn() -> (usize, usize),
) {
    let dir = data_dir(&[first, second]).await;
    lose();
    let shown = published(dir.path(), model, platform).await;
    assert_eq!(shown["job"]["status"], "verified", "{platform}: {}", shown["publication"]);
    assert_eq!(shown["publication"]["receipt"]["outcome"]["outcome"], "unknown", "{platform}");
    assert!(shown["publication"]["verification"]["outcome"]["post"].is_string(), "{platform}");
    assert_eq!(held(), (1, 1), "{platform}: one post, from one create: resolved by listing, never posted twice");
}

#[tokio::test]
async fn a_create_whose_answer_is_lost_is_resolved_by_listing_with_exactly_one_post() {
    let model = recorded_model().await;
    let (lserver, xserver, [l, x]) = servers().await;
    resolved_by_listing(
        &model.url,
        [l.clone(), x.clone()],
        "linkedin",
        || lserver.lose_next_answer(),
        || (lserver.count(), lserver.creates.lock().expect("lock").len()),
    )
    .await;
    resolved_by_listing(
        &model.url,
        [x, l],
        "x",
        || xserver.lose_next_answer(),
        || (xserver.count(), xserver.creates.lock().expect("lock").len()),
    )
    .await;
    assert!(model.misses().is_empty(), "{:?}", model.misses());
}

#[tokio::test]
async fn channels_check_refuses_a_bad_linkedin_token_and_a_bad_x_token_posting_nothing() {
    let (lserver, lapi, ltoken) = harmonia_testkit::linkedin::start().await;
    let (xserver, xapi, xtoken) = harmonia_testkit::x::start().await;
    // Access tokens refused, and refresh tokens that cannot cure them (revoked with them).
    let revoked = |platform| [format!("revoked-{platform}-access"), format!("revoked-{platform}-refresh")];
    let (l, xs) = (revoked("linkedin"), revoked("x"));
    for channel in [linkedin(&lapi, &ltoken, [&l[0], &l[1]]), x(&xapi, &xtoken, [&xs[0], &xs[1]])] {
        let dir = data_dir(std::slice::from_ref(&channel)).await;
        let (code, out, err) = FunctionProcess::run_cli(dir.path(), &["channels", "check"], &[], &[]).await;
        assert_eq!(code, 1, "{out}{err}");
        assert!(err.contains("[connector_auth]") && err.contains("Nothing was posted"), "{err}");
        assert!(out.contains("FAILED") && out.contains("refused the credentials"), "{out}");
        assert!(!format!("{out}{err}").contains("revoked-"), "no credential is shown: {out}{err}");
    }
    assert_eq!((lserver.count(), xserver.count()), (0, 0));
    assert!(lserver.creates.lock().expect("lock").is_empty() && xserver.creates.lock().expect("lock").is_empty());
}
