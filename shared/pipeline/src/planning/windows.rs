//! The workspace's posting windows as instants: whether a time falls inside one, and which
//! occurrence is nearest when it does not. Local days and hours are read in the workspace's
//! IANA zone for each date, as planning reads them ([`crate::planning`]), and blackout dates of
//! the imported calendar have no windows.

use chrono::{Datelike, Duration, NaiveDate};
use harmonia_contracts::domain::{CalendarImport, CalendarItem, Timestamp, UtcWindow, WorkspaceConfig};

use super::{Edge, to_utc};

/// How far on either side of a time the nearest window is looked for.
pub const SEARCH_DAYS: i64 = 14;

/// Where a time falls among the workspace's windows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Inside this occurrence.
    Inside(UtcWindow),
    /// Outside every occurrence; the nearest one that has not ended by `not_before`, if any
    /// lies within [`SEARCH_DAYS`].
    Outside(Option<UtcWindow>),
}

/// The blackout dates of an imported calendar: days without posting windows.
pub fn blackout_dates(calendar: &[CalendarImport]) -> Vec<NaiveDate> {
    calendar
        .iter()
        .filter_map(|e| match e.item {
            CalendarItem::Blackout { date, .. } => Some(date),
            CalendarItem::Scheduled { .. } => None,
        })
        .collect()
}

/// Every occurrence of the configured windows that overlaps `[from, until)`, none on a date of
/// `blackout`: by local date, then in the order the configuration lists the windows.
pub fn occurrences(
    config: &WorkspaceConfig,
    blackout: &[NaiveDate],
    from: Timestamp,
    until: Timestamp,
) -> Vec<UtcWindow> {
    let tz = config.timezone.tz();
    // A day on either side: a zone far from UTC moves local days across the UTC bounds.
    let first = from.with_timezone(&tz).date_naive() - Duration::days(1);
    let last = until.with_timezone(&tz).date_naive() + Duration::days(1);
    let mut out = Vec::new();
    let mut date = first;
    while date <= last {
        if !blackout.contains(&date) {
            for window in &config.posting_windows {
                if !window.days.iter().any(|d| chrono::Weekday::from(*d) == date.weekday()) {
                    continue;
                }
                let (Some(start), Some(end)) = (
                    to_utc(&tz, date, window.start.time(), Edge::Start),
                    to_utc(&tz, date, window.end.time(), Edge::End),
                ) else {
                    continue;
                };
                if end > from
                    && start < until
                    && let Ok(w) = UtcWindow::new(start, end)
                {
                    out.push(w);
                }
            }
        }
        let Some(next) = date.succ_opt() else { break };
        date = next;
    }
    out
}

/// Where `at` falls: inside an occurrence, or outside with the nearest occurrence that has not
/// ended by `not_before` (a time in the past cannot be moved to).
pub fn place(config: &WorkspaceConfig, blackout: &[NaiveDate], at: Timestamp, not_before: Timestamp) -> Placement {
    let span = Duration::days(SEARCH_DAYS);
    let around = occurrences(config, blackout, at - span, at + span);
    if let Some(w) = around.iter().find(|w| w.start <= at && at < w.end) {
        return Placement::Inside(*w);
    }
    let distance = |w: &UtcWindow| if at < w.start { w.start - at } else { at - w.end };
    Placement::Outside(around.into_iter().filter(|w| w.end > not_before).min_by_key(distance))
}

/// An instant as operators read it: UTC, to the second (`2026-12-07T15:00:00Z`).
pub fn instant(t: Timestamp) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `window` in words for an operator: its local days and hours in the workspace's zone, and
/// the UTC instants (`Mon 2026-12-07 08:00-17:00 America/Denver (2026-12-07T15:00:00Z to
/// 2026-12-08T00:00:00Z)`).
pub fn describe(config: &WorkspaceConfig, window: &UtcWindow) -> String {
    let tz = config.timezone.tz();
    let (start, end) = (window.start.with_timezone(&tz), window.end.with_timezone(&tz));
    let end_format = if end.date_naive() == start.date_naive() { "%H:%M" } else { "%a %Y-%m-%d %H:%M" };
    format!(
        "{}-{} {} ({} to {})",
        start.format("%a %Y-%m-%d %H:%M"),
        end.format(end_format),
        config.timezone,
        instant(window.start),
        instant(window.end),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(zone: &str) -> WorkspaceConfig {
        WorkspaceConfig::from_toml(&format!(
            r#"
            name = "W"
            audience = "Readers"
            voice = "Plain"
            goals = ["Inform"]
            call_to_action = "Read more."
            mode = "development"
            timezone = "{zone}"
            [[channels]]
            platform = "bluesky"
            handle = "@w.example"
            [[posting_windows]]
            days = ["mon", "tue", "wed", "thu", "fri"]
            start = "08:00"
            end = "17:00"
            [[posting_windows]]
            days = ["sat"]
            start = "10:00"
            end = "12:00"
            "#
        ))
        .expect("valid")
    }

    fn t(s: &str) -> Timestamp {
        s.parse().expect("time")
    }

    #[test]
    fn a_time_inside_a_local_window_is_inside_and_one_outside_names_the_nearest() {
        let denver = config("America/Denver");
        let now = t("2026-12-01T00:00:00Z");
        // Monday 7 December, 09:30 in Denver (UTC-7) is 16:30 UTC.
        let Placement::Inside(w) = place(&denver, &[], t("2026-12-07T16:30:00Z"), now) else { panic!("inside") };
        assert_eq!((w.start, w.end), (t("2026-12-07T15:00:00Z"), t("2026-12-08T00:00:00Z")));
        assert_eq!(
            describe(&denver, &w),
            "Mon 2026-12-07 08:00-17:00 America/Denver (2026-12-07T15:00:00Z to 2026-12-08T00:00:00Z)"
        );
        // Sunday 6 December at 13:00 local: Saturday's window ended 25 hours before, Monday's
        // starts 19 hours after.
        let Placement::Outside(Some(nearest)) = place(&denver, &[], t("2026-12-06T20:00:00Z"), now) else {
            panic!("outside")
        };
        assert_eq!(nearest.start, t("2026-12-07T15:00:00Z"));
        // Saturday 12:30 local: Saturday's own window, just ended, is the nearest.
        let Placement::Outside(Some(nearest)) = place(&denver, &[], t("2026-12-05T19:30:00Z"), now) else {
            panic!("outside")
        };
        assert_eq!((nearest.start, nearest.end), (t("2026-12-05T17:00:00Z"), t("2026-12-05T19:00:00Z")));
        // ... unless it ended before the time the operator may move to.
        let Placement::Outside(Some(nearest)) =
            place(&denver, &[], t("2026-12-05T19:30:00Z"), t("2026-12-05T19:10:00Z"))
        else {
            panic!("outside")
        };
        assert_eq!(nearest.start, t("2026-12-07T15:00:00Z"));
        // The end is outside: a window is [start, end).
        assert!(matches!(place(&denver, &[], t("2026-12-08T00:00:00Z"), now), Placement::Outside(_)));
    }

    #[test]
    fn windows_keep_their_local_hours_across_a_daylight_saving_change_and_skip_blackout_dates() {
        let lisbon = config("Europe/Lisbon");
        // Friday 27 March 2026 is WET (UTC+0), Monday 30 March WEST (UTC+1).
        let got = occurrences(&lisbon, &[], t("2026-03-27T00:00:00Z"), t("2026-03-31T00:00:00Z"));
        let starts: Vec<String> = got.iter().map(|w| w.start.format("%a %H:%M").to_string()).collect();
        assert_eq!(starts, ["Fri 08:00", "Sat 10:00", "Mon 07:00"]);
        let blackout = [NaiveDate::from_ymd_opt(2026, 3, 30).expect("date")];
        let got = occurrences(&lisbon, &blackout, t("2026-03-27T00:00:00Z"), t("2026-03-31T00:00:00Z"));
        assert_eq!(got.len(), 2, "no window on a blackout date");
        let on_blackout = place(&lisbon, &blackout, t("2026-03-30T09:00:00Z"), t("2026-03-01T00:00:00Z"));
        assert!(matches!(on_blackout, Placement::Outside(Some(_))), "{on_blackout:?}");
    }

    /// `zone`'s configuration with one window, every day, from `start` to `end` (local).
    fn every_day(zone: &str, start: chrono::NaiveTime, end: chrono::NaiveTime) -> WorkspaceConfig {
        let mut config = config(zone);
        let window = format!(
            r#"days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
            start = "{}"
            end = "{}""#,
            start.format("%H:%M"),
            end.format("%H:%M")
        );
        config.posting_windows = vec![toml::from_str(&window).expect("window")];
        config
    }

    /// Every daylight saving change of 2026 in every zone: the instant it happens, and the
    /// offset before and after it (seconds east of UTC).
    fn changes() -> Vec<(chrono_tz::Tz, Timestamp, i64, i64)> {
        use chrono::{Offset, TimeZone};
        let offset = |tz: &chrono_tz::Tz, t: Timestamp| {
            i64::from(tz.offset_from_utc_datetime(&t.naive_utc()).fix().local_minus_utc())
        };
        let mut out = Vec::new();
        for tz in chrono_tz::TZ_VARIANTS {
            let mut at = t("2026-01-01T00:00:00Z");
            while at < t("2027-01-01T00:00:00Z") {
                let next = at + Duration::hours(6);
                let (before, after) = (offset(&tz, at), offset(&tz, next));
                if before != after {
                    // The change is the first second with the new offset.
                    let (mut lo, mut hi) = (at, next);
                    while (hi - lo).num_seconds() > 1 {
                        let mid = lo + Duration::seconds((hi - lo).num_seconds() / 2);
                        if offset(&tz, mid) == before { lo = mid } else { hi = mid }
                    }
                    out.push((tz, hi, before, after));
                }
                at = next;
            }
        }
        out
    }

    #[test]
    fn in_every_zone_a_repeated_hour_keeps_both_instants_in_its_window_and_a_skipped_one_opens_when_the_clocks_jump() {
        use chrono::TimeZone;
        let minute = |n: i64| Duration::minutes(n);
        let (mut repeated, mut skipped) = (0, 0);
        for (tz, change, before, after) in changes() {
            let name = tz.name();
            let shift = (after - before).abs();
            if shift % 120 != 0 || shift < 1800 {
                continue; // not a whole number of minutes on each side of a middle
            }
            let local_after = tz.from_utc_datetime(&change.naive_utc()).naive_local();
            let day = |w: chrono::NaiveDateTime| w.date();
            if after < before {
                // The wall clock goes back: [local_after, local_after + shift) happens twice. A
                // window within that range (ending ten minutes before it does) holds both
                // instants of its middle.
                let (start, end) = (local_after, local_after + Duration::seconds(shift) - minute(10));
                let middle = Duration::seconds(shift / 2);
                if day(start) != day(end) || start.time() >= end.time() {
                    continue; // a window stays within its day
                }
                let config = every_day(name, start.time(), end.time());
                let found = occurrences(&config, &[], change - Duration::days(1), change + Duration::days(1));
                for instant in [change - Duration::seconds(shift) + middle, change + middle] {
                    assert!(
                        found.iter().any(|w| w.start <= instant && instant < w.end),
                        "{name}: {instant} (the wall-clock {}) is outside {found:?}",
                        start + middle
                    );
                }
                repeated += 1;
            } else {
                // The wall clock jumps forward over [local_after - shift, local_after). A window
                // starting in the middle of it opens at the change.
                let gap_start = local_after - Duration::seconds(shift);
                let start = gap_start + Duration::seconds(shift / 2);
                let end = local_after + minute(60);
                if day(gap_start) != day(end) || start.time() >= end.time() {
                    continue;
                }
                let config = every_day(name, start.time(), end.time());
                let found = occurrences(&config, &[], change - Duration::days(1), change + Duration::days(1));
                let on_the_day: Vec<&UtcWindow> =
                    found.iter().filter(|w| w.end > change && w.start <= change).collect();
                assert_eq!(on_the_day.len(), 1, "{name}: {found:?}");
                assert_eq!(on_the_day[0].start, change, "{name}: the window opens when the clocks jump");
                skipped += 1;
            }
        }
        // Most of the world's zones with daylight saving change both ways in 2026.
        assert!(repeated > 100 && skipped > 100, "{repeated} repeated and {skipped} skipped hours checked");
    }
}
