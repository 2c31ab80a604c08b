use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use super::{Platform, Timestamp};
use crate::error::{Code, Error};
use crate::ids::{BriefId, PlanItemId, SnapshotId, WorkspaceId};
use crate::tool::Provenance;

/// A scheduled commitment already on the calendar.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Commitment {
    /// What it is.
    #[schemars(length(min = 1, max = 200))]
    pub title: String,
    /// Channel.
    pub channel: Platform,
    /// When.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub at: Timestamp,
}

/// Publishing capacity on one UTC day.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Capacity {
    /// The UTC day.
    pub day: chrono::NaiveDate,
    /// Posts the team can still produce that day.
    #[schemars(range(max = 100))]
    pub slots: u32,
    /// The workspace's posting windows that open that UTC day, converted from its time zone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 50))]
    pub windows: Vec<UtcWindow>,
}

/// Whether an asset a post needs is ready.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AssetReadiness {
    /// Asset name.
    #[schemars(length(min = 1, max = 200))]
    pub asset: String,
    /// Ready now.
    pub ready: bool,
    /// When it will be ready, if not now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::time::rfc3339_option")]
    #[schemars(with = "Option<crate::domain::Timestamp>")]
    pub ready_at: Option<Timestamp>,
}

/// A measured posting-window observation from verified posts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PostingWindowObservation {
    /// Platform (the channel).
    pub platform: Platform,
    /// Hour of day the posts went out, in the workspace's time zone.
    #[schemars(range(max = 23))]
    pub hour_local: u8,
    /// That hour in UTC, as it was for the latest of those posts.
    #[schemars(range(max = 23))]
    pub hour_utc: u8,
    /// How many verified posts the observation rests on.
    #[schemars(range(min = 1))]
    pub sample_size: u32,
    /// Median interactions of those posts (reactions, comments, shares, and quotes and clicks
    /// where reported), each post as last measured.
    #[schemars(range(min = 0.0))]
    pub median_interactions: f64,
    /// Median engagement rate (interactions per impression, 0–1) of those of them whose
    /// platform reports impressions; absent when none does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub median_engagement_rate: Option<f64>,
}

/// A slot already on the content calendar.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CalendarEntry {
    /// Channel.
    pub channel: Platform,
    /// Title.
    #[schemars(length(min = 1, max = 200))]
    pub title: String,
    /// The occupied window.
    pub window: UtcWindow,
}

/// A dependency that blocks some work.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BlockedDependency {
    /// What is blocked.
    #[schemars(length(min = 1, max = 200))]
    pub key: String,
    /// Why.
    #[schemars(length(min = 1, max = 500))]
    pub reason: String,
    /// When it is expected to clear, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(with = "crate::time::rfc3339_option")]
    #[schemars(with = "Option<crate::domain::Timestamp>")]
    pub clears_at: Option<Timestamp>,
}

/// One immutable planning snapshot; every Temi read names its id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanningSnapshot {
    /// Id.
    pub id: SnapshotId,
    /// Tenant.
    pub workspace: WorkspaceId,
    /// When it was taken.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub taken_at: Timestamp,
    /// Existing commitments.
    pub commitments: Vec<Commitment>,
    /// Capacity by day.
    pub capacity: Vec<Capacity>,
    /// Asset readiness.
    pub asset_readiness: Vec<AssetReadiness>,
    /// Verified posting-window observations.
    pub posting_windows: Vec<PostingWindowObservation>,
    /// Calendar projection.
    pub calendar: Vec<CalendarEntry>,
    /// Blocked dependencies.
    pub blocked_dependencies: Vec<BlockedDependency>,
}

/// A UTC time window with `end` after `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UtcWindow {
    /// Start.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub start: Timestamp,
    /// End (after start).
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub end: Timestamp,
}

impl UtcWindow {
    /// A window; `end` must be after `start`.
    pub fn new(start: Timestamp, end: Timestamp) -> Result<Self, Error> {
        if end > start {
            Ok(Self { start, end })
        } else {
            Err(Error::new(Code::OutOfRange, "a window must end after it starts"))
        }
    }
}

impl<'de> Deserialize<'de> for UtcWindow {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            #[serde(with = "crate::time::rfc3339")]
            start: Timestamp,
            #[serde(with = "crate::time::rfc3339")]
            end: Timestamp,
        }
        let raw = Raw::deserialize(d)?;
        UtcWindow::new(raw.start, raw.end).map_err(|e| serde::de::Error::custom(e.message))
    }
}

/// Content format of a plan item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContentFormat {
    /// A text post.
    Text,
    /// A thread of short posts.
    Thread,
    /// A post with a still image.
    Image,
    /// A carousel of images.
    Carousel,
    /// A short vertical video clip.
    ShortVideo,
    /// A long-form article.
    Article,
}

impl ContentFormat {
    /// Every format, in the order a planner prefers them when several fit (text first: it
    /// needs no asset).
    pub const ALL: [ContentFormat; 6] = [
        ContentFormat::Text,
        ContentFormat::Thread,
        ContentFormat::Image,
        ContentFormat::Carousel,
        ContentFormat::ShortVideo,
        ContentFormat::Article,
    ];

    /// Whether `platform` publishes this format: X, Bluesky and Threads take text, threads and
    /// images (X and Threads short video too, Threads carousels); LinkedIn takes text, images,
    /// carousels, short video and articles; Instagram images, carousels and short video;
    /// TikTok short video and photo carousels; YouTube community text, images and Shorts.
    pub fn fits(self, platform: Platform) -> bool {
        use ContentFormat::*;
        match platform {
            Platform::X => matches!(self, Text | Thread | Image | ShortVideo),
            Platform::Bluesky => matches!(self, Text | Thread | Image),
            Platform::Threads => matches!(self, Text | Thread | Image | Carousel | ShortVideo),
            Platform::Linkedin => matches!(self, Text | Image | Carousel | ShortVideo | Article),
            Platform::Instagram => matches!(self, Image | Carousel | ShortVideo),
            Platform::Tiktok => matches!(self, ShortVideo | Carousel),
            Platform::Youtube => matches!(self, Text | Image | ShortVideo),
            Platform::Mastodon => matches!(self, Text | Thread | Image | ShortVideo),
        }
    }

    /// The first format of [`ContentFormat::ALL`] that `platform` publishes.
    pub fn preferred_for(platform: Platform) -> ContentFormat {
        Self::ALL.into_iter().find(|f| f.fits(platform)).unwrap_or(ContentFormat::ShortVideo)
    }
}

one_to_five!(
    /// Priority 1 (highest) to 5.
    Priority,
    "priority"
);

/// One item of the editorial plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanItem {
    /// Id.
    pub id: PlanItemId,
    /// The brief it realises.
    pub brief: BriefId,
    /// Order in the sequence, from 1.
    #[schemars(range(min = 1, max = 100))]
    pub sequence: u32,
    /// Channel.
    pub channel: Platform,
    /// Format.
    pub format: ContentFormat,
    /// UTC posting window.
    pub window: UtcWindow,
    /// Production deadline.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub deadline: Timestamp,
    /// Items that must ship first.
    #[schemars(length(max = 20))]
    pub depends_on: Vec<PlanItemId>,
    /// Priority.
    pub priority: Priority,
}

/// A brief left out of a plan, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Deferral {
    /// The brief.
    pub brief: BriefId,
    /// Why it is not planned now.
    #[schemars(length(min = 1, max = 300))]
    pub reason: String,
}

/// Temi's plan over one snapshot, with the item deterministic code selected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// The snapshot every read named.
    pub snapshot: SnapshotId,
    /// Hash of the approved strategy it operationalises.
    pub strategy_hash: String,
    /// Cadence in words (e.g. "two posts a week").
    #[schemars(length(min = 1, max = 300))]
    pub cadence: String,
    /// Items.
    #[schemars(length(min = 1, max = 30))]
    pub items: Vec<PlanItem>,
    /// Briefs deliberately left out of this plan, each with why: every brief of the strategy
    /// is either planned or here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 30))]
    pub deferred: Vec<Deferral>,
    /// Live or mock.
    pub provenance: Provenance,
}
