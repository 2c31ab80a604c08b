use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Platform, Timestamp};
use crate::error::Code;
use crate::event::Round;
use crate::ids::{DraftId, JobId, OperatorId, PostId};

/// What a human decision is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumIter)]
#[strum(serialize_all = "snake_case")]
pub enum ApprovalSubject {
    /// Ryan's strategy.
    Strategy,
    /// A reviewed, policy-passed draft.
    Draft,
}

impl ApprovalSubject {
    /// The snake_case name (the same as its serde name).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A human decision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "decision", rename_all = "snake_case", deny_unknown_fields)]
pub enum Decision {
    /// Approved.
    Approved,
    /// Rejected, with the operator's reason.
    Rejected {
        /// Why.
        #[schemars(length(min = 1, max = 500))]
        reason: String,
    },
    /// The operator asked the role for a new version (an operator round). The feedback is
    /// context for the role, never authority.
    ChangesRequested {
        /// What the operator wants changed.
        #[schemars(length(min = 1, max = 2000))]
        feedback: String,
    },
    /// The operator wrote the next draft version themselves (an operator round).
    Edited {
        /// The operator-authored draft.
        draft: DraftId,
        /// Its version (content hash).
        content_hash: String,
    },
    /// The operator asked for a round beyond the last a gate allows; the job now needs a
    /// person.
    RoundsExhausted,
}

impl Decision {
    /// The decision in words, for an operator: "approved", "changes requested", ….
    pub fn describe(&self) -> &'static str {
        match self {
            Decision::Approved => "approved",
            Decision::Rejected { .. } => "rejected",
            Decision::ChangesRequested { .. } => "changes requested",
            Decision::Edited { .. } => "edited",
            Decision::RoundsExhausted => "asked for a round beyond the last",
        }
    }
}

/// A durable human decision on one exact version (its content hash). Only the operator API
/// writes these; no model output can create one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Approval {
    /// Job.
    pub job: JobId,
    /// Strategy or draft.
    pub subject: ApprovalSubject,
    /// The exact version decided on.
    pub subject_hash: String,
    /// The operator round of that version (absent for the original, round 0).
    #[serde(default, skip_serializing_if = "Round::is_original")]
    pub round: Round,
    /// The decision.
    pub decision: Decision,
    /// Who decided.
    pub operator: OperatorId,
    /// When.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub decided_at: Timestamp,
}

/// Publishing connector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConnectorKind {
    /// Local platform simulation.
    Sandbox,
    /// Signed HTTP webhook.
    Webhook,
    /// Bluesky, over the AT Protocol (`com.atproto.repo.createRecord` with a record key
    /// derived from the idempotency key).
    Bluesky,
    /// Mastodon (`POST /api/v1/statuses` with an `Idempotency-Key`).
    Mastodon,
    /// LinkedIn's Posts API (`POST /rest/posts`), as a member or an organization.
    Linkedin,
    /// X's API v2 (`POST /2/tweets`).
    X,
}

impl ConnectorKind {
    /// Its name, as configuration writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectorKind::Sandbox => "sandbox",
            ConnectorKind::Webhook => "webhook",
            ConnectorKind::Bluesky => "bluesky",
            ConnectorKind::Mastodon => "mastodon",
            ConnectorKind::Linkedin => "linkedin",
            ConnectorKind::X => "x",
        }
    }

    /// The platform a connector holding one account's credentials posts to; `None` for the
    /// sandbox and the webhook, which post for any platform.
    pub fn account_platform(self) -> Option<Platform> {
        match self {
            ConnectorKind::Sandbox | ConnectorKind::Webhook => None,
            ConnectorKind::Bluesky => Some(Platform::Bluesky),
            ConnectorKind::Mastodon => Some(Platform::Mastodon),
            ConnectorKind::Linkedin => Some(Platform::Linkedin),
            ConnectorKind::X => Some(Platform::X),
        }
    }
}

/// The claim written (in a transaction) before the connector is called: at most one per
/// approved draft.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PublicationClaim {
    /// Job.
    pub job: JobId,
    /// Draft.
    pub draft: DraftId,
    /// The approved version.
    pub content_hash: String,
    /// Platform.
    pub platform: Platform,
    /// Connector.
    pub connector: ConnectorKind,
    /// Sent to the connector so a repeated call cannot post twice.
    #[schemars(length(min = 1, max = 200))]
    pub idempotency_key: String,
    /// When.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub claimed_at: Timestamp,
}

/// What the connector said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case", deny_unknown_fields)]
pub enum ReceiptOutcome {
    /// The platform accepted the post.
    Applied {
        /// Platform post id.
        post: PostId,
        /// Public URL, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        /// On the AT Protocol: the record's `at://` URI and CID, as the repository answered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        record: Option<RecordRef>,
    },
    /// No confirmation either way (timeout, lost answer); resolved by verification.
    Unknown,
    /// The platform refused: nothing was posted.
    Failed {
        /// Stable code.
        code: Code,
        /// When the platform allows posting again, when it said (a rate limit's reset).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[serde(with = "crate::time::rfc3339_option")]
        #[schemars(with = "Option<crate::domain::Timestamp>")]
        retry_after: Option<Timestamp>,
    },
}

/// A record in an AT Protocol repository: its `at://` URI and the CID of its content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordRef {
    /// `at://{did}/{collection}/{rkey}`.
    #[schemars(length(min = 1, max = 512))]
    pub uri: String,
    /// The content identifier of the record's content.
    #[schemars(length(min = 1, max = 128))]
    pub cid: String,
}

/// The receipt of the one connector call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PublicationReceipt {
    /// Job.
    pub job: JobId,
    /// Draft.
    pub draft: DraftId,
    /// Connector.
    pub connector: ConnectorKind,
    /// Outcome.
    pub outcome: ReceiptOutcome,
    /// When.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub recorded_at: Timestamp,
}

/// What reading back found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case", deny_unknown_fields)]
pub enum VerificationOutcome {
    /// The post exists with the approved content.
    Verified {
        /// Platform post id.
        post: PostId,
    },
    /// No post was found for the idempotency key.
    Missing,
    /// A post exists but its content differs from the approved version.
    Mismatch {
        /// Platform post id.
        post: PostId,
    },
}

/// The durable verification record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Verification {
    /// Job.
    pub job: JobId,
    /// Draft.
    pub draft: DraftId,
    /// Outcome.
    pub outcome: VerificationOutcome,
    /// When.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub checked_at: Timestamp,
}

/// The publication record of one approved draft, kept by the publish and verify stages: the
/// exact content, the claim, and — once they exist — the receipt and the verification.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Publication {
    /// Job.
    pub job: JobId,
    /// Draft.
    pub draft: DraftId,
    /// Platform.
    pub platform: Platform,
    /// The published text (the approved version).
    pub body: String,
    /// The approved content hash.
    pub content_hash: String,
    /// The claim written before the connector call.
    pub claim: PublicationClaim,
    /// The receipt of the one connector call, once recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<PublicationReceipt>,
    /// The read-back verification, once recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<Verification>,
    /// A thread's posts as they are made, in order (empty for a single post, whose call is the
    /// claim's and receipt's alone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 25))]
    pub thread: Vec<ThreadPost>,
}

/// One post of a thread being published: its text, its own idempotency key, whether its call
/// was begun, and what the platform said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ThreadPost {
    /// Its text.
    #[schemars(length(min = 1, max = 5000))]
    pub body: String,
    /// Its own key: the publication's, with its position (`…/1` for the first).
    #[schemars(length(min = 1, max = 300))]
    pub idempotency_key: String,
    /// Whether a call to make it was begun: one begun without a receipt may have posted, and
    /// is read back before it is made.
    #[serde(default)]
    pub begun: bool,
    /// What the platform said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<ReceiptOutcome>,
}

impl Publication {
    /// The idempotency key of the post that stands for the publication: a thread's first
    /// post's (where readers reply, like and share), otherwise the claim's.
    pub fn lead_key(&self) -> &str {
        self.thread.first().map_or(&self.claim.idempotency_key, |p| &p.idempotency_key)
    }

    /// The platform post id, when the receipt is applied and read-back verified it.
    pub fn verified_post(&self) -> Option<&PostId> {
        let applied = matches!(self.receipt.as_ref().map(|r| &r.outcome), Some(ReceiptOutcome::Applied { .. }));
        match self.verification.as_ref().map(|v| &v.outcome) {
            Some(VerificationOutcome::Verified { post }) if applied => Some(post),
            _ => None,
        }
    }

    /// The provenance of this publication as evidence: live only when it went to a real
    /// platform (any connector but the sandbox) and read-back verified it; a sandbox post, or
    /// one not verified, is mock.
    pub fn provenance(&self) -> crate::tool::Provenance {
        match self.verified_post() {
            Some(_) if self.claim.connector != ConnectorKind::Sandbox => crate::tool::Provenance::Live,
            _ => crate::tool::Provenance::Mock,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Provenance;

    fn publication(connector: ConnectorKind, verified: bool) -> Publication {
        let (job, draft): (JobId, DraftId) = ("job-1".parse().expect("job"), "draft-1".parse().expect("draft"));
        let post: PostId = "post-1".parse().expect("post");
        let at = chrono::Utc::now();
        Publication {
            thread: Vec::new(),
            job: job.clone(),
            draft: draft.clone(),
            platform: Platform::Linkedin,
            body: "A post.".into(),
            content_hash: "h".into(),
            claim: PublicationClaim {
                job: job.clone(),
                draft: draft.clone(),
                content_hash: "h".into(),
                platform: Platform::Linkedin,
                connector,
                idempotency_key: "k".into(),
                claimed_at: at,
            },
            receipt: Some(PublicationReceipt {
                job: job.clone(),
                draft: draft.clone(),
                connector,
                outcome: ReceiptOutcome::Applied { post: post.clone(), url: None, record: None },
                recorded_at: at,
            }),
            verification: verified.then_some(Verification {
                job,
                draft,
                outcome: VerificationOutcome::Verified { post },
                checked_at: at,
            }),
        }
    }

    #[test]
    fn a_publication_is_live_evidence_only_when_verified_on_a_real_platform() {
        assert_eq!(publication(ConnectorKind::Webhook, true).provenance(), Provenance::Live);
        assert_eq!(publication(ConnectorKind::Webhook, false).provenance(), Provenance::Mock);
        assert_eq!(publication(ConnectorKind::Sandbox, true).provenance(), Provenance::Mock);
    }
}
