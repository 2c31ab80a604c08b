use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Timestamp;
use super::WorkspaceConfig;
use crate::ids::{OperatorId, WorkspaceId};

/// A social platform Harmonia writes for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum Platform {
    /// X: 280 weighted characters.
    X,
    /// LinkedIn: 3,000 characters.
    Linkedin,
    /// Instagram caption: 2,200 characters.
    Instagram,
    /// Threads: 500 characters, at most 5 links.
    Threads,
    /// Bluesky: 300 graphemes.
    Bluesky,
    /// YouTube description: 5,000 characters.
    Youtube,
    /// TikTok caption: 2,200 characters.
    Tiktok,
    /// Mastodon: 500 characters (the default instance limit), each link counting 23.
    Mastodon,
}

impl Platform {
    /// Every platform.
    pub const ALL: [Platform; 8] = [
        Platform::X,
        Platform::Linkedin,
        Platform::Instagram,
        Platform::Threads,
        Platform::Bluesky,
        Platform::Youtube,
        Platform::Tiktok,
        Platform::Mastodon,
    ];

    /// The snake_case name (the same as its serde name).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The platform's own name, as its users write it (`LinkedIn`, `X`).
    pub fn display_name(self) -> &'static str {
        match self {
            Platform::X => "X",
            Platform::Linkedin => "LinkedIn",
            Platform::Instagram => "Instagram",
            Platform::Threads => "Threads",
            Platform::Bluesky => "Bluesky",
            Platform::Youtube => "YouTube",
            Platform::Tiktok => "TikTok",
            Platform::Mastodon => "Mastodon",
        }
    }
}

/// Whether mock-provenance evidence may be published.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceMode {
    /// Local and demo use: mock evidence allowed.
    Development,
    /// Real publishing: mock evidence refused by policy.
    Production,
}

/// A tenant's head record (`workspaces/{ws}`): which configuration version is current. The
/// configuration itself lives in immutable [`WorkspaceVersion`]s; a job reads the version it
/// recorded, never this record's current one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Workspace {
    /// Id.
    pub id: WorkspaceId,
    /// The current configuration version (from 1).
    #[schemars(range(min = 1))]
    pub version: u32,
    /// Creation time (of version 1).
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub created_at: Timestamp,
    /// When the current version was made current.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub updated_at: Timestamp,
}

/// One immutable configuration version (`workspace_versions/{version:06}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceVersion {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// The version number (from 1, one more per change).
    #[schemars(range(min = 1))]
    pub version: u32,
    /// The configuration.
    pub config: WorkspaceConfig,
    /// Content hash of `config` (an update with the same hash changes nothing).
    pub content_hash: String,
    /// When it was stored.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub created_at: Timestamp,
    /// Who stored it.
    pub created_by: OperatorId,
}
