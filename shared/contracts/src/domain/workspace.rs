use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Timestamp;
use crate::ids::WorkspaceId;

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
}

impl Platform {
    /// Every platform.
    pub const ALL: [Platform; 7] = [
        Platform::X,
        Platform::Linkedin,
        Platform::Instagram,
        Platform::Threads,
        Platform::Bluesky,
        Platform::Youtube,
        Platform::Tiktok,
    ];

    /// The snake_case name (the same as its serde name).
    pub fn as_str(self) -> &'static str {
        self.into()
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

/// A tenant and its publishing rules.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Workspace {
    /// Id.
    pub id: WorkspaceId,
    /// Display name.
    #[schemars(length(min = 1, max = 200))]
    pub name: String,
    /// Development or production.
    pub mode: WorkspaceMode,
    /// Phrases a post may never contain (matched case-insensitively).
    #[schemars(length(max = 500))]
    pub banned_phrases: Vec<String>,
    /// Hosts a post may link to (a host or any subdomain of it). Empty: no links allowed.
    #[schemars(length(max = 500))]
    pub link_allow_list: Vec<String>,
    /// Content goals shown in the operator feed.
    #[schemars(length(max = 50))]
    pub goals: Vec<String>,
    /// Creation time.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub created_at: Timestamp,
}
