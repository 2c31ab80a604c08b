use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Platform, Timestamp};
use crate::event::{Pass, Round};
use crate::ids::{BriefId, DraftId, EvidenceId, JobId, PlanItemId};
use crate::tool::Provenance;

/// A source-grounded content brief.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Brief {
    /// Id.
    pub id: BriefId,
    /// The angle it develops.
    #[schemars(length(min = 1, max = 200))]
    pub angle: String,
    /// The one thing the post must land.
    #[schemars(length(min = 1, max = 500))]
    pub key_message: String,
    /// Who it is for.
    #[schemars(length(min = 1, max = 300))]
    pub audience: String,
    /// Platforms it suits.
    #[schemars(length(min = 1, max = 7))]
    pub platforms: Vec<Platform>,
    /// Evidence it rests on.
    #[schemars(length(min = 1, max = 20))]
    pub evidence: Vec<EvidenceId>,
    /// Call to action, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 200))]
    pub call_to_action: Option<String>,
}

/// Ryan's strategy; needs a human approval before planning.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Strategy {
    /// What the content should achieve.
    #[schemars(length(min = 1, max = 500))]
    pub objective: String,
    /// Primary audience.
    #[schemars(length(min = 1, max = 300))]
    pub audience: String,
    /// Voice to write in.
    #[schemars(length(min = 1, max = 300))]
    pub voice: String,
    /// Briefs.
    #[schemars(length(min = 1, max = 10))]
    pub briefs: Vec<Brief>,
    /// Live or mock.
    pub provenance: Provenance,
}

/// A factual claim in a draft and the evidence it cites.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// The claim as it appears in the copy.
    #[schemars(length(min = 1, max = 500))]
    pub text: String,
    /// Evidence ids it cites.
    #[schemars(length(min = 1, max = 10))]
    pub evidence: Vec<EvidenceId>,
}

/// A Noni draft for one pass. `content_hash` names the exact version an approval covers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Draft {
    /// Id.
    pub id: DraftId,
    /// Job.
    pub job: JobId,
    /// The selected plan item it writes.
    pub item: PlanItemId,
    /// Writing pass.
    pub pass: Pass,
    /// The operator round it belongs to (absent for the original, round 0).
    #[serde(default, skip_serializing_if = "Round::is_original")]
    pub round: Round,
    /// Target platform.
    pub platform: Platform,
    /// The post text.
    #[schemars(length(min = 1, max = 5000))]
    pub body: String,
    /// Every factual claim, each citing evidence.
    #[schemars(length(max = 20))]
    pub claims: Vec<Claim>,
    /// A thread's posts in order, when its plan item's format is `thread` (2 to
    /// [`MAX_THREAD_POSTS`]); empty for a single post. `body` is then the thread as one reads
    /// it: the posts joined by a blank line ([`Draft::thread_body`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 25))]
    pub thread: Vec<String>,
    /// Hash of (platform, body, claims), and of the thread's posts when it is one.
    pub content_hash: String,
    /// Live or mock.
    pub provenance: Provenance,
    /// When it was written.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub created_at: Timestamp,
}

/// The most posts a thread has.
pub const MAX_THREAD_POSTS: usize = 25;

impl Draft {
    /// The hash of the publishable content: platform, body and claims, and a thread's posts
    /// (two threads of the same text split differently are different versions).
    pub fn compute_hash(platform: Platform, body: &str, claims: &[Claim], thread: &[String]) -> String {
        if thread.is_empty() {
            super::content_hash(&(platform, body, claims))
        } else {
            super::content_hash(&(platform, body, claims, thread))
        }
    }

    /// Whether `content_hash` matches the content.
    pub fn hash_is_current(&self) -> bool {
        self.content_hash == Self::compute_hash(self.platform, &self.body, &self.claims, &self.thread)
    }

    /// A thread as one reads it: its posts joined by a blank line.
    pub fn thread_body(posts: &[String]) -> String {
        posts.join("\n\n")
    }
}
