//! The workspace configuration an operator writes (a TOML file, `examples/workspace.toml`),
//! checked against `schemas/workspace-config.schema.json`. Nothing brand-specific lives in
//! code: strategy, briefs, calls to action, policy and planning all read this.

use std::fmt;
use std::str::FromStr;

use chrono::{NaiveTime, Weekday};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{ConnectorKind, Platform, WorkspaceMode};
use crate::error::{Code, Error};

/// A value written as text wherever it is stored or sent, in the form an operator types in the
/// configuration file: serialized with its `Display`, deserialized with its `FromStr` (whose
/// refusal's message becomes the deserializer's error, so it is reported with the field path
/// around it), and described by `$schema`, a JSON Schema for strings.
macro_rules! written_as_text {
    ($name:ident, $schema:tt) => {
        fixed_schema!($name, $schema);

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d)?.parse().map_err(|e: Error| serde::de::Error::custom(e.message))
            }
        }
    };
}

/// One workspace's configuration: brand, audience, voice, goals, call to action, channels,
/// link allow-list, posting windows and cadence, and mode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceConfig {
    /// The brand or team name.
    #[schemars(length(min = 1, max = 200))]
    pub name: String,
    /// Who the posts are for, in a sentence.
    #[schemars(length(min = 1, max = 500))]
    pub audience: String,
    /// How the brand sounds, in a sentence.
    #[schemars(length(min = 1, max = 500))]
    pub voice: String,
    /// Content goals, most important first.
    #[schemars(length(min = 1, max = 10), inner(length(min = 1, max = 300)))]
    pub goals: Vec<String>,
    /// The call to action posts end with.
    #[schemars(length(min = 1, max = 200))]
    pub call_to_action: String,
    /// `development` (mock evidence allowed) or `production` (mock evidence refused).
    pub mode: WorkspaceMode,
    /// Hosts a post may link to (a host or any subdomain of it). Empty: no links allowed.
    #[serde(default)]
    #[schemars(length(max = 500), inner(regex(pattern = r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")))]
    pub link_allow_list: Vec<String>,
    /// Phrases a post may never contain (matched case-insensitively). Default: none.
    #[serde(default)]
    #[schemars(length(max = 500), inner(length(min = 1, max = 200)))]
    pub banned_phrases: Vec<String>,
    /// The channels the workspace publishes to.
    #[schemars(length(min = 1, max = 20))]
    pub channels: Vec<Channel>,
    /// The IANA time zone posting windows are written in. Default: `UTC`.
    #[serde(default)]
    pub timezone: TimeZoneName,
    /// When posts may go out, in `timezone`. Default: Monday to Friday, 09:00–17:00.
    #[serde(default = "default_windows")]
    #[schemars(length(min = 1, max = 50))]
    pub posting_windows: Vec<PostingWindow>,
    /// How often to post. Default: three posts a week, at most one a day.
    #[serde(default)]
    pub cadence: Cadence,
    /// What a job may spend on the model (`[model]`). Default: no limit.
    #[serde(default, skip_serializing_if = "ModelSettings::is_unlimited")]
    pub model: ModelSettings,
    /// When posts' engagement is read back and how long public trends are kept
    /// (`[engagement]`). Default: snapshots 1 hour, 24 hours and 7 days after a post is
    /// verified; trends kept 60 minutes.
    #[serde(default, skip_serializing_if = "EngagementSettings::is_default")]
    pub engagement: EngagementSettings,
}

/// When posts' engagement is read back from their platform, and how long public trends are
/// kept (`[engagement]` in the file).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EngagementSettings {
    /// How long after a post is verified each engagement snapshot is taken, earliest first
    /// (`30m`, `1h`, `24h`, `7d`; at most 90 days). Default: `["1h", "24h", "7d"]`.
    #[serde(default = "default_snapshots")]
    #[schemars(length(min = 1, max = 6))]
    pub snapshots: Vec<SnapshotOffset>,
    /// How long a read of the channels' public trends is kept before it is read again, in
    /// minutes. Default: 60.
    #[serde(default = "default_trends_cache_minutes")]
    #[schemars(range(min = 1, max = 1440))]
    pub trends_cache_minutes: u32,
}

fn default_snapshots() -> Vec<SnapshotOffset> {
    vec![SnapshotOffset::hours(1), SnapshotOffset::hours(24), SnapshotOffset::days(7)]
}

fn default_trends_cache_minutes() -> u32 {
    60
}

impl Default for EngagementSettings {
    fn default() -> Self {
        Self { snapshots: default_snapshots(), trends_cache_minutes: default_trends_cache_minutes() }
    }
}

impl EngagementSettings {
    /// Whether these are the defaults (then the file need not say them).
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// How long after a post is verified an engagement snapshot is taken: a count and a unit,
/// written `30m`, `1h`, `24h` or `7d` (at most 90 days).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SnapshotOffset {
    count: u16,
    unit: OffsetUnit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum OffsetUnit {
    Minutes,
    Hours,
    Days,
}

written_as_text!(SnapshotOffset, {
    "type": "string",
    "pattern": "^[1-9][0-9]{0,4}[mhd]$",
    "description": "A time after publication: minutes (30m), hours (24h) or days (7d)."
});

/// The longest a snapshot may wait after publication.
const MAX_OFFSET_MINUTES: u32 = 90 * 24 * 60;

impl SnapshotOffset {
    /// `n` hours.
    pub const fn hours(n: u16) -> Self {
        Self { count: n, unit: OffsetUnit::Hours }
    }

    /// `n` days.
    pub const fn days(n: u16) -> Self {
        Self { count: n, unit: OffsetUnit::Days }
    }

    /// The offset in minutes.
    pub fn minutes(self) -> u32 {
        let per = match self.unit {
            OffsetUnit::Minutes => 1,
            OffsetUnit::Hours => 60,
            OffsetUnit::Days => 24 * 60,
        };
        u32::from(self.count) * per
    }

    /// The offset as a duration.
    pub fn duration(self) -> chrono::Duration {
        chrono::Duration::minutes(i64::from(self.minutes()))
    }
}

impl FromStr for SnapshotOffset {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let refused = || {
            Error::new(
                Code::InvalidConfig,
                "a snapshot offset is a whole number of minutes, hours or days, written 30m, 24h or 7d, of at most 90 days",
            )
        };
        let (digits, unit) = s.split_at(s.len().saturating_sub(1));
        let unit = match unit {
            "m" => OffsetUnit::Minutes,
            "h" => OffsetUnit::Hours,
            "d" => OffsetUnit::Days,
            _ => return Err(refused()),
        };
        if digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(refused());
        }
        let count: u16 = digits.parse().map_err(|_| refused())?;
        let offset = Self { count, unit };
        if count == 0 || offset.minutes() > MAX_OFFSET_MINUTES {
            return Err(refused());
        }
        Ok(offset)
    }
}

impl fmt::Display for SnapshotOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.unit {
            OffsetUnit::Minutes => 'm',
            OffsetUnit::Hours => 'h',
            OffsetUnit::Days => 'd',
        };
        write!(f, "{}{unit}", self.count)
    }
}

/// What a job may spend on the model (`[model]` in the file).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    /// The most tokens (input and output, every role and every grounded search together) one
    /// job's model calls may take. A call the runtime expects to pass it is not made: the job
    /// stops with `budget_exhausted` where it is, and carries on once the limit is raised (a
    /// later configuration version's limit applies to jobs already under one). Unset: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1000, max = 1_000_000_000))]
    pub max_tokens_per_job: Option<u64>,
}

impl ModelSettings {
    /// Whether no limit is set.
    pub fn is_unlimited(&self) -> bool {
        self.max_tokens_per_job.is_none()
    }
}

/// One channel the workspace publishes to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Channel {
    /// The platform.
    pub platform: Platform,
    /// The account on it (e.g. `@news.example.org`).
    #[schemars(length(min = 1, max = 200))]
    pub handle: String,
    /// At most this many posts a day on this channel. Default: the cadence's daily limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 24))]
    pub max_posts_per_day: Option<u32>,
    /// How posts reach it. Default: `sandbox`.
    #[serde(default = "default_connector")]
    pub connector: ConnectorKind,
    /// Mastodon only: the instance's status limit in characters (its
    /// `configuration.statuses.max_characters`, which `harmonia channels check` reads).
    /// Default: 500, Mastodon's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100_000))]
    pub max_characters: Option<u32>,
}

fn default_connector() -> ConnectorKind {
    ConnectorKind::Sandbox
}

/// A weekly posting window in the workspace's time zone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PostingWindow {
    /// The days it applies to.
    #[schemars(length(min = 1, max = 7))]
    pub days: Vec<Day>,
    /// Local start time, `HH:MM`.
    pub start: LocalTime,
    /// Local end time, `HH:MM`, after `start` (a window does not cross midnight).
    pub end: LocalTime,
}

fn default_windows() -> Vec<PostingWindow> {
    let at = |h| LocalTime(NaiveTime::from_hms_opt(h, 0, 0).unwrap_or(NaiveTime::MIN));
    vec![PostingWindow { days: vec![Day::Mon, Day::Tue, Day::Wed, Day::Thu, Day::Fri], start: at(9), end: at(17) }]
}

/// How often the workspace posts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cadence {
    /// Posts a week across all channels.
    #[schemars(range(min = 1, max = 70))]
    pub posts_per_week: u32,
    /// Posts a day across all channels.
    #[schemars(range(min = 1, max = 24))]
    pub max_posts_per_day: u32,
}

impl Default for Cadence {
    fn default() -> Self {
        Self { posts_per_week: 3, max_posts_per_day: 1 }
    }
}

/// A day of the week, written `mon` … `sun`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum Day {
    Mon,
    Tue,
    Wed,
    Thu,
    Fri,
    Sat,
    Sun,
}

impl From<Day> for Weekday {
    fn from(d: Day) -> Self {
        match d {
            Day::Mon => Weekday::Mon,
            Day::Tue => Weekday::Tue,
            Day::Wed => Weekday::Wed,
            Day::Thu => Weekday::Thu,
            Day::Fri => Weekday::Fri,
            Day::Sat => Weekday::Sat,
            Day::Sun => Weekday::Sun,
        }
    }
}

/// A local time of day, written `HH:MM` (24-hour).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LocalTime(NaiveTime);

written_as_text!(LocalTime, {
    "type": "string",
    "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$",
    "description": "A local time of day, HH:MM (24-hour)."
});

impl LocalTime {
    /// The time of day.
    pub fn time(self) -> NaiveTime {
        self.0
    }
}

impl FromStr for LocalTime {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let ok = s.len() == 5 && s.as_bytes()[2] == b':';
        ok.then(|| NaiveTime::parse_from_str(s, "%H:%M").ok())
            .flatten()
            .map(Self)
            .ok_or_else(|| Error::new(Code::InvalidConfig, "a time of day is written HH:MM, from 00:00 to 23:59"))
    }
}

impl fmt::Display for LocalTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.format("%H:%M"))
    }
}

/// An IANA time zone name (`Europe/Lisbon`, `America/Chicago`, `UTC`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimeZoneName(chrono_tz::Tz);

// The zone list itself is checked when the value is parsed; the schema bounds its shape.
written_as_text!(TimeZoneName, {
    "type": "string",
    "pattern": "^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){0,2}$",
    "maxLength": 64,
    "description": "An IANA time zone name, for example Europe/Lisbon or UTC."
});

impl TimeZoneName {
    /// The zone, for converting local times to UTC.
    pub fn tz(self) -> chrono_tz::Tz {
        self.0
    }
}

impl Default for TimeZoneName {
    fn default() -> Self {
        Self(chrono_tz::Tz::UTC)
    }
}

impl FromStr for TimeZoneName {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        s.parse::<chrono_tz::Tz>().map(Self).map_err(|e| {
            Error::new(Code::InvalidConfig, "not an IANA time zone name (for example Europe/Lisbon)").with_cause(e)
        })
    }
}

impl fmt::Display for TimeZoneName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_zones_parse_only_their_written_forms() {
        assert_eq!("09:30".parse::<LocalTime>().map(|t| t.to_string()).ok().as_deref(), Some("09:30"));
        for bad in ["9:30", "24:00", "09:60", "09:30:00", "", "0930"] {
            assert!(bad.parse::<LocalTime>().is_err(), "{bad}");
        }
        assert_eq!(
            "Europe/Lisbon".parse::<TimeZoneName>().map(|z| z.to_string()).ok().as_deref(),
            Some("Europe/Lisbon")
        );
        for bad in ["Mars/Olympus", "", "utc+1"] {
            assert!(bad.parse::<TimeZoneName>().is_err(), "{bad}");
        }
    }
}
