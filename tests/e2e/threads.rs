//! A thread on Bluesky, on the real AT Protocol PDS (`HARMONIA_TEST_PDS`): the recorded job
//! with Temi planning its item as a `thread` and Noni writing one (`recordings/thread` over
//! `recordings/job`), published post by post, each replying to the one before.

use harmonia_e2e::recorded::{RecordedModel, Wire};
use serde_json::Value;

use crate::channels::{
    KEY, approved_then_killed, cli, posts, show, through_a_proxy_to_the_draft_gate,
    to_the_draft_gate,
};

/// The recorded job's answers, with the thread's standing in for Temi's plan and Noni's drafts.
pub(crate) async fn thread_model() -> RecordedModel {
    let recordings = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings");
    let dirs = [recordings.join("thread/openai"), recordings.join("job/openai")];
    RecordedModel::start_over(Wire::OpenAi, &[&dirs[0], &dirs[1]], KEY).await
}

/// The record key at the end of an `at://` URI.
fn rkey(uri: &str) -> &str {
    uri.rsplit('/').next().unwrap_or_default()
}

/// `did`'s post records as (URI, CID, text, reply refs), in the order of their reply chain
/// when they form one: the post replying to nothing first, then each post replying to the one
/// before; any other record after them, as listed.
async fn records(did: &str) -> Vec<(String, String, String, Value)> {
    let mut listed: Vec<(String, String, String, Value)> = posts(did)
        .await
        .into_iter()
        .map(|r| {
            let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (text(&r["uri"]), text(&r["cid"]), text(&r["value"]["text"]), r["value"]["reply"].clone())
        })
        .collect();
    let mut chain = Vec::new();
    let mut parent: Option<String> = None;
    while let Some(next) = listed.iter().position(|(_, _, _, reply)| match &parent {
        None => reply.is_null(),
        Some(uri) => reply["parent"]["uri"] == uri.as_str(),
    }) {
        let post = listed.remove(next);
        parent = Some(post.0.clone());
        chain.push(post);
    }
    chain.extend(listed);
    chain
}

/// The posts of the publication `show` gives.
fn parts(shown: &Value) -> Vec<Value> {
    shown["publication"]["thread"].as_array().cloned().expect("the publication's posts")
}

/// Each post's receipt names the post of `ids` at its position, and the thread is verified as
/// its first.
fn receipts_name(shown: &Value, ids: &[&str]) {
    let parts = parts(shown);
    assert_eq!(parts.len(), ids.len(), "{parts:?}");
    for (n, (part, id)) in parts.iter().zip(ids).enumerate() {
        assert_eq!(part["receipt"]["post"], *id, "post {}", n + 1);
    }
    assert_eq!(shown["publication"]["verification"]["outcome"]["post"], ids[0], "the thread is its first post");
}

#[tokio::test]
async fn a_thread_killed_after_its_second_post_is_finished_by_the_next_command_as_one_reply_chain() {
    let model = thread_model().await;
    let (did, proxy, dir, job) = through_a_proxy_to_the_draft_gate(&model.url).await;

    // The operator sees the thread post by post, each with its own length.
    let shown = show(dir.path(), &model.url, &job).await;
    assert_eq!(shown["selected_item"]["format"], "thread", "{}", shown["selected_item"]);
    let draft = shown["drafts"].as_array().and_then(|d| d.last()).cloned().expect("a draft");
    let thread: Vec<String> = draft["thread"]
        .as_array()
        .expect("the draft is a thread")
        .iter()
        .map(|p| p["body"].as_str().expect("text").to_owned())
        .collect();
    assert_eq!(thread.len(), 3, "{draft}");
    assert_eq!(draft["body"], thread.join("\n\n"));
    let (code, text, err) = cli(dir.path(), &model.url, &["show", &job]).await;
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("a thread of 3 posts, each replying to the one before"), "{text}");
    for (n, post) in thread.iter().enumerate() {
        let at = text.find(&format!("post {} of 3 ", n + 1)).expect("each post is numbered");
        assert!(text[at..].contains(&format!("{post}\n")), "post {} verbatim after its number:\n{text}", n + 1);
    }

    // The dispatcher, run when the thread is due, makes the first post, then the second, and
    // dies before it hears the second's answer.
    let second = approved_then_killed(dir.path(), &model.url, &job, proxy.arm_at(2).await).await;
    let made = records(&did).await;
    assert_eq!(made.len(), 2, "two posts when the process died");
    assert_eq!(made[1].0, second["uri"].as_str().expect("uri"), "the held create made the reply to the first");
    let shown = show(dir.path(), &model.url, &job).await;
    let parts = parts(&shown);
    assert_eq!(parts[0]["receipt"]["outcome"], "applied", "{parts:?}");
    assert!(parts[1]["begun"] == true && parts[1]["receipt"].is_null(), "begun, never answered: {parts:?}");
    assert!(parts[2]["begun"] != true && parts[2]["receipt"].is_null(), "not begun: {parts:?}");

    // The next command finishes the thread: the second post is read back, not made again, and
    // the third replies to it.
    let (code, out, err) = cli(dir.path(), &model.url, &["status", &job]).await;
    assert_eq!(code, 0, "{out}{err}");
    let shown = show(dir.path(), &model.url, &job).await;
    assert_eq!(shown["job"]["status"], "verified", "the next command finished it: {}", shown["publication"]);
    assert_eq!(shown["publication"]["verification"]["outcome"]["outcome"], "verified");

    let made = records(&did).await;
    assert_eq!(made.len(), 3, "exactly three posts: {made:?}");
    let texts: Vec<&str> = made.iter().map(|(_, _, text, _)| text.as_str()).collect();
    assert_eq!(texts, thread.iter().map(String::as_str).collect::<Vec<_>>(), "in order, as approved");
    let (root, first_cid) = (&made[0].0, &made[0].1);
    assert!(made[0].3.is_null(), "the first post replies to nothing: {:?}", made[0].3);
    for n in 1..3 {
        let reply = &made[n].3;
        assert_eq!((&reply["root"]["uri"], &reply["root"]["cid"]), (&Value::from(root.as_str()), &Value::from(first_cid.as_str())));
        assert_eq!(reply["parent"]["uri"], made[n - 1].0.as_str(), "post {} replies to post {n}", n + 1);
        assert_eq!(reply["parent"]["cid"], made[n - 1].1.as_str());
    }
    receipts_name(&shown, &made.iter().map(|(uri, ..)| rkey(uri)).collect::<Vec<_>>());
    assert!(model.misses().is_empty(), "{:?}", model.misses());
}

/// The recorded job's workspace file with its Bluesky channel first (the recorded strategy
/// writes for the first), every channel through the local sandbox, written into `dir`.
pub(crate) fn sandbox_workspace(dir: &std::path::Path) -> std::path::PathBuf {
    let recordings = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings/job");
    let workspace = std::fs::read_to_string(recordings.join("workspace.toml")).expect("workspace");
    let bluesky = "[[channels]]\nplatform = \"bluesky\"\nhandle = \"@fieldnotes.bsky.social\"\n";
    assert!(workspace.contains(bluesky), "{workspace}");
    let workspace = workspace.replace(bluesky, "").replacen("[[channels]]", &format!("{bluesky}\n[[channels]]"), 1);
    let file = dir.join("thread-workspace.toml");
    std::fs::write(&file, workspace).expect("write workspace");
    file
}

/// A data dir whose workspace is [`sandbox_workspace`].
async fn sandbox_dir() -> harmonia_testkit::TempDir {
    let dir = harmonia_testkit::temp_dir();
    let file = sandbox_workspace(dir.path());
    let (code, _, err) = cli(dir.path(), "", &["workspace", "init", file.to_str().expect("path")]).await;
    assert_eq!(code, 0, "{err}");
    dir
}

#[tokio::test]
async fn a_thread_is_edited_one_post_at_a_time_each_post_held_to_the_limit() {
    let model = thread_model().await;
    let dir = sandbox_dir().await;
    let job = to_the_draft_gate(dir.path(), &model.url).await;
    let shown = show(dir.path(), &model.url, &job).await;
    let drafts = |shown: &Value| shown["drafts"].as_array().map_or(0, Vec::len);
    let before = drafts(&shown);
    let posts = |shown: &Value| -> Vec<String> {
        let draft = shown["drafts"].as_array().and_then(|d| d.last()).cloned().unwrap_or_default();
        draft["thread"].as_array().into_iter().flatten().map(|p| p["body"].as_str().unwrap_or("").to_owned()).collect()
    };
    let original = posts(&shown);
    assert_eq!(original.len(), 3, "{}", shown["drafts"]);
    let file = dir.path().join("post.txt");
    let edit = |args: &'static [&'static str]| {
        let (dir, model, job, file) = (dir.path().to_owned(), model.url.clone(), job.clone(), file.clone());
        async move {
            let mut all = vec!["edit", job.as_str(), "--file", file.to_str().expect("path")];
            all.extend_from_slice(args);
            cli(&dir, &model, &all).await
        }
    };

    // Refused, each with its reason, storing nothing: the thread edited whole, a post it does
    // not have, and a post over Bluesky's 300 graphemes.
    std::fs::write(&file, "One post for the whole thread.").expect("write");
    let (code, _, err) = edit(&[]).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("[invalid_request]") && err.contains("a thread of 3 posts: edit one post at a time"), "{err}");
    let (code, _, err) = edit(&["--post", "4"]).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("[invalid_request]") && err.contains("there is no post 4"), "{err}");
    std::fs::write(&file, "Rangers kept working through the outage. ".repeat(8)).expect("write");
    let (code, _, err) = edit(&["--post", "1"]).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("[policy_violation]") && err.contains("post 1 of the thread: 328 of 300 graphemes"), "{err}");
    let shown = show(dir.path(), &model.url, &job).await;
    assert_eq!((drafts(&shown), posts(&shown)), (before, original.clone()), "nothing stored");

    // Post 2 rewritten: the other posts stay as they were, the text is the posts joined.
    let mine = format!("In Priya's words: {}", original[1]);
    std::fs::write(&file, &mine).expect("write");
    let (code, out, err) = edit(&["--post", "2"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let shown = show(dir.path(), &model.url, &job).await;
    let edited = posts(&shown);
    assert_eq!(edited, [original[0].clone(), mine.clone(), original[2].clone()]);
    let draft = shown["drafts"].as_array().and_then(|d| d.last()).cloned().expect("the edit");
    assert_eq!((draft["provenance"].as_str(), draft["body"].as_str()), (Some("operator"), Some(edited.join("\n\n").as_str())));

    // Approved and published now, through the sandbox: each post made, the chain read back.
    let version = shown["awaiting"]["version"].as_str().expect("version").to_owned();
    for args in [["approve", job.as_str(), "draft", "--version", &version].as_slice(), &["publish-now", &job]] {
        let (code, out, err) = cli(dir.path(), &model.url, args).await;
        assert_eq!(code, 0, "{args:?}: {out}{err}");
    }
    let shown = show(dir.path(), &model.url, &job).await;
    assert_eq!(shown["job"]["status"], "verified", "{}", shown["publication"]);
    let parts = parts(&shown);
    let sent: Vec<&str> = parts.iter().filter_map(|p| p["body"].as_str()).collect();
    assert_eq!(sent, edited.iter().map(String::as_str).collect::<Vec<_>>());
    for (n, part) in parts.iter().enumerate() {
        assert_eq!(part["receipt"]["outcome"], "applied", "post {}: {part}", n + 1);
        assert!(part["idempotency_key"].as_str().is_some_and(|k| k.ends_with(&format!("/{}", n + 1))), "{part}");
    }
    assert_eq!(shown["publication"]["verification"]["outcome"]["post"], parts[0]["receipt"]["post"]);
    let (code, text, err) = cli(dir.path(), &model.url, &["show", &job]).await;
    assert_eq!(code, 0, "{err}");
    for n in 1..=3 {
        assert!(text.contains(&format!("post {n} of 3: applied as post {}", parts[n - 1]["receipt"]["post"].as_str().unwrap_or("?"))), "{text}");
    }
    assert!(model.misses().is_empty(), "{:?}", model.misses());
}

/// The thread job's model, the recorded LinkedIn and X, and a data dir whose X channel comes
/// first (the recorded strategy writes for the first), LinkedIn beside it.
async fn x_thread() -> (RecordedModel, harmonia_testkit::linkedin::Server, harmonia_testkit::x::Server, harmonia_testkit::TempDir)
{
    let model = thread_model().await;
    let (linkedin, x_server, [l, x]) = crate::platforms::servers().await;
    let dir = crate::platforms::data_dir(&[x, l]).await;
    (model, linkedin, x_server, dir)
}

#[tokio::test]
async fn an_x_thread_whose_second_answer_is_lost_is_finished_by_listing_with_one_post_each() {
    let (model, linkedin, server, dir) = x_thread().await;
    // The first post is answered; the second is made, and its answer is cut.
    server.answer_next();
    server.lose_next_answer();
    let shown = crate::platforms::published(dir.path(), &model.url, "x").await;
    assert_eq!(shown["job"]["status"], "verified", "{}", shown["publication"]);

    let held = server.posts.lock().expect("lock").clone();
    let creates = server.creates.lock().expect("lock").len();
    assert!(server.failures.lock().expect("lock").is_empty(), "the second create's answer was cut");
    assert_eq!((held.len(), creates), (3, 3), "one post from one create each: the lost one was found by listing");
    let draft = shown["drafts"].as_array().and_then(|d| d.last()).cloned().expect("the draft");
    let thread: Vec<&str> = draft["thread"].as_array().expect("a thread").iter().filter_map(|p| p["body"].as_str()).collect();
    assert_eq!(held.iter().map(|h| h.text.as_str()).collect::<Vec<_>>(), thread, "in order, as approved");
    assert_eq!(held[0].in_reply_to, None);
    assert_eq!(held[1].in_reply_to.as_deref(), Some(held[0].id.as_str()), "post 2 replies to post 1");
    assert_eq!(held[2].in_reply_to.as_deref(), Some(held[1].id.as_str()), "post 3 replies to the post found by listing");
    receipts_name(&shown, &held.iter().map(|h| h.id.as_str()).collect::<Vec<_>>());
    assert_eq!(linkedin.count(), 0, "nothing went to LinkedIn");
    assert!(model.misses().is_empty(), "{:?}", model.misses());
}

#[tokio::test]
async fn a_mastodon_thread_whose_second_answer_is_lost_is_finished_under_the_same_key() {
    let model = thread_model().await;
    let (instance, url) = harmonia_testkit::mastodon::start().await;
    let dir = crate::engagement::mastodon_data_dir(&url).await;
    // The first status is answered; the second is created, and the instance answers 503.
    instance.answer_next();
    instance.failures.lock().expect("lock").push_back((503, "error-throttled.json", true));
    let shown = crate::platforms::published(dir.path(), &model.url, "mastodon").await;
    assert_eq!(shown["job"]["status"], "verified", "{}", shown["publication"]);

    // Three statuses, each under its own key; the second key was sent twice, and the instance
    // answered the repeat with the status it had made.
    let created = instance.created.lock().expect("lock").clone();
    let requests = instance.posts.lock().expect("lock").clone();
    assert_eq!(created.len(), 3, "{created:?}");
    let keys: Vec<String> = requests.iter().map(|(key, _)| key.clone().expect("an Idempotency-Key")).collect();
    assert_eq!(keys.len(), 4, "{keys:?}");
    assert!(keys[0].ends_with("/1") && keys[1].ends_with("/2") && keys[2] == keys[1] && keys[3].ends_with("/3"), "{keys:?}");
    let held = |n: usize| created.get(&keys[[0, 1, 3][n]]).cloned().expect("held");
    assert_eq!(held(0).in_reply_to, None);
    assert_eq!(held(1).in_reply_to.as_deref(), Some(held(0).id.as_str()), "status 2 replies to status 1");
    assert_eq!(held(2).in_reply_to.as_deref(), Some(held(1).id.as_str()), "status 3 replies to status 2");
    let statuses: Vec<_> = (0..3).map(held).collect();
    receipts_name(&shown, &statuses.iter().map(|h| h.id.as_str()).collect::<Vec<_>>());
    let sent: Vec<Value> = parts(&shown).iter().map(|p| p["body"].clone()).collect();
    assert_eq!(sent, statuses.iter().map(|h| Value::from(h.text.as_str())).collect::<Vec<_>>());
    assert!(model.misses().is_empty(), "{:?}", model.misses());
}

#[tokio::test]
async fn an_x_thread_throttled_after_its_first_post_is_finished_by_retry_without_repeating_it() {
    let (model, _linkedin, server, dir) = x_thread().await;
    // The first post is made; X refuses the second with its rate limit.
    server.answer_next();
    server.failures.lock().expect("lock").push_back((429, "error-throttled.json", false));
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/launch-talk.json");
    let (code, out, err) = cli(dir.path(), &model.url, &["--json", "run", source.to_str().expect("path")]).await;
    assert_eq!(code, 0, "{out}{err}");
    let job = serde_json::from_str::<Value>(&out).expect("run json")["job"]["id"].as_str().expect("job").to_owned();
    for args in [["approve", job.as_str(), "strategy"].as_slice(), &["approve", &job, "draft"]] {
        let (code, out, err) = cli(dir.path(), &model.url, args).await;
        assert_eq!(code, 0, "{args:?}: {out}{err}");
    }
    // The operator is told the refused post, and that the first stays live.
    let (code, out, err) = cli(dir.path(), &model.url, &["publish-now", &job]).await;
    assert_eq!(code, 0, "the decision is recorded: {out}{err}");
    assert!(
        err.contains("The job failed at publish on post 2 of its thread of 3: The platform is limiting")
            && err.contains("Its first post stays live; a retry of the job makes the rest"),
        "{err}"
    );
    let (code, text, err) = cli(dir.path(), &model.url, &["show", &job]).await;
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("post 1 of 3: applied as post") && text.contains("post 2 of 3: failed: connector_throttled"), "{text}");
    let shown = show(dir.path(), &model.url, &job).await;
    assert_eq!(shown["job"]["status"], "failed", "{}", shown["publication"]);
    assert_eq!(shown["publication"]["receipt"]["outcome"]["code"], "connector_throttled", "{}", shown["publication"]);
    let parts = parts(&shown);
    assert_eq!(parts[0]["receipt"]["outcome"], "applied", "{parts:?}");
    assert_eq!(parts[1]["receipt"]["code"], "connector_throttled", "{parts:?}");
    assert_eq!(server.count(), 1, "one post made before the refusal");

    // Once the limit has passed, a retry makes the rest, replying to the post already made.
    let (code, out, err) = cli(dir.path(), &model.url, &["retry", &job]).await;
    assert_eq!(code, 0, "{out}{err}");
    let shown = show(dir.path(), &model.url, &job).await;
    assert_eq!(shown["job"]["status"], "verified", "{}", shown["publication"]);
    let held = server.posts.lock().expect("lock").clone();
    assert_eq!(held.len(), 3, "the first post is not made again");
    assert_eq!(held[1].in_reply_to.as_deref(), Some(held[0].id.as_str()));
    assert_eq!(held[2].in_reply_to.as_deref(), Some(held[1].id.as_str()));
    receipts_name(&shown, &held.iter().map(|h| h.id.as_str()).collect::<Vec<_>>());
    assert!(model.misses().is_empty(), "{:?}", model.misses());
}
