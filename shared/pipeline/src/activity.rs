//! The workspace's activity: every invocation and tool call of every job, and Nova's (whose
//! records no job view reaches), newest first, filtered by agent, stage and outcome, with each
//! day's count, failures, p50 and p95 durations and tokens (`GET /v1/workspace/activity`).
//! It reads the activity records and the workspace's time zone; it decides nothing.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use harmonia_contracts::domain::{ActivityOutcome, ActivityRecord, Operation};
use harmonia_contracts::event::Stage;
use harmonia_contracts::ids::WorkspaceId;
use harmonia_contracts::{Error, Role};
use harmonia_store::{Direction, MAX_QUERY_LIMIT, Query};
use serde::{Deserialize, Serialize};

use crate::Env;
use crate::records::ACTIVITY;

/// Which records to keep: each `None` keeps all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only this agent's.
    pub agent: Option<Role>,
    /// Only this stage's.
    pub stage: Option<Stage>,
    /// Only the failed ones (`Some(false)`) or the successful ones (`Some(true)`).
    pub succeeded: Option<bool>,
}

impl Filter {
    fn keeps(&self, r: &ActivityRecord) -> bool {
        self.agent.is_none_or(|a| a == r.agent)
            && self.stage.is_none_or(|s| s == r.stage)
            && self.succeeded.is_none_or(|ok| ok == matches!(r.outcome, ActivityOutcome::Success))
    }
}

/// One day of the workspace's activity, in its time zone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Day {
    /// The local date.
    pub day: NaiveDate,
    /// Records (invocations, tool calls, searches).
    pub records: u32,
    /// Invocations (the specialists' and Nova's answers).
    pub invocations: u32,
    /// Records that failed.
    pub failed: u32,
    /// The invocations' median duration, in milliseconds.
    pub p50_ms: f64,
    /// Their 95th percentile duration, in milliseconds.
    pub p95_ms: f64,
    /// Input tokens, all records.
    pub input_tokens: u64,
    /// Output tokens, all records.
    pub output_tokens: u64,
}

/// The workspace's latest activity, as read and filtered.
#[derive(Clone, Debug, PartialEq)]
pub struct Recent {
    /// The kept records, newest first.
    pub records: Vec<ActivityRecord>,
    /// Each day that has a kept record, newest first.
    pub days: Vec<Day>,
    /// Whether the read stopped at [`LATEST`] records, so older ones are not counted.
    pub capped: bool,
    /// The IANA time zone the days are in (`UTC` for a workspace not configured yet).
    pub time_zone: String,
}

/// How many of the workspace's latest records one look reads.
pub const LATEST: u32 = MAX_QUERY_LIMIT;

/// The workspace's latest [`LATEST`] activity records, newest first, kept by `filter`, with
/// their days in the workspace's time zone (UTC for a workspace not configured yet).
pub async fn recent(env: &Env, workspace: &WorkspaceId, filter: Filter) -> Result<Recent, Error> {
    let query = Query::all(LATEST).order_by("started_at", Direction::Descending).map_err(Error::from)?;
    let docs = env.store.query(workspace, ACTIVITY, &query).await.map_err(Error::from)?;
    let capped = docs.len() >= LATEST as usize;
    let records: Vec<ActivityRecord> = harmonia_store::decode_each(ACTIVITY, &docs);
    let records: Vec<ActivityRecord> = records.into_iter().filter(|r| filter.keeps(r)).collect();
    let tz = match crate::workspace::current(&*env.store, workspace).await {
        Ok(current) => Some(current.config.timezone.tz()),
        Err(e) if e.code == harmonia_contracts::Code::WorkspaceNotConfigured => None,
        Err(e) => return Err(e),
    };
    let mut by_day: BTreeMap<NaiveDate, Vec<&ActivityRecord>> = BTreeMap::new();
    for r in &records {
        let day = tz.map_or_else(|| r.started_at.date_naive(), |tz| r.started_at.with_timezone(&tz).date_naive());
        by_day.entry(day).or_default().push(r);
    }
    let days = by_day.into_iter().rev().map(|(day, of_day)| summarise(day, &of_day)).collect();
    let time_zone = tz.map_or("UTC", |tz| tz.name()).to_owned();
    Ok(Recent { records, days, capped, time_zone })
}

fn summarise(day: NaiveDate, records: &[&ActivityRecord]) -> Day {
    // Durations are far below 2^52 microseconds: the conversion is exact.
    #[allow(clippy::cast_precision_loss)]
    let mut durations: Vec<f64> =
        records.iter().filter(|r| r.operation == Operation::Invoke).map(|r| r.duration_us as f64 / 1000.0).collect();
    durations.sort_unstable_by(f64::total_cmp);
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Day {
        day,
        records: count(records.len()),
        invocations: count(durations.len()),
        failed: count(records.iter().filter(|r| !matches!(r.outcome, ActivityOutcome::Success)).count()),
        p50_ms: percentile(&durations, 0.50).unwrap_or(0.0),
        p95_ms: percentile(&durations, 0.95).unwrap_or(0.0),
        input_tokens: records.iter().map(|r| u64::from(r.usage.input_tokens)).sum(),
        output_tokens: records.iter().map(|r| u64::from(r.usage.output_tokens)).sum(),
    }
}

/// The value at `q` (0-1) of sorted `values`, by nearest rank; `None` for none.
#[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn percentiles_are_nearest_rank() {
        let ms: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!((percentile(&ms, 0.50), percentile(&ms, 0.95)), (Some(10.0), Some(19.0)));
        assert_eq!((percentile(&[7.0], 0.50), percentile(&[7.0], 0.95)), (Some(7.0), Some(7.0)));
        assert_eq!(percentile(&[], 0.95), None);
    }
}
