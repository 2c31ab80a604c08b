//! Planning snapshots built by deterministic code, and frozen once.
//!
//! [`build_snapshot`] is a pure function of the workspace configuration (time zone, posting
//! windows, cadence, channel limits), the imported calendar (scheduled posts become
//! commitments and calendar entries; blackout dates remove that day's windows), verified
//! posting-window observations and `now`. It looks [`HORIZON_DAYS`] ahead:
//!
//! - each configured window of each local day is converted from the workspace's IANA zone to
//!   UTC for that very date, so a window keeps its local hours across a daylight-saving change
//!   (a local time that a change skips is read one hour later; one that occurs twice, the first
//!   time); windows that already ended, or fall on a blackout date, are left out;
//! - capacity is per UTC day, for every day of the horizon: 0 without an open window, else the
//!   daily limit (the cadence's, or the channels' limits added up when that is lower) less the
//!   posts already scheduled that day, and never more than the week's cadence has left after
//!   that ISO week's scheduled posts;
//! - the snapshot's id is `snap-` and the content hash of everything else in it, so the same
//!   inputs give the same snapshot and any change gives another id.
//!
//! [`freeze_snapshot`] stores it immutably ([`harmonia_store::create_immutable`]): freezing the
//! same snapshot again is a no-op; other content under that id is `immutable_conflict`.

use std::collections::BTreeMap;

use chrono::{Datelike, Duration, LocalResult, NaiveDate, NaiveTime, TimeZone, Timelike, Utc};
use harmonia_agents::eligibility::VerifiedPerformance;
use harmonia_contracts::domain::{
    CalendarEntry, CalendarImport, CalendarItem, Capacity, Commitment, PlanningSnapshot, PostingWindowObservation,
    TimeZoneName, Timestamp, UtcWindow, WorkspaceConfig, content_hash,
};
use harmonia_contracts::ids::{SnapshotId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use harmonia_store::{Created, Store, create_immutable, encode};

use crate::records::{PLANNING_SNAPSHOTS, doc_id};

/// How many days ahead a snapshot plans, starting with the UTC day of `now`.
pub const HORIZON_DAYS: u32 = 14;
/// How long a scheduled post occupies its calendar slot.
const SLOT: Duration = Duration::hours(1);
/// The most windows one capacity day lists (the schema's bound).
const MAX_WINDOWS_PER_DAY: usize = 50;
/// The most slots one capacity day holds (the schema's bound).
const MAX_SLOTS: u32 = 100;

/// Build the planning snapshot of `workspace` at `now`. Pure: the same arguments always give
/// the same snapshot, id included.
pub fn build_snapshot(
    workspace: &WorkspaceId,
    config: &WorkspaceConfig,
    calendar: &[CalendarImport],
    observations: &[PostingWindowObservation],
    now: Timestamp,
) -> PlanningSnapshot {
    let horizon_end = now + Duration::days(i64::from(HORIZON_DAYS));
    let mut commitments: Vec<Commitment> = calendar
        .iter()
        .filter_map(|entry| match &entry.item {
            CalendarItem::Scheduled { channel, title, at } if *at >= now && *at < horizon_end => {
                Some(Commitment { title: title.clone(), channel: *channel, at: *at })
            }
            _ => None,
        })
        .collect();
    commitments.sort_by(|a, b| (a.at, a.channel, &a.title).cmp(&(b.at, b.channel, &b.title)));
    let calendar_entries = commitments
        .iter()
        .filter_map(|c| {
            let window = UtcWindow::new(c.at, c.at + SLOT).ok()?;
            Some(CalendarEntry { channel: c.channel, title: c.title.clone(), window })
        })
        .collect();
    let mut posting_windows = observations.to_vec();
    posting_windows.sort_by_key(|a| (a.platform, a.hour_local, a.sample_size));
    let mut snapshot = PlanningSnapshot {
        id: placeholder_id(),
        workspace: workspace.clone(),
        taken_at: now,
        commitments: commitments.clone(),
        capacity: capacity(config, calendar, &commitments, now),
        asset_readiness: Vec::new(),
        posting_windows,
        calendar: calendar_entries,
        blocked_dependencies: Vec::new(),
    };
    snapshot.id = snapshot_id(&snapshot);
    snapshot
}

/// The id a snapshot's content gives it: `snap-` and the content hash of every field but `id`.
pub fn snapshot_id(snapshot: &PlanningSnapshot) -> SnapshotId {
    let mut value = serde_json::to_value(snapshot).expect("a planning snapshot serialises to JSON");
    if let Some(object) = value.as_object_mut() {
        object.remove("id");
    }
    format!("snap-{}", content_hash(&value)).parse().expect("a hex digest with a prefix is a valid id")
}

/// Freeze `snapshot`: store it under its id unless it is there. The same snapshot again is
/// accepted and changes nothing; a snapshot whose id is not its content hash is
/// `invalid_document`; other content already stored under the id is `immutable_conflict`, and
/// in every refusal nothing is written.
pub async fn freeze_snapshot(store: &dyn Store, snapshot: &PlanningSnapshot) -> Result<Created, Error> {
    if snapshot.id != snapshot_id(snapshot) {
        return Err(Error::new(Code::InvalidDocument, "a planning snapshot's id must be its content hash"));
    }
    let data = encode(snapshot)?;
    Ok(create_immutable(store, &snapshot.workspace, PLANNING_SNAPSHOTS, &doc_id(&snapshot.id), data).await?)
}

/// Posting-window observations from verified performance: per platform and local hour of
/// publication (in `zone`), how many verified posts, their median interactions and, over those
/// whose platform reports impressions, their median engagement rate. Each post counts once,
/// as last measured.
pub fn observations(performance: &VerifiedPerformance, zone: TimeZoneName) -> Vec<PostingWindowObservation> {
    struct Slot {
        interactions: Vec<f64>,
        rates: Vec<f64>,
        latest: Timestamp,
    }
    let mut slots: BTreeMap<_, Slot> = BTreeMap::new();
    for m in performance.latest_per_post() {
        let t = m.published_at;
        let hour_local = u8::try_from(t.with_timezone(&zone.tz()).hour()).unwrap_or(0);
        let slot = slots.entry((m.platform, hour_local)).or_insert_with(|| Slot {
            interactions: Vec::new(),
            rates: Vec::new(),
            latest: t,
        });
        slot.interactions.push(m.interactions() as f64);
        slot.rates.extend(m.engagement_rate());
        slot.latest = slot.latest.max(t);
    }
    slots
        .into_iter()
        .map(|((platform, hour_local), mut slot)| PostingWindowObservation {
            platform,
            hour_local,
            hour_utc: u8::try_from(slot.latest.hour()).unwrap_or(0),
            sample_size: u32::try_from(slot.interactions.len()).unwrap_or(u32::MAX),
            median_interactions: median(&mut slot.interactions).unwrap_or(0.0),
            median_engagement_rate: median(&mut slot.rates),
        })
        .collect()
}

/// The median of `values` (the mean of the middle two for an even count); `None` for none.
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) { (values[mid - 1] + values[mid]) / 2.0 } else { values[mid] })
}

fn placeholder_id() -> SnapshotId {
    SnapshotId::from_literal(const { harmonia_contracts::ids::IdLiteral::new("snap-pending") })
}

/// Capacity for each UTC day of the horizon.
fn capacity(
    config: &WorkspaceConfig,
    calendar: &[CalendarImport],
    commitments: &[Commitment],
    now: Timestamp,
) -> Vec<Capacity> {
    let mut windows: BTreeMap<NaiveDate, Vec<UtcWindow>> = BTreeMap::new();
    for window in open_windows(config, calendar, now) {
        windows.entry(window.start.date_naive()).or_default().push(window);
    }
    let cadence = config.cadence;
    let channel_limit: u32 =
        config.channels.iter().map(|c| c.max_posts_per_day.unwrap_or(cadence.max_posts_per_day)).sum();
    let daily = cadence.max_posts_per_day.min(channel_limit);
    let first = now.date_naive();
    (0..HORIZON_DAYS)
        .filter_map(|n| first.checked_add_days(chrono::Days::new(u64::from(n))))
        .map(|day| {
            let mut open = windows.remove(&day).unwrap_or_default();
            open.sort_by_key(|w| (w.start, w.end));
            open.dedup();
            open.truncate(MAX_WINDOWS_PER_DAY);
            let scheduled = |same: &dyn Fn(NaiveDate) -> bool| {
                u32::try_from(commitments.iter().filter(|c| same(c.at.date_naive())).count()).unwrap_or(u32::MAX)
            };
            let that_day = scheduled(&|d| d == day);
            let that_week = scheduled(&|d| d.iso_week() == day.iso_week());
            let slots = if open.is_empty() {
                0
            } else {
                daily.saturating_sub(that_day).min(cadence.posts_per_week.saturating_sub(that_week)).min(MAX_SLOTS)
            };
            Capacity { day, slots, windows: open }
        })
        .collect()
}

/// The configured windows of every local day of the horizon, in UTC, that have not ended and
/// are not on a blackout date.
fn open_windows(config: &WorkspaceConfig, calendar: &[CalendarImport], now: Timestamp) -> Vec<UtcWindow> {
    let blackout = windows::blackout_dates(calendar);
    windows::occurrences(config, &blackout, now, now + Duration::days(i64::from(HORIZON_DAYS)))
}

/// Which edge of a window a wall-clock time is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Edge {
    /// Where it opens.
    Start,
    /// Where it closes.
    End,
}

/// A local wall-clock time on `date` in `tz`, as UTC, so that a window's wall-clock hours hold
/// on both sides of a daylight saving change. When a change makes the time occur twice, a
/// window's start is its first instant and its end its second, so a window covering a
/// wall-clock time of the repeated hour holds both of its instants. When a change skips the
/// time, it is the first valid instant after it (the moment the clocks jump), where a window
/// starting in the skipped hour opens.
pub(crate) fn to_utc<Z: TimeZone>(tz: &Z, date: NaiveDate, time: NaiveTime, edge: Edge) -> Option<Timestamp> {
    let local = date.and_time(time);
    match tz.from_local_datetime(&local) {
        LocalResult::Single(t) => Some(t.with_timezone(&Utc)),
        LocalResult::Ambiguous(first, second) => {
            Some(if edge == Edge::Start { first } else { second }.with_timezone(&Utc))
        }
        LocalResult::None => first_at_or_after(tz, local),
    }
}

/// The first instant whose wall-clock time in `tz` is at or after `local`, to the second.
fn first_at_or_after<Z: TimeZone>(tz: &Z, local: chrono::NaiveDateTime) -> Option<Timestamp> {
    // No zone is more than a day from UTC, so the instant lies between these two, and over
    // them the wall clock only moves forward.
    let (mut before, mut after) = ((local - Duration::hours(26)).and_utc(), (local + Duration::hours(26)).and_utc());
    let reached = |t: Timestamp| tz.from_utc_datetime(&t.naive_utc()).naive_local() >= local;
    if !reached(after) {
        return None;
    }
    while (after - before).num_seconds() > 1 {
        let middle = before + Duration::seconds((after - before).num_seconds() / 2);
        if reached(middle) { after = middle } else { before = middle }
    }
    Some(after)
}

pub mod windows;

#[cfg(test)]
mod tests;
