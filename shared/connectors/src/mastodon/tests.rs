//! The Mastodon connector against a recorded-response server ([`harmonia_testkit::mastodon`]):
//! a local axum server answering Mastodon's REST API with the recordings under `recordings/`
//! (bodies in the documented wire format). It keeps every request, and honours
//! `Idempotency-Key` as an instance does: a key it has seen is answered with the status created
//! under it, and only a new key creates one.

use std::time::Duration;

use harmonia_contracts::Code;
use harmonia_contracts::domain::Platform;
use harmonia_contracts::ids::{PostId, WorkspaceId};
use harmonia_contracts::tool::Provenance;

use super::{Mastodon, MastodonConfig, Visibility, decode_max_characters, decode_source, decode_status};
use crate::{Checked, Connector, Found, Lookup, Outgoing, Refusal, Sent};
use harmonia_testkit::mastodon::{TOKEN, recording, start as instance};

fn mastodon(url: &str, token: &str) -> Mastodon {
    Mastodon::new(MastodonConfig {
        instance: url.to_owned(),
        access_token: token.to_owned().into(),
        visibility: Visibility::Unlisted,
        timeout: Duration::from_secs(5),
    })
    .expect("client")
}

fn post(key: &str, provenance: Provenance) -> Outgoing {
    Outgoing {
        idempotency_key: key.into(),
        platform: Platform::Mastodon,
        body: "Rangers logged 4,200 notes offline. https://video.example.com/talk".into(),
        provenance,
        reply: None,
    }
}

fn ws() -> WorkspaceId {
    "ws".parse().expect("ws")
}

#[tokio::test]
async fn a_post_carries_its_idempotency_key_and_a_retry_is_answered_with_the_same_status() {
    let (i, url) = instance().await;
    let m = mastodon(&url, TOKEN);
    let first = m.send(&ws(), &post("ws:draft-1:abc", Provenance::Live)).await;
    let again = m.send(&ws(), &post("ws:draft-1:abc", Provenance::Live)).await;
    let Sent::Applied(posted) = &first else { panic!("applied: {first:?}") };
    assert_eq!(first, again, "the same key answers the same status");
    assert_eq!(posted.post.as_str(), "113572904271839205");
    assert_eq!(posted.url.as_deref(), Some("https://mastodon.example/@fieldnotes/113572904271839205"));
    assert_eq!(i.created.lock().expect("lock").len(), 1, "one status for one key");
    let posts = i.posts.lock().expect("lock").clone();
    assert_eq!(posts.len(), 2);
    for (key, body) in &posts {
        assert_eq!(key.as_deref(), Some("ws:draft-1:abc"));
        assert_eq!(body["status"], "Rangers logged 4,200 notes offline. https://video.example.com/talk");
        assert_eq!(body["visibility"], "unlisted");
    }
}

#[tokio::test]
async fn read_back_is_by_status_id_and_reads_the_text_as_written() {
    let (i, url) = instance().await;
    let m = mastodon(&url, TOKEN);
    let outgoing = post("ws:draft-2:abc", Provenance::Live);
    let Sent::Applied(posted) = m.send(&ws(), &outgoing).await else { panic!("applied") };
    let found =
        m.read_back(Lookup::key(&ws(), &outgoing.idempotency_key).posted(Some(&posted.post))).await.expect("read back");
    assert_eq!(
        found,
        Found::Post { post: posted.post.clone(), body: outgoing.body.clone(), record: None, replying_to: None }
    );
    // A reply names the status before it, and reads back with it.
    let reply = Outgoing {
        idempotency_key: "ws:draft-2:abc.1".into(),
        body: "And every note reached the office once the towers were back.".into(),
        reply: Some(crate::ReplyTo { root: posted.clone(), parent: posted.clone() }),
        ..outgoing.clone()
    };
    let Sent::Applied(second) = m.send(&ws(), &reply).await else { panic!("applied") };
    let sent = i.posts.lock().expect("lock").clone();
    assert_eq!(sent[0].1["in_reply_to_id"], serde_json::Value::Null, "the first replies to nothing");
    assert_eq!(sent[1].1["in_reply_to_id"], posted.post.as_str());
    let read = m.read_back(Lookup::key(&ws(), "k").posted(Some(&second.post))).await;
    assert!(matches!(read, Ok(Found::Post { replying_to: Some(ref p), .. }) if *p == posted.post), "{read:?}");
    // No id to read by: nothing is known under the key alone.
    assert_eq!(m.read_back(Lookup::key(&ws(), &outgoing.idempotency_key)).await.ok(), Some(Found::Missing));
    let other: PostId = "999".parse().expect("id");
    assert_eq!(
        m.read_back(Lookup::key(&ws(), &outgoing.idempotency_key).posted(Some(&other))).await.ok(),
        Some(Found::Missing)
    );
    // Its engagement is the status's counts (Mastodon has no quotes); a status the instance
    // no longer has (404) is gone, not a failure to try again.
    i.counts.lock().expect("lock").insert(posted.post.to_string(), [5, 1, 2]);
    let age = chrono::Duration::hours(1);
    let (key, workspace) = (&outgoing.idempotency_key, ws());
    let asked = |posted| crate::engagement::Asked { workspace: &workspace, idempotency_key: key, posted, age };
    let counts = crate::engagement::Engagement { likes: 5, reposts: 1, replies: 2, quotes: None };
    assert_eq!(m.engagement(asked(&posted)).await.ok(), Some(crate::engagement::Measured::Counts(counts)));
    let gone = crate::Posted::id(other);
    assert_eq!(m.engagement(asked(&gone)).await.ok(), Some(crate::engagement::Measured::Gone));
}

#[tokio::test]
async fn a_lost_answer_is_unknown_and_the_resend_with_the_same_key_finds_the_first_status() {
    let (i, url) = instance().await;
    let m = mastodon(&url, TOKEN);
    i.failures.lock().expect("lock").push_back((503, "error-throttled.json", true));
    let outgoing = post("ws:draft-3:abc", Provenance::Live);
    assert_eq!(m.send(&ws(), &outgoing).await, Sent::Unknown);
    // What verification does for an unknown outcome on Mastodon: the same key once more.
    let Sent::Applied(posted) = m.send(&ws(), &outgoing).await else { panic!("the first status") };
    assert_eq!(i.created.lock().expect("lock").len(), 1, "still one status");
    let found =
        m.read_back(Lookup::key(&ws(), &outgoing.idempotency_key).posted(Some(&posted.post))).await.expect("read back");
    assert!(matches!(found, Found::Post { ref body, .. } if *body == outgoing.body));
}

#[tokio::test]
async fn refusals_are_typed_and_a_mock_post_or_a_bad_token_posts_nothing() {
    let (i, url) = instance().await;
    let m = mastodon(&url, TOKEN);
    for (status, name, sent) in [
        (422, "error-unprocessable.json", Sent::Refused(Refusal::Invalid)),
        (429, "error-throttled.json", Sent::Unknown),
        (500, "error-throttled.json", Sent::Unknown),
    ] {
        i.failures.lock().expect("lock").push_back((status, name, false));
        assert_eq!(m.send(&ws(), &post("ws:draft-4:abc", Provenance::Live)).await, sent, "{status}");
    }
    assert!(i.created.lock().expect("lock").is_empty());
    assert_eq!(m.check().await, Ok(Checked::Accepted { max_characters: Some(500) }));
    *i.max_characters.lock().expect("lock") = Some(5000);
    assert_eq!(m.check().await, Ok(Checked::Accepted { max_characters: Some(5000) }), "the instance's own limit");

    let wrong = mastodon(&url, "not-the-token");
    assert_eq!(wrong.check().await, Err(Code::ConnectorAuth));
    assert_eq!(wrong.send(&ws(), &post("ws:draft-5:abc", Provenance::Live)).await, Sent::Rejected(Code::ConnectorAuth));
    let calls = i.posts.lock().expect("lock").len();
    assert_eq!(
        m.send(&ws(), &post("ws:draft-6:abc", Provenance::Mock)).await,
        Sent::Rejected(Code::MockToLiveConnector)
    );
    assert_eq!(i.posts.lock().expect("lock").len(), calls, "a mock post is never sent");
    assert!(i.created.lock().expect("lock").is_empty(), "nothing was posted");
    assert!(!format!("{wrong:?}").contains("not-the-token"), "the token is not in debug output");
}

#[test]
fn answers_decode_to_ids_and_text_and_anything_else_is_not_believed() {
    let status = serde_json::to_vec(&recording("status.json")).expect("bytes");
    assert_eq!(decode_status(&status).map(|(id, _)| id.as_str().to_owned()), Some("113572904271839205".into()));
    let source = serde_json::to_vec(&recording("status-source.json")).expect("bytes");
    assert!(decode_source(&source).is_some_and(|(_, text)| text.starts_with("Rangers")));
    for bad in [&b""[..], b"{}", b"{\"id\": 5}", b"{\"id\": \"a b\"}", b"\xff"] {
        assert_eq!(decode_status(bad), None);
        assert_eq!(decode_source(bad), None);
    }
    assert_eq!(decode_status(&vec![b' '; super::MAX_MASTODON_RESPONSE_BYTES + 1]), None);
    let instance = serde_json::to_vec(&recording("instance.json")).expect("bytes");
    assert_eq!(decode_max_characters(&instance), Some(500));
    for bad in [
        &b"{}"[..],
        br#"{"configuration":{"statuses":{"max_characters":0}}}"#,
        br#"{"configuration":{"statuses":{"max_characters":-5}}}"#,
        br#"{"configuration":{"statuses":{"max_characters":"500"}}}"#,
        br#"{"configuration":{"statuses":{"max_characters":99999999999}}}"#,
    ] {
        assert_eq!(decode_max_characters(bad), None, "{}", String::from_utf8_lossy(bad));
    }
}

#[tokio::test]
async fn trends_are_the_instances_tags_then_its_links_with_what_it_counted() {
    let (_, url) = instance().await;
    let found = mastodon(&url, TOKEN).trends().await.expect("trends");
    let topics: Vec<&str> = found.iter().map(|t| t.topic.as_str()).collect();
    assert_eq!(topics, ["#fieldwork", "#offlinefirst", "How park rangers kept working through a nine-day outage"]);
    assert_eq!(found[0].summary, "Used 58 times by 31 accounts on its latest day.");
    assert_eq!(found[0].url.as_deref(), Some("https://mastodon.example/tags/fieldwork"));
    assert_eq!(found[2].summary, "A field team's notes app kept every entry during a storm.");
}
