//! Snapshots from configuration and calendar: DST-correct windows, blackouts, cadence, ids,
//! and freezing.

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use harmonia_contracts::Code;
use harmonia_contracts::domain::{
    CalendarImport, PlanningSnapshot, PostingWindowObservation, TimeZoneName, WorkspaceConfig,
};
use harmonia_contracts::ids::WorkspaceId;
use harmonia_store::{Created, Store, create_if_absent, encode, scan_all};
use harmonia_store_sqlite::SqliteStore;
use serde_json::json;

use super::*;
use crate::imports::calendar;

fn at(s: &str) -> DateTime<Utc> {
    s.parse().expect("time")
}

fn config(timezone: &str, posts_per_week: u32) -> WorkspaceConfig {
    serde_json::from_value(json!({
        "name": "Riverside Library", "audience": "Patrons", "voice": "Plain", "goals": ["Grow attendance"],
        "call_to_action": "Visit the branch.", "mode": "production",
        "channels": [{"platform": "bluesky", "handle": "@library"}, {"platform": "linkedin", "handle": "library"}],
        "timezone": timezone,
        "posting_windows": [{"days": ["mon", "wed"], "start": "09:00", "end": "10:30"}],
        "cadence": {"posts_per_week": posts_per_week, "max_posts_per_day": 2}}))
    .expect("config")
}

fn day<'a>(s: &'a PlanningSnapshot, d: &str) -> &'a harmonia_contracts::domain::Capacity {
    let d: NaiveDate = d.parse().expect("date");
    s.capacity.iter().find(|c| c.day == d).expect("every horizon day has an entry")
}

fn starts(s: &PlanningSnapshot, d: &str) -> Vec<String> {
    day(s, d).windows.iter().map(|w| w.start.to_rfc3339()).collect()
}

#[test]
fn windows_keep_their_local_hours_across_a_daylight_saving_change() {
    // New York leaves daylight saving time on Sunday 1 November 2026.
    let s =
        build_snapshot(&WorkspaceId::generate(), &config("America/New_York", 5), &[], &[], at("2026-10-25T12:00:00Z"));
    assert_eq!(starts(&s, "2026-10-26"), ["2026-10-26T13:00:00+00:00"], "09:00 EDT");
    assert_eq!(starts(&s, "2026-11-02"), ["2026-11-02T14:00:00+00:00"], "09:00 EST");
    assert_eq!(day(&s, "2026-11-02").windows[0].end.to_rfc3339(), "2026-11-02T15:30:00+00:00");
    assert_eq!(s.capacity.len(), HORIZON_DAYS as usize);
    assert_eq!(day(&s, "2026-10-27").slots, 0, "no window on a Tuesday");
    assert_eq!(day(&s, "2026-10-26").slots, 2, "the daily limit");

    // Europe/Lisbon leaves summer time on Sunday 25 October 2026.
    let s = build_snapshot(&WorkspaceId::generate(), &config("Europe/Lisbon", 5), &[], &[], at("2026-10-19T00:00:00Z"));
    assert_eq!(starts(&s, "2026-10-21"), ["2026-10-21T08:00:00+00:00"]);
    assert_eq!(starts(&s, "2026-10-28"), ["2026-10-28T09:00:00+00:00"]);
}

#[test]
fn a_time_skipped_by_the_change_is_the_moment_the_clocks_jump_and_a_repeated_one_opens_first_and_closes_last() {
    let tz = chrono_tz_new_york();
    let at = |date: &str, h, m, edge| {
        let t = to_utc(&tz, date.parse().expect("date"), NaiveTime::from_hms_opt(h, m, 0).expect("time"), edge);
        t.map(|t| t.to_rfc3339()).expect("an instant")
    };
    // 02:30 does not exist in New York on Sunday 8 March 2026: the clocks jump from 02:00 EST
    // to 03:00 EDT, at 07:00 UTC.
    assert_eq!(at("2026-03-08", 2, 30, Edge::Start), "2026-03-08T07:00:00+00:00");
    assert_eq!(at("2026-03-08", 2, 30, Edge::End), "2026-03-08T07:00:00+00:00");
    // 01:15 happens twice on Sunday 1 November 2026: at 05:15 UTC (EDT), then 06:15 UTC (EST).
    assert_eq!(at("2026-11-01", 1, 15, Edge::Start), "2026-11-01T05:15:00+00:00");
    assert_eq!(at("2026-11-01", 1, 15, Edge::End), "2026-11-01T06:15:00+00:00");
    assert_eq!(at("2026-11-02", 1, 15, Edge::End), "2026-11-02T06:15:00+00:00", "a plain day has one");
}

fn chrono_tz_new_york() -> impl TimeZone {
    "America/New_York".parse::<harmonia_contracts::domain::TimeZoneName>().expect("zone").tz()
}

async fn imported(text: &str) -> Vec<CalendarImport> {
    calendar::parse(text).expect("calendar")
}

#[tokio::test]
async fn blackouts_and_scheduled_posts_take_capacity() {
    let entries = imported(
        "kind,at,channel,title,date,source,provenance\n\
         blackout,,,,2026-11-04,Team calendar,live\n\
         scheduled,2026-11-09T14:00:00Z,linkedin,Newsletter,,Team calendar,live\n\
         scheduled,2026-11-11T14:00:00Z,bluesky,Event recap,,Team calendar,live\n\
         scheduled,2026-10-01T14:00:00Z,bluesky,Long past,,Team calendar,live\n",
    )
    .await;
    let s = build_snapshot(
        &WorkspaceId::generate(),
        &config("America/New_York", 3),
        &entries,
        &[],
        at("2026-11-02T00:00:00Z"),
    );
    assert!(day(&s, "2026-11-04").windows.is_empty(), "the blackout Wednesday has no window");
    assert_eq!(day(&s, "2026-11-04").slots, 0);
    assert_eq!(day(&s, "2026-11-02").slots, 2);
    assert_eq!(day(&s, "2026-11-09").slots, 1, "one of the two daily posts is already scheduled");
    assert_eq!(day(&s, "2026-11-11").slots, 1, "the week's cadence (3) has one post left after two scheduled");
    let titles: Vec<&str> = s.commitments.iter().map(|c| c.title.as_str()).collect();
    assert_eq!(titles, ["Newsletter", "Event recap"], "past posts are not commitments");
    assert_eq!(s.calendar.len(), 2);
    assert_eq!(s.calendar[0].window.end.to_rfc3339(), "2026-11-09T15:00:00+00:00");
}

#[test]
fn the_id_is_the_content_hash_and_the_build_is_deterministic() {
    let ws = WorkspaceId::generate();
    let observed = PostingWindowObservation {
        platform: harmonia_contracts::domain::Platform::Bluesky,
        hour_local: 14,
        hour_utc: 14,
        sample_size: 3,
        median_interactions: 12.0,
        median_engagement_rate: Some(0.04),
    };
    let now = at("2026-11-02T00:00:00Z");
    let a = build_snapshot(&ws, &config("UTC", 3), &[], std::slice::from_ref(&observed), now);
    let b = build_snapshot(&ws, &config("UTC", 3), &[], std::slice::from_ref(&observed), now);
    assert_eq!(a, b);
    assert_eq!(a.id, snapshot_id(&a));
    assert!(a.id.as_str().starts_with("snap-"));
    assert_eq!(a.posting_windows, std::slice::from_ref(&observed));
    let later = build_snapshot(&ws, &config("UTC", 3), &[], &[], now + chrono::Duration::hours(1));
    assert_ne!(later.id, a.id);
    let fewer = build_snapshot(&ws, &config("UTC", 1), &[], std::slice::from_ref(&observed), now);
    assert_ne!(fewer.id, a.id, "the cadence decides capacity, which is content");
}

#[tokio::test]
async fn freezing_accepts_the_same_snapshot_and_refuses_other_content_storing_nothing() {
    let dir = harmonia_testkit::temp_dir();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("plan.sqlite")).expect("open"));
    let ws = WorkspaceId::generate();
    let snapshot = build_snapshot(&ws, &config("Europe/Lisbon", 3), &[], &[], at("2026-11-02T00:00:00Z"));
    assert!(matches!(freeze_snapshot(&*store, &snapshot).await, Ok(Created::New(_))));
    assert!(matches!(freeze_snapshot(&*store, &snapshot).await, Ok(Created::Existing(_))));

    let mut tampered = snapshot.clone();
    tampered.capacity[0].slots += 1;
    let e = freeze_snapshot(&*store, &tampered).await.expect_err("id is not its hash");
    assert_eq!(e.code, Code::InvalidDocument);

    // Other content already stored under a snapshot's id (a corrupted or forged document):
    // freezing the real snapshot is refused, and the stored document stays as it was.
    let other = build_snapshot(&ws, &config("America/New_York", 3), &[], &[], at("2026-11-02T00:00:00Z"));
    let mut forged = snapshot.clone();
    forged.id = other.id.clone();
    create_if_absent(&*store, &ws, PLANNING_SNAPSHOTS, &doc_id(&other.id), encode(&forged).expect("encode"))
        .await
        .expect("forge");
    let e = freeze_snapshot(&*store, &other).await.expect_err("other content");
    assert_eq!(e.code, Code::ImmutableConflict);
    let docs = scan_all(&*store, &ws, PLANNING_SNAPSHOTS).await.expect("scan");
    assert_eq!(docs.len(), 2);
    assert!(docs.iter().all(|d| d.version == 1), "nothing was overwritten");
}

fn verified(post: &str) -> harmonia_contracts::domain::Publication {
    serde_json::from_value(json!({
        "job": "job-1", "draft": "draft-1", "platform": "bluesky", "body": "b", "content_hash": "h",
        "claim": {"job": "job-1", "draft": "draft-1", "content_hash": "h", "platform": "bluesky",
                  "connector": "sandbox", "idempotency_key": post, "claimed_at": "2026-11-02T14:00:00Z"},
        "receipt": {"job": "job-1", "draft": "draft-1", "connector": "sandbox",
                    "outcome": {"outcome": "applied", "post": post}, "recorded_at": "2026-11-02T14:00:00Z"},
        "verification": {"job": "job-1", "draft": "draft-1", "outcome": {"outcome": "verified", "post": post},
                         "checked_at": "2026-11-02T15:00:00Z"}}))
    .expect("publication")
}

fn measured(
    post: &str,
    published_at: &str,
    impressions: u64,
    reactions: u64,
) -> harmonia_contracts::domain::PostMetrics {
    serde_json::from_value(json!({
        "post": post, "platform": "bluesky", "published_at": published_at, "measured_at": "2026-11-20T00:00:00Z",
        "impressions": impressions, "reactions": reactions, "comments": 0, "shares": 0, "clicks": 0,
        "source": "analytics export", "provenance": "live"}))
    .expect("metrics")
}

#[test]
fn observations_summarise_verified_posts_by_platform_and_local_hour() {
    let publications = [verified("post-a"), verified("post-b"), verified("post-c")];
    let posts = harmonia_agents::eligibility::VerifiedPosts::from_publications(&publications);
    let performance = posts.verified_performance(
        [
            measured("post-a", "2026-11-02T14:05:00Z", 100, 10),
            measured("post-b", "2026-11-09T14:40:00Z", 100, 30),
            measured("post-c", "2026-11-10T09:00:00Z", 0, 0),
            measured("post-unverified", "2026-11-02T14:10:00Z", 100, 90),
        ],
        harmonia_contracts::domain::WorkspaceMode::Production,
    );
    let lisbon: TimeZoneName = "Europe/Lisbon".parse().expect("zone");
    let found = observations(&performance, lisbon);
    assert_eq!(found.len(), 2, "{found:?}");
    // Lisbon is UTC+0 in November: 09:00 and 14:00 local.
    assert_eq!((found[0].hour_local, found[0].hour_utc, found[0].sample_size), (9, 9, 1));
    assert_eq!((found[0].median_interactions, found[0].median_engagement_rate), (0.0, None), "nobody saw it");
    let afternoon = &found[1];
    assert_eq!((afternoon.hour_local, afternoon.sample_size), (14, 2));
    assert!((afternoon.median_interactions - 20.0).abs() < 1e-9, "the unverified post's 90 is not in it");
    assert!((afternoon.median_engagement_rate.unwrap_or(0.0) - 0.2).abs() < 1e-9);
    // In New York the same posts went out at 09:00 and 04:00 local.
    let new_york: TimeZoneName = "America/New_York".parse().expect("zone");
    let hours: Vec<u8> = observations(&performance, new_york).iter().map(|o| o.hour_local).collect();
    assert_eq!(hours, [4, 9]);
}
