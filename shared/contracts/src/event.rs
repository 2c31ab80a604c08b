//! The stage-event envelope carried on every topic, and the topics themselves.
//!
//! Each payload type names its topic with [`EventPayload::TOPIC`]; a [`StageEvent<P>`] can only
//! be decoded from bytes whose `topic` field equals `P::TOPIC`, so a payload is bound to its
//! topic. The idempotency key is derived from (workspace, job, topic, pass): a re-published
//! event carries the same key, so consumers can recognise a redelivery.

use std::fmt;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};

use crate::domain::Platform;
use crate::error::{Code, Error};
use crate::ids::{DraftId, EventId, JobId, PlanItemId, PostId, SourceId, WorkspaceId};
use crate::trace::TraceParent;

/// The current envelope schema version.
pub const SCHEMA_VERSION: u32 = 1;

/// The pipeline's stages, declared once. Each line is a stage and how it is reached: `entry`
/// (by the upload of a source), `gate` (by people, through the operator API) or `pushed` (by
/// the events it consumes), with `model` when the stage calls a model. `with_stages!(m)` hands
/// the list to the macro `m`; the [`Stage`] enum is made from it here, and the deployable
/// functions and the stage types of the pipeline's registry from the same list there, so a
/// stage is named in one place. (Each topic names the stage that emits it with its payload,
/// in `payloads!` below.)
#[macro_export]
macro_rules! with_stages {
    ($then:ident) => {
        $then! {
            /// Accept and validate a source; create the job.
            Ingest: entry;
            /// Harmonia routes to Nimi.
            Analyze: pushed model;
            /// Harmonia routes to Ryan.
            Strategize: pushed model;
            /// Human decisions through the operator API.
            Operator: gate;
            /// Harmonia routes to Temi; code selects one item.
            Plan: pushed model;
            /// Noni writes (pass 1) or revises (pass 2).
            Draft: pushed model;
            /// Dara reviews.
            Review: pushed model;
            /// Deterministic policy checks.
            Policy: pushed;
            /// Claim, call the connector once, record the receipt.
            Publish: pushed;
            /// Read back and record the verification.
            Verify: pushed;
        }
    };
}

macro_rules! stage_enum {
    ($( $(#[$doc:meta])* $name:ident : $how:ident $($model:ident)?; )*) => {
        /// A pipeline stage: one Cloud Run function each.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
        #[serde(rename_all = "snake_case")]
        #[derive(strum::IntoStaticStr, strum::Display, strum::EnumIter)]
        #[strum(serialize_all = "snake_case")]
        pub enum Stage {
            $( $(#[$doc])* $name, )*
        }

        impl Stage {
            /// Every stage in pipeline order.
            pub const ALL: [Stage; [$(Stage::$name),*].len()] = [$(Stage::$name),*];
        }
    };
}

with_stages!(stage_enum);

impl Stage {
    /// The snake_case name (the same as its serde name).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The writing pass: 1 for the first draft, 2 for the single revision. There is no third.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Pass(u8);

impl Pass {
    /// The first pass.
    pub const FIRST: Pass = Pass(1);
    /// The single revision.
    pub const REVISION: Pass = Pass(2);

    /// The pass number.
    pub fn get(self) -> u8 {
        self.0
    }
}

impl TryFrom<u8> for Pass {
    type Error = Error;
    fn try_from(n: u8) -> Result<Self, Error> {
        match n {
            1 | 2 => Ok(Pass(n)),
            _ => Err(Error::new(Code::OutOfRange, "pass must be 1 or 2")),
        }
    }
}

impl<'de> Deserialize<'de> for Pass {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Pass::try_from(u8::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

fixed_schema!(Pass, {
    "type": "integer", "minimum": 1, "maximum": 2,
    "description": "1 for the first draft, 2 for the single revision."
});

/// The operator round a version belongs to, at the gate ahead of it: 0 for the pipeline's own
/// version, then one more each time an operator asks for changes or edits (at most
/// [`Round::MAX`] per gate). Strategy rounds and draft rounds are counted apart: events up to
/// the strategy decision carry the strategy's round, events from `strategy.approved` on carry
/// the draft's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Round(u8);

impl Round {
    /// The pipeline's own version, before any operator round.
    pub const ORIGINAL: Round = Round(0);
    /// The last operator round a gate allows.
    pub const MAX: Round = Round(3);

    /// The round number.
    pub fn get(self) -> u8 {
        self.0
    }

    /// Whether this is the pipeline's own version (round 0), which ids and keys leave unmarked.
    pub fn is_original(&self) -> bool {
        self.0 == 0
    }

    /// The round after this one, or `None` when this is the last a gate allows.
    pub fn next(self) -> Option<Round> {
        (self < Self::MAX).then_some(Round(self.0 + 1))
    }

    /// The round before this one, or `None` for the original.
    pub fn previous(self) -> Option<Round> {
        self.0.checked_sub(1).map(Round)
    }

    /// Every round a gate can have, the original first.
    pub fn all() -> impl Iterator<Item = Round> {
        (0..=Self::MAX.0).map(Round)
    }
}

impl TryFrom<u8> for Round {
    type Error = Error;
    fn try_from(n: u8) -> Result<Self, Error> {
        if n <= Self::MAX.0 { Ok(Round(n)) } else { Err(Error::new(Code::OutOfRange, "round must be 0 to 3")) }
    }
}

impl<'de> Deserialize<'de> for Round {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Round::try_from(u8::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

fixed_schema!(Round, {
    "type": "integer", "minimum": 0, "maximum": 3,
    "description": "0 for the pipeline's own version, 1 to 3 for operator rounds at a gate."
});

/// Key that identifies one logical event across re-publications:
/// `<workspace>:<job>:<topic>:<pass>`, with `:r<round>` appended in an operator round.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct IdempotencyKey(#[schemars(length(min = 1, max = 400))] String);

impl IdempotencyKey {
    /// The key of the event `topic` for (workspace, job, round, pass).
    pub fn for_event(workspace: &WorkspaceId, job: &JobId, topic: &str, round: Round, pass: Pass) -> Self {
        match round.is_original() {
            true => Self(format!("{workspace}:{job}:{topic}:{}", pass.get())),
            false => Self(format!("{workspace}:{job}:{topic}:{}:r{}", pass.get(), round.get())),
        }
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A payload type bound to its topic.
pub trait EventPayload: Serialize + DeserializeOwned + JsonSchema + Clone + fmt::Debug + Send + Sync + 'static {
    /// The topic this payload travels on.
    const TOPIC: &'static str;
    /// The stage that emits it.
    const STAGE: Stage;
}

/// The envelope of every stage event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, bound = "P: EventPayload")]
pub struct StageEvent<P: EventPayload> {
    /// Envelope schema version (currently 1).
    #[schemars(range(min = 1, max = 1))]
    pub schema_version: u32,
    /// Unique per publication.
    pub event_id: EventId,
    /// The topic (always `P::TOPIC`).
    pub topic: String,
    /// Tenant.
    pub workspace: WorkspaceId,
    /// Job.
    pub job: JobId,
    /// The stage that emitted the event.
    pub stage: Stage,
    /// Writing pass this event belongs to.
    pub pass: Pass,
    /// Operator round this event belongs to (absent for the original, round 0).
    #[serde(default, skip_serializing_if = "Round::is_original")]
    pub round: Round,
    /// Same for every re-publication of this logical event.
    pub idempotency_key: IdempotencyKey,
    /// W3C trace context of the emitting span.
    pub traceparent: TraceParent,
    /// When it was emitted.
    #[serde(with = "crate::time::rfc3339")]
    #[schemars(with = "crate::domain::Timestamp")]
    pub emitted_at: DateTime<Utc>,
    /// The topic's payload.
    pub payload: P,
}

impl<P: EventPayload> StageEvent<P> {
    /// A new event for `payload`, continuing `trace` with a child span.
    pub fn new(workspace: WorkspaceId, job: JobId, pass: Pass, trace: &TraceParent, payload: P) -> Self {
        Self::in_round(workspace, job, Round::ORIGINAL, pass, trace, payload)
    }

    /// Like [`StageEvent::new`], in an operator round.
    pub fn in_round(
        workspace: WorkspaceId,
        job: JobId,
        round: Round,
        pass: Pass,
        trace: &TraceParent,
        payload: P,
    ) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            event_id: EventId::generate(),
            topic: P::TOPIC.to_owned(),
            idempotency_key: IdempotencyKey::for_event(&workspace, &job, P::TOPIC, round, pass),
            workspace,
            job,
            stage: P::STAGE,
            pass,
            round,
            traceparent: trace.child(),
            emitted_at: Utc::now(),
            payload,
        }
    }

    /// Encode as JSON bytes. Fails (`internal`) only if the payload's serialisation does.
    pub fn encode(&self) -> Result<Vec<u8>, Error> {
        serde_json::to_vec(self).map_err(|_| Error::from_code(Code::Internal))
    }

    /// Decode bytes published on `P::TOPIC`; anything else is `event_undecodable`.
    pub fn decode(bytes: &[u8]) -> Result<Self, Error> {
        let event: Self = serde_json::from_slice(bytes).map_err(|_| Error::from_code(Code::EventUndecodable))?;
        let key = IdempotencyKey::for_event(&event.workspace, &event.job, P::TOPIC, event.round, event.pass);
        if event.schema_version != SCHEMA_VERSION
            || event.topic != P::TOPIC
            || event.stage != P::STAGE
            || event.idempotency_key != key
        {
            return Err(Error::from_code(Code::EventUndecodable));
        }
        Ok(event)
    }
}

macro_rules! payloads {
    ($( $(#[$doc:meta])* $name:ident => $topic:literal, $stage:ident { $( $(#[$fdoc:meta])* $field:ident : $ty:ty ),* $(,)? } )*) => {
        $(
            $(#[$doc])*
            #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
            #[serde(deny_unknown_fields)]
            pub struct $name { $( $(#[$fdoc])* pub $field: $ty, )* }

            impl EventPayload for $name {
                const TOPIC: &'static str = $topic;
                const STAGE: Stage = Stage::$stage;
            }
        )*

        /// Every topic, with the stage that emits it.
        pub const TOPICS: &[(&str, Stage)] = &[$(($topic, Stage::$stage)),*];

        /// JSON Schemas of every event envelope, by topic.
        pub(crate) fn event_schemas(generator: &mut schemars::SchemaGenerator) -> Vec<(String, schemars::Schema)> {
            vec![$( (format!("event.{}", $topic), generator.root_schema_for::<StageEvent<$name>>()) ),*]
        }
    };
}

payloads! {
    /// A source was validated and stored; the job exists.
    SourceIngested => "source.ingested", Ingest { /** The stored source. */ source: SourceId }
    /// Nimi's analysis was accepted and stored.
    AnalysisCompleted => "analysis.completed", Analyze { /** Number of evidence moments. */ moments: u32 }
    /// Ryan's strategy is stored and waits for a human decision.
    StrategyProposed => "strategy.proposed", Strategize { /** Content hash of the strategy. */ strategy_hash: String }
    /// An operator approved the strategy version named by its hash.
    StrategyApproved => "strategy.approved", Operator { /** Content hash of the approved strategy. */ strategy_hash: String }
    /// Temi's plan is stored and one item is selected for writing.
    ItemSelected => "plan.item_selected", Plan { /** The selected item. */ item: PlanItemId }
    /// Noni's draft for a pass is stored.
    DraftWritten => "draft.written", Draft { /** The draft. */ draft: DraftId, /** Its content hash. */ content_hash: String }
    /// Dara asked for the single revision.
    RevisionRequested => "review.revise", Review { /** The reviewed draft. */ draft: DraftId }
    /// Dara passed the draft.
    ReviewPassed => "review.passed", Review { /** The passed draft. */ draft: DraftId }
    /// Deterministic policy passed; the draft waits for a human decision.
    PolicyPassed => "policy.passed", Policy { /** The draft. */ draft: DraftId, /** Its content hash. */ content_hash: String }
    /// An operator approved the exact draft version.
    DraftApproved => "draft.approved", Operator { /** The draft. */ draft: DraftId, /** The approved content hash. */ content_hash: String }
    /// The connector was called; the receipt is stored (applied or unknown).
    PostPublished => "post.published", Publish { /** The draft. */ draft: DraftId, /** The platform. */ platform: Platform }
    /// Read-back verification is stored.
    PostVerified => "post.verified", Verify { /** The draft. */ draft: DraftId, /** The platform's post id. */ post: PostId }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> StageEvent<SourceIngested> {
        StageEvent::new(
            "ws-a".parse().expect("ws"),
            "job-1".parse().expect("job"),
            Pass::FIRST,
            &TraceParent::new_root(),
            SourceIngested { source: "src-1".parse().expect("src") },
        )
    }

    #[test]
    fn round_trips_and_binds_payload_to_topic() {
        let event = sample();
        let bytes = event.encode().expect("encode");
        assert_eq!(StageEvent::<SourceIngested>::decode(&bytes).ok(), Some(event.clone()));
        assert_eq!(event.idempotency_key.as_str(), "ws-a:job-1:source.ingested:1");
        // The same bytes cannot be read as another topic's event.
        let err = StageEvent::<AnalysisCompleted>::decode(&bytes).expect_err("wrong topic");
        assert_eq!(err.code, Code::EventUndecodable);
    }

    /// A payload whose serialisation fails, as a custom `Serialize` may.
    #[derive(Clone, Debug, Deserialize, JsonSchema)]
    struct Unserialisable;

    impl Serialize for Unserialisable {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("refused"))
        }
    }

    impl EventPayload for Unserialisable {
        const TOPIC: &'static str = "test.unserialisable";
        const STAGE: Stage = Stage::Analyze;
    }

    #[test]
    fn an_event_that_cannot_be_encoded_is_an_error_not_empty_bytes() {
        let event = StageEvent::new(
            "ws-a".parse().expect("ws"),
            "job-1".parse().expect("job"),
            Pass::FIRST,
            &TraceParent::new_root(),
            Unserialisable,
        );
        assert_eq!(event.encode().expect_err("refused").code, Code::Internal);
    }

    #[test]
    fn rejects_tampered_envelopes() {
        let mut value = serde_json::to_value(sample()).expect("json");
        value["topic"] = "analysis.completed".into();
        let bytes = serde_json::to_vec(&value).expect("bytes");
        assert!(StageEvent::<SourceIngested>::decode(&bytes).is_err());

        let mut value = serde_json::to_value(sample()).expect("json");
        value["extra"] = 1.into();
        assert!(StageEvent::<SourceIngested>::decode(&serde_json::to_vec(&value).expect("b")).is_err());

        let mut value = serde_json::to_value(sample()).expect("json");
        value["pass"] = 3.into();
        assert!(StageEvent::<SourceIngested>::decode(&serde_json::to_vec(&value).expect("b")).is_err());

        assert!(StageEvent::<SourceIngested>::decode(b"\xff\x00garbage").is_err());

        // A round beyond the last, or one that disagrees with the idempotency key, is refused.
        let mut value = serde_json::to_value(sample()).expect("json");
        value["round"] = 4.into();
        assert!(StageEvent::<SourceIngested>::decode(&serde_json::to_vec(&value).expect("b")).is_err());
        let mut value = serde_json::to_value(sample()).expect("json");
        value["round"] = 2.into();
        assert!(StageEvent::<SourceIngested>::decode(&serde_json::to_vec(&value).expect("b")).is_err());
    }

    #[test]
    fn an_operator_round_has_its_own_key_and_round_zero_keeps_the_original_shape() {
        let (ws, job): (WorkspaceId, JobId) = ("ws-a".parse().expect("ws"), "job-1".parse().expect("job"));
        let round = Round::ORIGINAL.next().and_then(Round::next).expect("round 2");
        let event = StageEvent::in_round(
            ws,
            job,
            round,
            Pass::FIRST,
            &TraceParent::new_root(),
            AnalysisCompleted { moments: 3 },
        );
        assert_eq!(event.idempotency_key.as_str(), "ws-a:job-1:analysis.completed:1:r2");
        let bytes = event.encode().expect("encode");
        assert_eq!(StageEvent::<AnalysisCompleted>::decode(&bytes).expect("decode").round, round);
        let original = serde_json::to_value(sample()).expect("json");
        assert!(original.get("round").is_none(), "round 0 is not written");
        assert_eq!(Round::MAX.next(), None);
        assert_eq!(Round::all().count(), 4);
    }

    #[test]
    fn topics_are_unique_and_valid_pubsub_names() {
        let mut names: Vec<_> = TOPICS.iter().map(|(t, _)| *t).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TOPICS.len());
        for t in names {
            assert!(t.len() >= 3 && t.chars().next().is_some_and(|c| c.is_ascii_lowercase()), "{t}");
            assert!(t.chars().all(|c| c.is_ascii_lowercase() || c == '.' || c == '_'), "{t}");
        }
    }
}

/// Inputs the fuzz targets found (`fuzz/fuzz_targets/`), kept as ordinary tests.
#[cfg(test)]
mod fuzz_regressions {
    use super::*;

    /// `stage_event`: `9999-12-31T23:59:59-01:00` is year 10000 in UTC. The event decoded, but
    /// its re-encoding (`+10000-01-01T00:59:59…Z`) did not decode: a time must be refused when
    /// it cannot be written back in the fixed-width form.
    #[test]
    fn an_event_emitted_after_year_9999_in_utc_is_undecodable() {
        let bytes = include_bytes!("../testdata/fuzz/stage-event-emitted-in-year-10000.json");
        assert_eq!(StageEvent::<SourceIngested>::decode(bytes).err().map(|e| e.code), Some(Code::EventUndecodable));
    }
}
