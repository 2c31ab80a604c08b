//! A workspace's imported content calendar: posts already scheduled elsewhere and blackout
//! dates. Planning snapshots are built from these by deterministic code.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Platform, Timestamp};
use crate::ids::DocId;
use crate::tool::Provenance;

/// One imported calendar entry, stored under its `id`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CalendarImport {
    /// The entry's id: the file's `id` column, or a stable digest of the row's content, so
    /// importing the same rows again replaces them instead of adding copies.
    pub id: DocId,
    /// What the entry is.
    pub item: CalendarItem,
    /// Where the entry came from (a planning tool's export, a shared calendar).
    #[schemars(length(min = 1, max = 200))]
    pub source: String,
    /// Live or mock.
    pub provenance: Provenance,
}

/// A scheduled post or a blackout date.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum CalendarItem {
    /// A post already scheduled: it takes a slot of its UTC day.
    Scheduled {
        /// Channel.
        channel: Platform,
        /// What it is.
        #[schemars(length(min = 1, max = 200))]
        title: String,
        /// When it goes out.
        #[serde(with = "crate::time::rfc3339")]
        #[schemars(with = "crate::domain::Timestamp")]
        at: Timestamp,
    },
    /// A whole day, in the workspace's time zone, on which nothing is posted.
    Blackout {
        /// The local date.
        date: chrono::NaiveDate,
        /// Why, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(length(min = 1, max = 200))]
        reason: Option<String>,
    },
}

/// One approved post on the workspace's calendar (`GET /v1/calendar`), at the time it goes (or
/// went) out, in UTC and in the workspace's time zone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CalendarPost {
    /// The job.
    pub job: crate::ids::JobId,
    /// The job's title.
    pub title: String,
    /// The channel's platform.
    pub platform: Platform,
    /// The channel's handle.
    pub handle: String,
    /// Where it stands: `scheduled`, `window_passed`, `dispatched`, `cancelled`, or, once its
    /// publication is claimed, the job's `publishing`, `publish_unknown`, `published`,
    /// `verified` or `failed`.
    pub state: String,
    /// When it goes out (UTC).
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub at: Timestamp,
    /// The same instant in the workspace's time zone, with its offset (RFC 3339).
    pub at_local: String,
    /// The plan item's posting window (UTC).
    pub window: super::UtcWindow,
}
