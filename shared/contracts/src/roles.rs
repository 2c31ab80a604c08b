//! The cast of agent roles (spec/agent-platform.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One of the eight agent roles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum Role {
    /// Coordinator: routes one bounded task to exactly one specialist.
    Harmonia,
    /// Analyst: exact evidence moments and qualified angles.
    Nimi,
    /// Strategist: strategy and source-grounded briefs.
    Ryan,
    /// Editorial planner: turns the approved strategy into a plan.
    Temi,
    /// Copywriter: platform-native draft and at most one revision.
    Noni,
    /// Editor: seven-dimension assessment.
    Dara,
    /// Presenter: A2UI layout over typed references.
    Maya,
    /// Read-only liaison answering operator questions.
    Nova,
}

impl Role {
    /// All roles.
    pub const ALL: [Role; 8] =
        [Role::Harmonia, Role::Nimi, Role::Ryan, Role::Temi, Role::Noni, Role::Dara, Role::Maya, Role::Nova];

    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}
