//! The adversarial corpus: crafted sources and drafts, each with the outcome it must have, run
//! through the real entry points.
//!
//! The cases live in `shared/pipeline/tests/adversarial/corpus.toml`, with the world they are
//! checked in: a workspace configuration, jobs whose stored analyses hold evidence moments,
//! publications, and grounded-search results (`web-*`) of jobs, stored in a real SQLite store under two workspaces (`corpus`, where every draft
//! is checked, and `elsewhere`, whose records are foreign to it).
//!
//! - A job of the world with `cues` has a source: its moments are spans of the source's speech
//!   (they may cross cues) and policy reads each where it was said.
//! - A case with `format` is a source (`json`, `srt` or `webvtt` bytes in `text`, with a
//!   `title` for transcripts). It is parsed by [`crate::formats::parse`] and validated as
//!   ingest validates it ([`SourceInput::validate`], which marks instruction-like spans);
//!   `expect = ["flagged"]` names the parts that must be flagged, exactly, in `parts`
//!   (`"title"`, `"segment 1"`, `"frame 0"`, `"segments 2-3"` for a span across cues,
//!   counted from 0).
//! - A case with `body` is a draft on `platform` (default `linkedin`) of `job` (default
//!   `job-talk`) with `provenance` (default `live`), whose one claim cites `cites`. Its evidence
//!   is read from the store by the policy step's own reader, and [`check`] runs every rule with
//!   the connector of the draft's channel; `expect` is the exact set of rules that must fire.
//!   The connector boundary ([`harmonia_connectors::admit`]) is asked too: `connector =
//!   "refused"` when it must refuse the post.
//! - `expect = ["pass"]`: nothing may be flagged or fire. `kind = "control"` cases are benign
//!   and must pass; every other kind names what must be caught.
//!
//! To add a case, append a `[[case]]` with a new `name`, its `kind` (`source`,
//! `draft_instruction`, `grounding`, `link`, `evidence`, `provenance` or `control`), its inputs
//! and `expect`; add a moment or a publication to the world when it needs new evidence. A case
//! the checks miss is a gap to fix in the check, never a case to weaken.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::Utc;
use harmonia_contracts::domain::{
    Analysis, Angle, AngleKind, Claim, ConnectorKind, Draft, Moment, Platform, Publication, ResearchEvidence,
    SourceInput, SourcePart, WorkspaceConfig,
};
use harmonia_contracts::event::Pass;
use harmonia_contracts::ids::{EvidenceId, JobId, PostId, WorkspaceId};
use harmonia_contracts::tool::Provenance;
use harmonia_store::{Store, create_if_absent, encode};
use harmonia_store_sqlite::SqliteStore;
use serde::Deserialize;
use serde_json::json;

use super::{Evidence, PolicyInput, check, evidence};
use crate::formats::{Format, parse};
use crate::records::{ANALYSES, AnalysisRecord, PUBLICATIONS, RESEARCH, doc_id, research_id};
use harmonia_connectors::{Outgoing, admit};

const CORPUS: &str = include_str!("../../tests/adversarial/corpus.toml");

/// The workspace every draft is checked in.
const HOME: &str = "corpus";

/// The job a draft belongs to unless its case names another.
const DEFAULT_JOB: &str = "job-talk";

/// What a case must be caught as (or, for a control, that it passes).
const PASS: &str = "pass";
const FLAGGED: &str = "flagged";
/// The outcome token of a post the connector boundary refuses.
const REFUSED: &str = "connector refused";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Corpus {
    /// The workspace configuration (TOML), as an operator writes it.
    workspace: String,
    job: Vec<StoredJob>,
    publication: Vec<StoredPublication>,
    /// Accepted grounded-search results, as the draft step persists them.
    research: Vec<StoredResearch>,
    case: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredResearch {
    workspace: WorkspaceId,
    job: JobId,
    uri: String,
    supported: Vec<String>,
    provenance: Provenance,
    /// The id cases cite: the one [`ResearchEvidence::id_for`] derives from `uri` and
    /// `supported` (checked when the world is built).
    id: EvidenceId,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredJob {
    workspace: WorkspaceId,
    id: JobId,
    provenance: Provenance,
    moments: Vec<StoredMoment>,
    /// The source's cues, when the job has one: its moments are then spans of its speech,
    /// read where they were said (each cue lasts two seconds; one speaker).
    #[serde(default)]
    cues: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredMoment {
    id: EvidenceId,
    quote: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredPublication {
    workspace: WorkspaceId,
    post: PostId,
    body: String,
    /// Applied and read back; otherwise only applied.
    verified: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Source,
    DraftInstruction,
    Grounding,
    Link,
    Evidence,
    Provenance,
    Control,
}

impl Kind {
    /// Its name in the corpus file.
    fn as_str(self) -> &'static str {
        match self {
            Self::Source => "source",
            Self::DraftInstruction => "draft_instruction",
            Self::Grounding => "grounding",
            Self::Link => "link",
            Self::Evidence => "evidence",
            Self::Provenance => "provenance",
            Self::Control => "control",
        }
    }
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum SourceFormat {
    Json,
    Srt,
    Webvtt,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Admission {
    #[default]
    Admitted,
    Refused,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    kind: Kind,
    expect: Vec<String>,
    // A source.
    format: Option<SourceFormat>,
    title: Option<String>,
    text: Option<String>,
    #[serde(default)]
    parts: Vec<String>,
    // A draft.
    body: Option<String>,
    #[serde(default)]
    cites: Vec<EvidenceId>,
    platform: Option<Platform>,
    job: Option<JobId>,
    provenance: Option<Provenance>,
    #[serde(default)]
    connector: Admission,
}

impl Case {
    /// What the case must end as: the flagged parts of a source, or the rules a draft breaks
    /// (and the connector's refusal).
    fn expected(&self) -> BTreeSet<String> {
        if self.expect.iter().any(|e| e == PASS) {
            return BTreeSet::new();
        }
        let mut out: BTreeSet<String> = if self.format.is_some() {
            self.parts.iter().cloned().collect()
        } else {
            self.expect.iter().cloned().collect()
        };
        if self.connector == Admission::Refused {
            out.insert(REFUSED.to_owned());
        }
        out
    }

    /// A case whose shape the harness cannot read is a broken corpus, not a missed case.
    fn check_shape(&self) {
        let name = &self.name;
        let pass = self.expect.iter().any(|e| e == PASS);
        assert!(!self.expect.is_empty(), "{name}: `expect` is empty");
        assert!(!pass || self.expect.len() == 1, "{name}: `pass` stands alone");
        assert_eq!(self.kind == Kind::Control, pass, "{name}: controls, and only controls, expect `pass`");
        match (&self.format, &self.body) {
            (Some(format), None) => {
                assert!(matches!(self.kind, Kind::Source | Kind::Control), "{name}: a source is a source or a control");
                assert!(self.text.is_some(), "{name}: a source needs `text`");
                assert_eq!(
                    matches!(format, SourceFormat::Json),
                    self.title.is_none(),
                    "{name}: a transcript needs a `title`; a JSON source carries its own"
                );
                assert_eq!(self.connector, Admission::Admitted, "{name}: a source reaches no connector");
                assert!(pass || self.expect == [FLAGGED], "{name}: a source expects `flagged` or `pass`");
                assert_eq!(pass, self.parts.is_empty(), "{name}: a flagged source names its `parts`, a control none");
            }
            (None, Some(_)) => {
                assert!(self.kind != Kind::Source, "{name}: a draft is not of kind `source`");
                let unknown: Vec<&String> = self.expect.iter().filter(|e| *e != PASS && !is_rule(e)).collect();
                assert!(unknown.is_empty(), "{name}: not rule codes: {unknown:?}");
            }
            _ => panic!("{name}: a case is a source (`format`) or a draft (`body`), exactly one"),
        }
    }
}

/// Whether `code` is a policy rule's code.
fn is_rule(code: &str) -> bool {
    use strum::IntoEnumIterator;
    harmonia_contracts::domain::PolicyRule::iter().any(|r| <&str>::from(r) == code)
}

/// The store every draft case reads its evidence from, with the world of the corpus in it.
async fn world(corpus: &Corpus) -> (harmonia_testkit::TempDir, SqliteStore) {
    let dir = harmonia_testkit::temp_dir();
    let store = SqliteStore::open(dir.path().join("corpus.sqlite")).expect("open the store");
    for job in &corpus.job {
        let source = (!job.cues.is_empty()).then(|| source_of(&job.cues));
        let speech = source.as_ref().map(harmonia_contracts::domain::Source::speech);
        let moments: Vec<Moment> = job
            .moments
            .iter()
            .zip(0u64..)
            .map(|(m, n)| {
                let (start_ms, end_ms) = match &speech {
                    Some(speech) => {
                        let span = speech
                            .find(&m.quote)
                            .unwrap_or_else(|| panic!("{}: the source never says {:?}", job.id, m.quote));
                        (span.start_ms, span.end_ms)
                    }
                    None => (n * 5000, n * 5000 + 4000),
                };
                Moment { evidence_id: m.id.clone(), quote: m.quote.clone(), start_ms, end_ms }
            })
            .collect();
        let angle = Angle {
            kind: AngleKind::Source,
            title: "The source".into(),
            rationale: "What the talk says.".into(),
            evidence: moments.iter().map(|m| m.evidence_id.clone()).collect(),
            facts: Vec::new(),
        };
        let analysis = Analysis { moments, angles: vec![angle], provenance: job.provenance };
        let record = match &source {
            Some(source) => AnalysisRecord::new(job.id.clone(), analysis, source),
            None => AnalysisRecord { job: job.id.clone(), analysis, said: Vec::new(), flagged: Vec::new() },
        };
        let data = encode(&record).expect("encode an analysis");
        create_if_absent(&store, &job.workspace, ANALYSES, &doc_id(&job.id), data).await.expect("store an analysis");
    }
    for (p, n) in corpus.publication.iter().zip(1..) {
        let (post, at) = (p.post.as_str(), "2026-11-02T14:00:00Z");
        let draft = format!("draft-published-{n}");
        let mut publication = json!({
            "job": "job-published", "draft": draft, "platform": "bluesky", "body": p.body, "content_hash": "h",
            "claim": {"job": "job-published", "draft": draft, "content_hash": "h", "platform": "bluesky",
                      "connector": "sandbox", "idempotency_key": post, "claimed_at": at},
            "receipt": {"job": "job-published", "draft": draft, "connector": "sandbox",
                        "outcome": {"outcome": "applied", "post": post}, "recorded_at": at}});
        if p.verified {
            publication["verification"] = json!({"job": "job-published", "draft": draft,
                "outcome": {"outcome": "verified", "post": post}, "checked_at": at});
        }
        let publication: Publication = serde_json::from_value(publication).expect("a publication");
        let data = encode(&publication).expect("encode a publication");
        create_if_absent(&store, &p.workspace, PUBLICATIONS, &doc_id(&publication.draft), data)
            .await
            .expect("store a publication");
    }
    for r in &corpus.research {
        assert_eq!(r.id, ResearchEvidence::id_for(&r.uri, &r.supported), "the id of the research result {}", r.uri);
        let result = ResearchEvidence {
            evidence_id: r.id.clone(),
            job: r.job.clone(),
            role: harmonia_contracts::Role::Noni,
            query: "night buses".into(),
            uri: r.uri.clone(),
            title: "A page".into(),
            supported: r.supported.clone(),
            provenance: r.provenance,
            retrieved_at: Utc::now(),
        };
        let data = encode(&result).expect("encode a research result");
        create_if_absent(&store, &r.workspace, RESEARCH, &research_id(&r.job, &r.id), data)
            .await
            .expect("store a research result");
    }
    (dir, store)
}

/// The evidence `draft` of `job` cites, read as the policy step reads it: the job's stored
/// analysis, then the one evidence reader; and the source's flagged texts the analysis keeps.
/// Every case reads through here, so a change of the reader's signature is a change of this
/// function only.
async fn evidence_of(
    store: &dyn Store,
    workspace: &WorkspaceId,
    job: &JobId,
    draft: &Draft,
) -> (HashMap<EvidenceId, Evidence>, Vec<crate::records::FlaggedText>) {
    let analysis: AnalysisRecord = store
        .get(workspace, ANALYSES, &doc_id(job))
        .await
        .expect("read the analysis")
        .unwrap_or_else(|| panic!("the corpus stores no analysis of {job}"))
        .decode()
        .expect("an analysis record");
    let cites = draft.claims.iter().flat_map(|c| &c.evidence);
    let evidence = evidence::load(store, workspace, &analysis, cites, Utc::now()).await.expect("load the evidence");
    (evidence, analysis.flagged)
}

fn part_name(part: SourcePart) -> String {
    match part {
        SourcePart::Title => "title".to_owned(),
        SourcePart::Segment { index } => format!("segment {index}"),
        SourcePart::Frame { index } => format!("frame {index}"),
        SourcePart::Segments { first, last } => format!("segments {first}-{last}"),
    }
}

/// A source of one speaker saying `cues`, two seconds each, validated as ingest validates it.
fn source_of(cues: &[String]) -> harmonia_contracts::domain::Source {
    let segments: Vec<serde_json::Value> = cues
        .iter()
        .zip(0u64..)
        .map(|(text, n)| json!({"start_ms": n * 2000, "end_ms": n * 2000 + 2000, "text": text}))
        .collect();
    let input: SourceInput =
        serde_json::from_value(json!({"title": "A talk", "language": "en", "segments": segments})).expect("a source");
    input.validate("src-corpus".parse().expect("id"), HOME.parse().expect("id"), Utc::now()).expect("a valid source")
}

/// The parts of a source that ingest flags (or why it refused the source).
fn ingest(case: &Case) -> BTreeSet<String> {
    let (Some(format), Some(text)) = (case.format, &case.text) else { unreachable!("checked by check_shape") };
    let format = match format {
        SourceFormat::Json => Format::Json,
        SourceFormat::Srt => Format::Srt,
        SourceFormat::Webvtt => Format::WebVtt,
    };
    let validated = parse(text.as_bytes(), format, case.title.as_deref().unwrap_or_default(), "en").and_then(|input| {
        SourceInput::validate(input, "src-corpus".parse().expect("id"), HOME.parse().expect("id"), Utc::now())
    });
    match validated {
        Ok(source) => source.untrusted.iter().map(|span| part_name(span.part)).collect(),
        Err(e) => BTreeSet::from([format!("source refused ({})", e.code.as_str())]),
    }
}

/// The rules a draft breaks, and whether the connector boundary refuses it.
async fn publish(case: &Case, config: &WorkspaceConfig, store: &dyn Store) -> BTreeSet<String> {
    let home: WorkspaceId = HOME.parse().expect("id");
    let job = case.job.clone().unwrap_or_else(|| DEFAULT_JOB.parse().expect("id"));
    let platform = case.platform.unwrap_or(Platform::Linkedin);
    let provenance = case.provenance.unwrap_or(Provenance::Live);
    let body = case.body.clone().unwrap_or_default();
    let claims = vec![Claim { text: "The claim.".into(), evidence: case.cites.clone() }];
    let draft = Draft {
        thread: Vec::new(),
        id: "draft-corpus".parse().expect("id"),
        job: job.clone(),
        item: "item-corpus".parse().expect("id"),
        pass: Pass::FIRST,
        round: Default::default(),
        platform,
        content_hash: Draft::compute_hash(platform, &body, &claims, &[]),
        body,
        claims,
        provenance,
        created_at: Utc::now(),
    };
    let connector = config
        .channels
        .iter()
        .find(|c| c.platform == platform)
        .map(|c| c.connector)
        .unwrap_or_else(|| panic!("{}: the corpus workspace has no {} channel", case.name, platform.as_str()));
    let (evidence, flagged) = evidence_of(store, &home, &job, &draft).await;
    let result = check(&PolicyInput {
        now: Utc::now(),
        workspace: config,
        draft: &draft,
        review: None,
        evidence: &evidence,
        flagged: &flagged,
        connector,
        account: false,
    });
    let mut found: BTreeSet<String> = result.violations.iter().map(|v| <&str>::from(v.rule).to_owned()).collect();
    // What the publish step hands the connector: mock when the draft or anything it cites is.
    let rests_on_mock = draft
        .claims
        .iter()
        .flat_map(|c| &c.evidence)
        .any(|e| evidence.get(e).is_some_and(|e| e.provenance == Provenance::Mock));
    let outgoing = Outgoing {
        idempotency_key: "corpus".into(),
        platform,
        body: draft.body.clone(),
        provenance: if provenance == Provenance::Mock || rests_on_mock { Provenance::Mock } else { Provenance::Live },
        reply: None,
    };
    if connector != ConnectorKind::Sandbox && admit(connector, &outgoing).is_err() {
        found.insert(REFUSED.to_owned());
    }
    found
}

fn listed(set: &BTreeSet<String>) -> String {
    if set.is_empty() { "nothing".to_owned() } else { set.iter().cloned().collect::<Vec<_>>().join(", ") }
}

#[tokio::test]
#[allow(clippy::print_stdout, reason = "the detection rate is what this test reports")]
async fn every_adversarial_case_is_caught_and_no_control_is() {
    let corpus: Corpus = toml::from_str(CORPUS).expect("the corpus parses");
    let config = WorkspaceConfig::from_toml(&corpus.workspace).expect("the corpus workspace is valid");
    let mut names = BTreeSet::new();
    for case in &corpus.case {
        assert!(names.insert(case.name.as_str()), "the case name {} is used twice", case.name);
        case.check_shape();
    }
    let (_dir, store) = world(&corpus).await;

    let mut per_kind: BTreeMap<Kind, usize> = BTreeMap::new();
    let (mut detected, mut adversarial, mut controls, mut false_alarms) = (0, 0, 0, 0);
    let mut wrong = Vec::new();
    for case in &corpus.case {
        *per_kind.entry(case.kind).or_default() += 1;
        let found = if case.format.is_some() { ingest(case) } else { publish(case, &config, &store).await };
        let expected = case.expected();
        let right = found == expected;
        if case.kind == Kind::Control {
            controls += 1;
            false_alarms += usize::from(!right);
        } else {
            adversarial += 1;
            detected += usize::from(right);
        }
        if !right {
            wrong.push(format!("{}: expected {}, found {}", case.name, listed(&expected), listed(&found)));
        }
    }
    println!(
        "adversarial corpus: {detected}/{adversarial} cases detected ({:.1}%); {false_alarms} of {controls} controls flagged",
        100.0 * detected as f64 / adversarial.max(1) as f64
    );
    println!(
        "cases per kind: {}",
        per_kind.iter().map(|(k, n)| format!("{} {n}", k.as_str())).collect::<Vec<_>>().join(", ")
    );
    assert!(wrong.is_empty(), "{} case(s) ended otherwise than expected:\n{}", wrong.len(), wrong.join("\n"));
    assert!(adversarial >= 60 && controls >= 20, "the corpus keeps at least 60 cases and 20 controls");
    for kind in [Kind::Source, Kind::DraftInstruction, Kind::Grounding, Kind::Link, Kind::Evidence, Kind::Provenance] {
        assert!(per_kind.get(&kind).is_some_and(|n| *n >= 5), "at least five cases of kind {}", kind.as_str());
    }
}
