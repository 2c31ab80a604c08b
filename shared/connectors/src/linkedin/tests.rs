//! The LinkedIn connector against the recorded LinkedIn ([`harmonia_testkit::linkedin`]): a
//! local server answering the Posts API and the token endpoint with the recordings under
//! `recordings/`, holding the posts made to it as LinkedIn does.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use harmonia_contracts::Code;
use harmonia_contracts::domain::Platform;
use harmonia_store::Store;
use harmonia_testkit::linkedin::{AUTHOR, CLIENT_ID, CLIENT_SECRET, REFRESH, TOKEN, start};
use proptest::prelude::*;

use super::{Linkedin, LinkedinConfig, decode_listing, decode_post, is_duplicate, little_text, plain_text};
use crate::oauth::ClientAuth;
use crate::testing::{live, session, ws};
use crate::{Checked, Connector, Found, Lookup, Outgoing, Refusal, Sent};

/// A connector for the server at `api`/`token_url` with `access` (and the refresh token when
/// `refresh`), keeping refreshed tokens in `store`.
fn linkedin(urls: (&str, &str), access: &str, refresh: bool, store: Option<Arc<dyn Store>>) -> Linkedin {
    versioned(urls, (access, refresh), store, super::DEFAULT_VERSION)
}

/// [`linkedin`], asking for the `LinkedIn-Version` `version`.
fn versioned(
    (api, token_url): (&str, &str),
    (access, refresh): (&str, bool),
    store: Option<Arc<dyn Store>>,
    version: &str,
) -> Linkedin {
    let tokens = (access, refresh.then_some(REFRESH));
    let (session, http) = session(token_url, (CLIENT_ID, CLIENT_SECRET), tokens, ClientAuth::Form, store);
    let config = LinkedinConfig {
        api: api.to_owned(),
        author: AUTHOR.to_owned(),
        version: version.to_owned(),
        timeout: Duration::from_secs(5),
    };
    Linkedin::new(config, session, http)
}

const TEXT: &str = "Rangers logged 4,200 notes offline (none lost) — @priya.test on field_notes. #offline video.example.com/launch-talk";

fn post(key: &str, body: &str) -> Outgoing {
    live(Platform::Linkedin, key, body)
}

#[tokio::test]
async fn a_post_is_made_once_as_escaped_commentary_and_reads_back_as_written() {
    let (server, api, token_url) = start().await;
    let l = linkedin((&api, &token_url), TOKEN, true, None);
    let sent = l.send(ws(), &post("ws:draft-1:abc", TEXT)).await;
    let Sent::Applied(posted) = &sent else { panic!("applied: {sent:?}") };
    assert_eq!(posted.post.as_str(), "urn:li:share:7270000000000000001", "the x-restli-id header");
    assert_eq!(posted.url.as_deref(), Some("https://www.linkedin.com/feed/update/urn:li:share:7270000000000000001/"));
    let creates = server.creates.lock().expect("lock").clone();
    assert_eq!(creates.len(), 1);
    assert_eq!(creates[0]["author"], AUTHOR);
    assert_eq!(creates[0]["visibility"], "PUBLIC");
    assert_eq!(creates[0]["lifecycleState"], "PUBLISHED");
    assert_eq!(
        creates[0]["commentary"],
        "Rangers logged 4,200 notes offline \\(none lost\\) — \\@priya.test on field\\_notes. #offline video.example.com/launch-talk"
    );
    // LinkedIn kept the whole text (nothing was left unescaped to cut it), the hashtag as its
    // template, and reading it back gives the text as written.
    let held = server.posts.lock().expect("lock")[0].clone();
    assert!(held.commentary.contains("{hashtag|\\#|offline}"), "{}", held.commentary);
    let found = l.read_back(Lookup::key(ws(), "ws:draft-1:abc").posted(Some(&posted.post))).await.expect("read");
    assert_eq!(
        found,
        Found::Post { post: posted.post.clone(), body: TEXT.to_owned(), record: None, replying_to: None }
    );
    let other = "urn:li:share:7270000000000000099".parse().expect("urn");
    assert_eq!(l.read_back(Lookup::key(ws(), "k").posted(Some(&other))).await.ok(), Some(Found::Missing));
}

#[tokio::test]
async fn a_lost_answer_is_resolved_by_listing_the_authors_posts_never_by_posting_twice() {
    let (server, api, token_url) = start().await;
    let l = linkedin((&api, &token_url), TOKEN, true, None);
    let claimed = Utc::now();
    server.lose_next_answer();
    assert_eq!(l.send(ws(), &post("ws:draft-2:abc", TEXT)).await, Sent::Unknown, "the connection was cut");
    assert_eq!(server.count(), 1, "LinkedIn made the post before the answer was lost");

    let lookup = Lookup::key(ws(), "ws:draft-2:abc").sent(TEXT, claimed);
    let Ok(Found::Post { post: found, body, .. }) = l.read_back(lookup).await else { panic!("found by listing") };
    assert_eq!(found.as_str(), server.posts.lock().expect("lock")[0].urn);
    assert_eq!(body, TEXT);
    assert!(server.listings.load(std::sync::atomic::Ordering::SeqCst) >= 1);

    // A text never posted, or one posted before the claim, is not this publication.
    let never = Lookup::key(ws(), "ws:draft-3:abc").sent("Another text.", claimed);
    assert_eq!(l.read_back(never).await.ok(), Some(Found::Missing));
    let later = Lookup::key(ws(), "ws:draft-2:abc").sent(TEXT, claimed + chrono::Duration::hours(1));
    assert_eq!(l.read_back(later).await.ok(), Some(Found::Missing));
    // And a second create of the same text is refused by LinkedIn: no second post.
    assert_eq!(l.send(ws(), &post("ws:draft-2:abc", TEXT)).await, Sent::Refused(Refusal::Duplicate));
    assert_eq!(server.count(), 1);
}

#[tokio::test]
async fn an_expired_token_is_refreshed_once_kept_sealed_and_used_by_the_next_process() {
    let (server, api, token_url) = start().await;
    let (_dir, store) = crate::testing::store();
    let l = linkedin((&api, &token_url), TOKEN, true, Some(store.clone()));
    server.grants.expire();
    assert!(matches!(l.send(ws(), &post("k1", "First post.")).await, Sent::Applied(_)));
    assert_eq!(server.grants.refreshes(), 1, "one refresh, then the create again");
    assert!(matches!(l.send(ws(), &post("k2", "Second post.")).await, Sent::Applied(_)));
    assert_eq!(server.grants.refreshes(), 1, "the refreshed token is in use");
    assert_eq!(server.count(), 2);

    // The next process, with the same secrets file, starts from the kept token.
    let next = linkedin((&api, &token_url), TOKEN, true, Some(store.clone()));
    assert!(matches!(next.send(ws(), &post("k3", "Third post.")).await, Sent::Applied(_)));
    assert_eq!(server.grants.refreshes(), 1, "no second refresh");

    // A token refused with no refresh token to cure it: connector_auth, nothing posted.
    let stale = linkedin((&api, &token_url), "revoked", false, None);
    assert_eq!(stale.send(ws(), &post("k4", "Fourth post.")).await, Sent::Rejected(Code::ConnectorAuth));
    assert_eq!(stale.check().await, Err(Code::ConnectorAuth));
    assert_eq!(server.count(), 3);
}

#[tokio::test]
async fn each_refusal_has_its_own_outcome_and_posts_nothing() {
    let (server, api, token_url) = start().await;
    let l = linkedin((&api, &token_url), TOKEN, true, None);
    let next_midnight =
        (Utc::now() + chrono::Duration::days(1)).date_naive().and_time(chrono::NaiveTime::MIN).and_utc();
    for (status, recording, outcome) in [
        (401, "error-expired-token.json", None),
        (403, "error-access-denied.json", Some(Sent::Rejected(Code::ConnectorAuth))),
        (422, "error-duplicate.json", Some(Sent::Refused(Refusal::Duplicate))),
        (422, "error-unprocessable.json", Some(Sent::Refused(Refusal::Invalid))),
        (429, "error-throttled.json", Some(Sent::Refused(Refusal::Throttled(Some(next_midnight))))),
        (500, "error-server.json", Some(Sent::Unknown)),
    ] {
        server.failures.lock().expect("lock").push_back((status, recording, false));
        let sent = l
            .send(ws(), &post("k", &format!("A post meeting a {status} ({recording}).").replace(['(', ')'], "")))
            .await;
        match outcome {
            Some(outcome) => assert_eq!(sent, outcome, "{status} {recording}"),
            // A 401 refreshes the token and sends again, which LinkedIn accepts.
            None => assert!(matches!(sent, Sent::Applied(_)), "{sent:?}"),
        }
    }
    // A reply: LinkedIn has no threads, and nothing is sent.
    let root = crate::Posted::id("urn:li:share:7270000000000000001".parse().expect("urn"));
    let reply = Outgoing { reply: Some(crate::ReplyTo { root: root.clone(), parent: root }), ..post("k", "Second.") };
    assert_eq!(l.send(ws(), &reply).await, Sent::Refused(Refusal::Invalid));
    assert_eq!(server.creates.lock().expect("lock").len(), 7, "six refusals and the create after the refresh");
    assert_eq!(server.grants.refreshes(), 1);
    assert_eq!(server.count(), 1, "only the create sent again after the refresh made a post");
}

#[tokio::test]
async fn channels_check_lists_one_post_and_tells_refused_credentials_from_an_unreachable_api() {
    let (_, api, token_url) = start().await;
    assert_eq!(
        linkedin((&api, &token_url), TOKEN, false, None).check().await,
        Ok(Checked::Accepted { max_characters: None })
    );
    assert_eq!(linkedin((&api, &token_url), "wrong", false, None).check().await, Err(Code::ConnectorAuth));
    let gone = linkedin(("http://127.0.0.1:9", &token_url), TOKEN, false, None);
    assert_eq!(gone.check().await, Err(Code::ConnectorFailed));
    // A version LinkedIn no longer serves is the channel's configuration, for check and post.
    let sunset = versioned((&api, &token_url), (TOKEN, false), None, "202301");
    assert_eq!(sunset.check().await, Err(Code::InvalidConfig));
    assert_eq!(sunset.send(ws(), &post("k", "Old version.")).await, Sent::Rejected(Code::InvalidConfig));
    // An expired token whose token endpoint cannot be reached: nothing is known of the
    // platform, so it could not be checked, and a create's outcome is left to the listing.
    let (server, api, _) = start().await;
    server.grants.expire();
    let stranded = linkedin((&api, "http://127.0.0.1:9/token"), TOKEN, true, None);
    assert_eq!(stranded.check().await, Err(Code::ConnectorFailed));
    assert_eq!(stranded.send(ws(), &post("k", "Stranded.")).await, Sent::Unknown);
    assert_eq!(server.count(), 0);
}

#[test]
fn the_recordings_decode_and_errors_say_what_they_are() {
    let post = decode_post(&serde_json::to_vec(&harmonia_testkit::linkedin::recording("post.json")).expect("json"))
        .expect("post");
    assert_eq!(post.urn.as_str(), "urn:li:share:7270000000000000001");
    assert_eq!(post.text, "Sample text Post");
    assert_eq!(post.created_at.map(|t| t.timestamp()), Some(1_795_526_400));
    let listing = serde_json::to_vec(&harmonia_testkit::linkedin::recording("posts-by-author.json")).expect("json");
    assert_eq!(decode_listing(&listing).map(|l| l.len()), Some(1));
    let duplicate = serde_json::to_vec(&harmonia_testkit::linkedin::recording("error-duplicate.json")).expect("json");
    assert!(is_duplicate(&duplicate));
    let invalid = serde_json::to_vec(&harmonia_testkit::linkedin::recording("error-unprocessable.json")).expect("json");
    assert!(!is_duplicate(&invalid));
    for bad in [&b"{}"[..], b"[]", b"{\"id\": 7}", b"{\"id\": \"has space\"}", b"\xff"] {
        assert_eq!(decode_post(bad), None);
    }
}

#[test]
fn little_text_reads_hashtags_and_mentions_as_linkedin_writes_them() {
    assert_eq!(plain_text("Go {hashtag|\\#|offline} now"), "Go #offline now");
    assert_eq!(plain_text("Thanks @[Priya Raman](urn:li:person:abc123)!"), "Thanks @Priya Raman!");
    assert_eq!(plain_text("a\\_b \\(c\\)"), "a_b (c)");
    assert_eq!(little_text("#one two#three # four ##five"), "#one two\\#three \\# four \\#\\#five");
}

proptest! {
    #[test]
    fn any_text_survives_little_text_and_back(text in "\\PC{0,80}") {
        prop_assert_eq!(plain_text(&little_text(&text)), text);
    }
}
