//! The X connector against the recorded X ([`harmonia_testkit::x`]): a local server answering
//! API v2 and the token endpoint with the recordings under `recordings/`, holding the posts made
//! to it as X does.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use harmonia_contracts::Code;
use harmonia_contracts::domain::Platform;
use harmonia_store::Store;
use harmonia_testkit::x::{CLIENT_ID, CLIENT_SECRET, RATE_LIMIT_RESET, REFRESH, TOKEN, recording, start};

use super::{Limits, Lookedup, X, XConfig, decode_created, decode_me, decode_timeline, decode_tweet, restore_text};
use crate::engagement::{Asked, Engagement, Measured};
use crate::oauth::ClientAuth;
use crate::testing::{live, session, store, ws};
use crate::{Checked, Connector, Found, Lookup, Outgoing, Posted, Refusal, Sent};

/// A connector for the server at `api`/`token_url` with `access` (and the refresh token when
/// `refresh`), keeping refreshed tokens in `store`.
fn x((api, token_url): (&str, &str), access: &str, refresh: bool, store: Option<Arc<dyn Store>>) -> X {
    let tokens = (access, refresh.then_some(REFRESH));
    let (session, http) = session(token_url, (CLIENT_ID, CLIENT_SECRET), tokens, ClientAuth::Basic, store);
    X::new(XConfig { api: api.to_owned(), timeout: Duration::from_secs(5) }, session, http)
}

const TEXT: &str = "Rangers logged 4,200 notes offline & lost <none>. Watch: video.example.com/launch-talk and https://example.org/notes";

fn post(key: &str, body: &str) -> Outgoing {
    live(Platform::X, key, body)
}

#[tokio::test]
async fn a_post_is_made_once_and_reads_back_as_written_through_x_escapes_and_t_co_links() {
    let (server, api, token_url) = start().await;
    let connector = x((&api, &token_url), TOKEN, true, None);
    let sent = connector.send(ws(), &post("ws:draft-1:abc", TEXT)).await;
    let Sent::Applied(posted) = &sent else { panic!("applied: {sent:?}") };
    assert_eq!(posted.post.as_str(), "1445880548472328192");
    assert_eq!(posted.url.as_deref(), Some("https://x.com/i/web/status/1445880548472328192"));
    assert_eq!(server.creates.lock().expect("lock")[0]["text"], TEXT);
    let found = connector.read_back(Lookup::key(ws(), "k").posted(Some(&posted.post)).sent(TEXT, Utc::now())).await;
    assert_eq!(
        found.ok(),
        Some(Found::Post { post: posted.post.clone(), body: TEXT.to_owned(), record: None, replying_to: None })
    );
    let unknown = "1445880548472328999".parse().expect("id");
    let lookup = Lookup::key(ws(), "k").posted(Some(&unknown)).sent(TEXT, Utc::now());
    assert_eq!(connector.read_back(lookup).await.ok(), Some(Found::Missing), "X's 200 with resource-not-found");
}

#[tokio::test]
async fn a_lost_answer_is_resolved_by_listing_the_accounts_posts_never_by_a_second_create() {
    let (server, api, token_url) = start().await;
    let connector = x((&api, &token_url), TOKEN, true, None);
    let claimed = Utc::now();
    server.lose_next_answer();
    assert_eq!(connector.send(ws(), &post("ws:draft-2:abc", TEXT)).await, Sent::Unknown);
    assert_eq!(server.count(), 1, "X made the post before the answer was lost");
    let lookup = Lookup::key(ws(), "ws:draft-2:abc").sent(TEXT, claimed);
    let Ok(Found::Post { post: found, body, .. }) = connector.read_back(lookup).await else {
        panic!("found by listing")
    };
    assert_eq!(found.as_str(), server.posts.lock().expect("lock")[0].id);
    assert_eq!(body, TEXT);
    let never = Lookup::key(ws(), "ws:draft-3:abc").sent("Never posted.", claimed);
    assert_eq!(connector.read_back(never).await.ok(), Some(Found::Missing));
    // X itself refuses the same text again: a blind retry could never have made a second post,
    // and this one is not made either.
    assert_eq!(connector.send(ws(), &post("ws:draft-2:abc", TEXT)).await, Sent::Refused(Refusal::Duplicate));
    assert_eq!(server.count(), 1);
}

#[tokio::test]
async fn a_rotated_refresh_token_is_kept_sealed_so_the_next_process_can_refresh_again() {
    let (server, api, token_url) = start().await;
    let (_dir, store) = store();
    let first = x((&api, &token_url), TOKEN, true, Some(store.clone()));
    server.grants.expire();
    assert!(matches!(first.send(ws(), &post("k1", "First post.")).await, Sent::Applied(_)));
    assert_eq!(server.grants.refreshes(), 1);
    assert_ne!(server.grants.refresh_token(), REFRESH, "X rotated the refresh token: the file's is spent");

    // The next process reads the same secrets file: it refreshes with the kept token.
    server.grants.expire();
    let next = x((&api, &token_url), TOKEN, true, Some(store.clone()));
    assert!(matches!(next.send(ws(), &post("k2", "Second post.")).await, Sent::Applied(_)));
    assert_eq!(server.grants.refreshes(), 2);

    // Without the kept pair, the file's spent refresh token cannot cure an expired token.
    server.grants.expire();
    let forgetful = x((&api, &token_url), TOKEN, true, None);
    assert_eq!(forgetful.send(ws(), &post("k3", "Third post.")).await, Sent::Rejected(Code::ConnectorAuth));
    assert_eq!(server.count(), 2);
}

#[tokio::test]
async fn each_refusal_has_its_own_outcome_and_posts_nothing() {
    let (server, api, token_url) = start().await;
    let connector = x((&api, &token_url), TOKEN, false, None);
    let reset = chrono::DateTime::from_timestamp(RATE_LIMIT_RESET, 0);
    for (status, recording, outcome) in [
        (401, "error-unauthorized.json", Sent::Rejected(Code::ConnectorAuth)),
        (403, "error-duplicate.json", Sent::Refused(Refusal::Duplicate)),
        (403, "error-forbidden.json", Sent::Rejected(Code::ConnectorAuth)),
        (400, "error-invalid-request.json", Sent::Refused(Refusal::Invalid)),
        (422, "error-invalid-request.json", Sent::Refused(Refusal::Invalid)),
        (429, "error-throttled.json", Sent::Refused(Refusal::Throttled(reset))),
        (503, "error-server.json", Sent::Unknown),
    ] {
        server.failures.lock().expect("lock").push_back((status, recording, false));
        let sent = connector.send(ws(), &post("k", &format!("A post meeting a {status} with {recording}."))).await;
        assert_eq!(sent, outcome, "{status} {recording}");
    }
    assert_eq!(server.count(), 0);
    // A 24-hour limit that is spent decides the reset over the window's.
    let limits = Limits { reset: Some(100), user_day: (Some(0), Some(5000)), app_day: (Some(3), Some(9000)) };
    assert_eq!(limits.until().map(|t| t.timestamp()), Some(5000));
}

#[tokio::test]
async fn channels_check_asks_who_the_token_is_and_engagement_reads_public_metrics() {
    let (server, api, token_url) = start().await;
    let connector = x((&api, &token_url), TOKEN, false, None);
    assert_eq!(connector.check().await, Ok(Checked::Accepted { max_characters: None }));
    assert_eq!(x((&api, &token_url), "wrong", false, None).check().await, Err(Code::ConnectorAuth));
    assert_eq!(x(("http://127.0.0.1:9", &token_url), TOKEN, false, None).check().await, Err(Code::ConnectorFailed));

    let Sent::Applied(posted) = connector.send(ws(), &post("k", "Counted.")).await else { panic!("applied") };
    server.counts.lock().expect("lock").insert(posted.post.to_string(), [9, 2, 1, 3]);
    let asked = Asked { workspace: ws(), idempotency_key: "k", posted: &posted, age: chrono::Duration::hours(1) };
    assert_eq!(
        connector.engagement(asked).await.ok(),
        Some(Measured::Counts(Engagement { likes: 9, reposts: 2, replies: 1, quotes: Some(3) }))
    );
    let gone = Posted::id("1445880548472328999".parse().expect("id"));
    let asked = Asked { posted: &gone, ..asked };
    assert_eq!(connector.engagement(asked).await.ok(), Some(Measured::Gone));
}

#[test]
fn the_recordings_decode_and_text_is_restored_only_where_x_kept_it() {
    let bytes = |name: &str| serde_json::to_vec(&recording(name)).expect("json");
    assert_eq!(decode_created(&bytes("create.json")).map(|id| id.to_string()).as_deref(), Some("1445880548472328192"));
    assert_eq!(decode_me(&bytes("users-me.json")).as_deref(), Some("2244994945"));
    assert!(matches!(decode_tweet(&bytes("tweet.json")), Some(Lookedup::Post(_))));
    assert_eq!(decode_tweet(&bytes("tweet-not-found.json")), Some(Lookedup::NotFound));
    assert_eq!(decode_timeline(&bytes("timeline.json")).map(|t| t.len()), Some(1));
    assert_eq!(decode_timeline(&bytes("timeline-empty.json")).map(|t| t.len()), Some(0));
    assert!(super::is_duplicate(&bytes("error-duplicate.json")));
    assert!(super::is_duplicate(br#"{"errors": [{"code": 187, "message": "Status is a duplicate."}]}"#));
    assert!(!super::is_duplicate(&bytes("error-forbidden.json")));
    for bad in [&b"{}"[..], b"{\"data\": {\"id\": 5}}", b"{\"errors\": []}", b"\xff"] {
        assert_eq!(decode_tweet(bad), None, "{}", String::from_utf8_lossy(bad));
    }

    let links = vec![("https://t.co/a".to_owned(), "http://video.example.com/talk".to_owned())];
    let sent = "Watch video.example.com/talk & more";
    assert_eq!(restore_text("Watch https://t.co/a &amp; more", &links, sent), sent);
    // A link X expanded to something else shows as what X holds: the texts differ.
    let moved = vec![("https://t.co/a".to_owned(), "http://elsewhere.example/x".to_owned())];
    assert_ne!(restore_text("Watch https://t.co/a &amp; more", &moved, sent), sent);
}

#[tokio::test]
async fn a_reply_names_the_post_before_it_and_reads_back_with_it_and_linkedin_takes_none() {
    let (server, api, token_url) = start().await;
    let connector = x((&api, &token_url), TOKEN, false, None);
    let Sent::Applied(root) = connector.send(ws(), &post("k.0", "The storm took the towers.")).await else {
        panic!("applied")
    };
    let reply = Outgoing {
        reply: Some(crate::ReplyTo { root: root.clone(), parent: root.clone() }),
        ..post("k.1", "Every note synced once they were back.")
    };
    let Sent::Applied(second) = connector.send(ws(), &reply).await else { panic!("applied") };
    assert_eq!(server.creates.lock().expect("lock")[1]["reply"]["in_reply_to_tweet_id"], root.post.as_str());
    let lookup = Lookup::key(ws(), "k.1").posted(Some(&second.post)).sent(&reply.body, Utc::now());
    let Ok(Found::Post { replying_to, .. }) = connector.read_back(lookup).await else { panic!("read") };
    assert_eq!(replying_to, Some(root.post.clone()));
    // Found by listing too, with what it replies to.
    let listed = Lookup::key(ws(), "k.1").sent(&reply.body, Utc::now() - chrono::Duration::minutes(1));
    let Ok(Found::Post { replying_to, .. }) = connector.read_back(listed).await else { panic!("listed") };
    assert_eq!(replying_to, Some(root.post));
}
