//! The cast of agent roles (spec/agent-platform.md).

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One of the eight agent roles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
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
        match self {
            Role::Harmonia => "harmonia",
            Role::Nimi => "nimi",
            Role::Ryan => "ryan",
            Role::Temi => "temi",
            Role::Noni => "noni",
            Role::Dara => "dara",
            Role::Maya => "maya",
            Role::Nova => "nova",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
