//! Operator rounds: the decisions besides approve and reject. At a gate the operator may ask
//! for changes (the role makes the next version with the feedback as context) or, at the
//! draft gate, edit (the operator writes the next version; deterministic policy checks it at
//! once). Each is one round of that gate, numbered from 1; a gate allows [`Round::MAX`], and
//! asking for one more parks the job as `needs_human`.
//!
//! Feedback is context, never authority: it reaches Ryan or Noni in their input, their
//! authority checks still apply to what they write, and only the operator API's decision
//! records move a job. Every round is a durable, attributed record (who, when, which version,
//! what feedback) under [`round_decision_id`].

use chrono::Utc;
use harmonia_contracts::domain::{Approval, ApprovalSubject, Claim, Decision, Draft, Job, JobStatus, PolicyOutcome};
use harmonia_contracts::event::{AnalysisCompleted, ItemSelected, Pass, Round, StageEvent};
use harmonia_contracts::ids::{DocId, JobId, OperatorId, WorkspaceId};
use harmonia_contracts::tool::Provenance;
use harmonia_contracts::trace::TraceParent;
use harmonia_contracts::{Code, Error};
use harmonia_store::{Tx, encode, run_transaction};

use super::waiting::{checked_version, job, moved_meanwhile};
use crate::Env;
use crate::policy::{PolicyInput, check};
use crate::records::{
    ANALYSES, APPROVALS, AnalysisRecord, ApprovalRecord, DRAFTS, JOBS, MomentSaid, PLANS, POLICY_RESULTS,
    PendingMessage, PlanRecord, SOURCE_QUOTES, SourceQuote, doc_id, exhausted_id, round_decision_id,
    source_quote_evidence, source_quote_id,
};
use crate::steps::{current_draft_id, draft_id_of};

/// The longest feedback, in characters (the same for the CLI and the API).
pub const MAX_FEEDBACK_CHARS: usize = 2000;

/// The longest edited draft, in characters (a draft's schema limit; each platform's own limit
/// is a policy rule).
pub const MAX_EDIT_CHARS: usize = 5000;

/// A request for changes, as the operator API or the CLI receives it.
#[derive(Clone, Debug, PartialEq)]
pub struct ChangesRequest {
    /// The job.
    pub job: JobId,
    /// Who asks (from the credential).
    pub operator: OperatorId,
    /// Strategy or draft.
    pub subject: ApprovalSubject,
    /// The exact version the feedback is about (the whole hash or a prefix of 8 or more).
    pub subject_hash: String,
    /// What the operator wants changed: context for the role, never authority.
    pub feedback: String,
    /// Trace context of the request, if any.
    pub trace: Option<TraceParent>,
}

/// An operator-written draft, as the operator API or the CLI receives it.
#[derive(Clone, Debug, PartialEq)]
pub struct EditRequest {
    /// The job.
    pub job: JobId,
    /// Who writes (from the credential).
    pub operator: OperatorId,
    /// The exact draft version edited.
    pub subject_hash: String,
    /// The new text, exactly as it is to be posted: the whole post, or with `post` the text of
    /// that one post of a thread.
    pub body: String,
    /// For a thread: which of its posts `body` replaces (1 for the first); the others are kept
    /// as they are. A thread is edited one post at a time, a single post whole.
    pub post: Option<u32>,
}

/// Ask for changes to the strategy or draft awaiting a decision. Records the round, moves the
/// job to `strategy_changes_requested` or `draft_changes_requested`, and starts Ryan's next
/// version or a new writing cycle (at most two Noni→Dara passes) for that round.
///
/// Refuses feedback that is blank or longer than [`MAX_FEEDBACK_CHARS`] (`invalid_request`), a
/// job not waiting for this decision (`invalid_transition`), a version that is not the current
/// one (`stale_version`); a request beyond the gate's last round parks the job as
/// `needs_human` and answers `rounds_exhausted`.
pub async fn request_changes(
    env: &Env,
    workspace: &WorkspaceId,
    request: ChangesRequest,
) -> Result<super::Recorded<Approval>, Error> {
    let feedback = request.feedback.trim();
    if feedback.is_empty() || feedback.chars().count() > MAX_FEEDBACK_CHARS {
        return Err(Error::new(Code::InvalidRequest, "Feedback is 1 to 2,000 characters."));
    }
    let job = job(env, workspace, &request.job).await?;
    let (round, decided) =
        open_round(env, workspace, &job, request.subject, &request.subject_hash, &request.operator).await?;
    let approval = decided.decide(Decision::ChangesRequested { feedback: feedback.to_owned() });
    let span = tracing::info_span!(
        "decision",
        otel.name = %format_args!("decision {}", request.subject.as_str()),
        job = %job.id,
        decision = "changes_requested",
        round = round.get(),
    );
    let asked = super::waiting::decision_trace(env, workspace, &job, request.subject).await;
    let trace = crate::trace::origin(&span, asked.or(request.trace).as_ref());
    let (ws, id) = (workspace.clone(), job.id.clone());
    // The round re-enters the stage that makes the version: Ryan from the analysis, Noni from
    // the selected item, each reading this record for the feedback.
    let next = match request.subject {
        ApprovalSubject::Strategy => {
            let analysis: AnalysisRecord = stored(env, workspace, ANALYSES, &doc_id(&job.id)).await?;
            let moments = u32::try_from(analysis.analysis.moments.len()).unwrap_or(u32::MAX);
            let event = StageEvent::in_round(ws, id, round, Pass::FIRST, &trace, AnalysisCompleted { moments });
            span.in_scope(|| env.message(&event))
        }
        ApprovalSubject::Draft => {
            let plan: PlanRecord = stored(env, workspace, PLANS, &doc_id(&job.id)).await?;
            let event = StageEvent::in_round(ws, id, round, Pass::FIRST, &trace, ItemSelected { item: plan.selected });
            span.in_scope(|| env.message(&event))
        }
    }
    .map_err(|e| Error::from_code(Code::BusUnavailable).with_cause(e))?;
    let record = ApprovalRecord { approval: approval.clone(), next: vec![PendingMessage::from(&next)] };
    let moved = match request.subject {
        ApprovalSubject::Strategy => JobStatus::StrategyChangesRequested,
        ApprovalSubject::Draft => JobStatus::DraftChangesRequested,
    };
    record_round(env, workspace, &job, round, &record, moved, Vec::new()).await?;
    let followed = env.publish(&[next]).await.map_err(crate::step::Error::into_error);
    Ok(super::Recorded::after(approval, followed))
}

/// What an edit made: the decision record and the operator's draft now awaiting approval.
#[derive(Clone, Debug, PartialEq)]
pub struct Edited {
    /// The decision record.
    pub approval: Approval,
    /// The operator's draft, the version an approval must now name.
    pub draft: Draft,
}

/// Write the next draft version as the operator: the text is kept byte for byte, the previous
/// version's claims are kept where their text is still in it, each quotation that is an exact
/// span of the source's speech becomes a claim citing that span (`quoted_spans`), and
/// deterministic policy checks it at once. A version that passes awaits approval in its own round; one that does not is
/// refused (`policy_violation`, naming each broken rule) and nothing is stored.
pub async fn edit(env: &Env, workspace: &WorkspaceId, request: EditRequest) -> Result<Edited, Error> {
    if request.body.trim().is_empty() || request.body.chars().count() > MAX_EDIT_CHARS {
        return Err(Error::new(Code::InvalidRequest, "An edited draft is 1 to 5,000 characters of text."));
    }
    let job = job(env, workspace, &request.job).await?;
    let (round, decided) =
        open_round(env, workspace, &job, ApprovalSubject::Draft, &request.subject_hash, &request.operator).await?;
    let previous: Draft = stored(env, workspace, DRAFTS, &doc_id(current_draft_id(&job))).await?;
    let (body, thread) = edited_text(&previous.thread, request.body, request.post)?;
    let analysis: AnalysisRecord = stored(env, workspace, ANALYSES, &doc_id(&job.id)).await?;
    let source = crate::records::source(&*env.store, &*env.blobs, workspace, &job.source)
        .await?
        .ok_or_else(|| Error::from_code(Code::NotFound))?;
    let mut claims: Vec<Claim> =
        previous.claims.into_iter().filter(|c| body.contains(c.text.trim_end_matches('…'))).collect();
    let kept: Vec<_> = claims.iter().flat_map(|c| &c.evidence).cloned().collect();
    let mut evidence = crate::policy::evidence::load(&*env.store, workspace, &analysis, &kept, env.clock.now()).await?;
    let quoted = quoted_spans(&body, &source, &analysis, &evidence, &request.operator, &job.id);
    for q in &quoted {
        claims.push(q.claim.clone());
        if let Some(record) = &q.record {
            evidence.insert(
                record.moment.evidence_id.clone(),
                crate::policy::Evidence {
                    provenance: Provenance::Live,
                    text: record.moment.quote.clone(),
                    said: Some(record.said.clone()),
                    url: None,
                },
            );
        }
    }
    // The moments the new claims cite, read as policy reads them.
    let cites: Vec<_> =
        claims.iter().flat_map(|c| &c.evidence).filter(|e| !evidence.contains_key(*e)).cloned().collect();
    evidence.extend(crate::policy::evidence::load(&*env.store, workspace, &analysis, &cites, env.clock.now()).await?);
    let id = draft_id_of(&job.id, round, Pass::FIRST);
    let draft = Draft {
        content_hash: Draft::compute_hash(previous.platform, &body, &claims, &thread),
        thread,
        id: id.clone(),
        job: job.id.clone(),
        item: previous.item,
        pass: Pass::FIRST,
        round,
        platform: previous.platform,
        body,
        claims,
        provenance: Provenance::Operator,
        created_at: Utc::now(),
    };
    let config = crate::workspace::version_of_job(&*env.store, &job).await?.config;
    // An operator's text has no Dara review: policy's rules are what it must pass.
    let result = check(&PolicyInput {
        now: env.clock.now(),
        workspace: &config,
        draft: &draft,
        review: None,
        evidence: &evidence,
        flagged: &analysis.flagged,
        connector: env.reach.connector,
        account: crate::steps::policy::has_account(env, &config, &draft),
    });
    if result.outcome == PolicyOutcome::Blocked {
        let broken: Vec<String> =
            result.violations.iter().map(|v| format!("{} ({})", v.rule.as_str(), v.detail)).collect();
        return Err(Error::new(
            Code::PolicyViolation,
            format!(
                "The edited draft breaks {} policy rule(s): {}. Nothing was stored.",
                broken.len(),
                broken.join("; ")
            ),
        ));
    }
    let approval = decided.decide(Decision::Edited { draft: id.clone(), content_hash: draft.content_hash.clone() });
    let record = ApprovalRecord { approval: approval.clone(), next: Vec::new() };
    let mut writes = vec![(DRAFTS, doc_id(&id), encode(&draft)?), (POLICY_RESULTS, doc_id(&id), encode(&result)?)];
    for record in quoted.iter().filter_map(|q| q.record.as_ref()) {
        writes.push((SOURCE_QUOTES, source_quote_id(&job.id, &record.moment.evidence_id), encode(record)?));
    }
    record_round(env, workspace, &job, round, &record, JobStatus::AwaitingDraftApproval, writes).await?;
    Ok(Edited { approval, draft })
}

/// The edited draft's text and thread: a single post's text is `body`; a thread's is its posts
/// with post `post` (from 1) replaced by `body`, joined. A thread edited whole, a single post
/// edited as one of a thread, or a post the thread does not have is refused (`invalid_request`).
fn edited_text(thread: &[String], body: String, post: Option<u32>) -> Result<(String, Vec<String>), Error> {
    let n = thread.len();
    match post {
        None if n == 0 => Ok((body, Vec::new())),
        None => Err(Error::new(
            Code::InvalidRequest,
            format!("This draft is a thread of {n} posts: edit one post at a time, naming it (1 to {n})."),
        )),
        Some(_) if n == 0 => {
            Err(Error::new(Code::InvalidRequest, "This draft is a single post: edit it whole, naming no post."))
        }
        Some(at) => {
            let index =
                usize::try_from(at).ok().and_then(|at| at.checked_sub(1)).filter(|i| *i < n).ok_or_else(|| {
                    Error::new(Code::InvalidRequest, format!("This thread has posts 1 to {n}; there is no post {at}."))
                })?;
            let mut posts = thread.to_vec();
            posts[index] = body;
            Ok((Draft::thread_body(&posts), posts))
        }
    }
}

/// A quotation of an edit that the source says, as the claim citing it, and the record of the
/// span when no moment of the job holds it.
struct Quoted {
    claim: Claim,
    record: Option<SourceQuote>,
}

/// The quotations of an edit's `body` that no evidence of the claims it keeps holds, each as a
/// claim citing what says it: a moment of the analysis that holds it, or else the span of the
/// source's speech it is (a new `q-*` piece of evidence, in the source's own characters with
/// the cues it touches). A quotation the source does not say, or says only in a flagged span,
/// is left to policy's `quotes_exact`, which refuses it.
fn quoted_spans(
    body: &str,
    source: &harmonia_contracts::domain::Source,
    analysis: &AnalysisRecord,
    kept: &std::collections::HashMap<harmonia_contracts::ids::EvidenceId, crate::policy::Evidence>,
    operator: &OperatorId,
    job: &JobId,
) -> Vec<Quoted> {
    use harmonia_contracts::domain::{Moment, locate};
    let speech = source.speech();
    let mut out: Vec<Quoted> = Vec::new();
    for q in harmonia_grounding::quotations(body) {
        let text = q.to_owned();
        let held = |t: &str| !locate(t, q).is_empty();
        if kept.values().any(|e| held(&e.text))
            || out.iter().any(|o| o.claim.text == text)
            || text.chars().count() > MAX_CLAIM_CHARS
        {
            continue;
        }
        if let Some(m) = analysis.analysis.moments.iter().find(|m| held(&m.quote)) {
            out.push(Quoted { claim: Claim { text, evidence: vec![m.evidence_id.clone()] }, record: None });
            continue;
        }
        let clean = |s: &harmonia_contracts::domain::speech::Span| {
            !(s.first_segment..=s.last_segment).any(|n| source.segment_flagged(n))
        };
        let Some(span) = speech.spans(q).find(clean) else { continue };
        let said_text = speech.text(&span).to_owned();
        let evidence_id = source_quote_evidence(span.start_ms, &said_text);
        let Some(said) = MomentSaid::of(&speech, source, &evidence_id, &said_text, span.start_ms, span.end_ms) else {
            continue;
        };
        let moment =
            Moment { evidence_id: evidence_id.clone(), quote: said_text, start_ms: span.start_ms, end_ms: span.end_ms };
        let record = SourceQuote { job: job.clone(), moment, said, quoted_by: operator.clone(), quoted_at: Utc::now() };
        out.push(Quoted { claim: Claim { text, evidence: vec![evidence_id] }, record: Some(record) });
    }
    out
}

/// The longest claim, in characters (the schema's bound): a longer quotation is not made one.
const MAX_CLAIM_CHARS: usize = 500;

/// A decision on one exact version, by one operator, waiting for what it decides.
struct Pending {
    job: JobId,
    subject: ApprovalSubject,
    version: String,
    round: Round,
    operator: OperatorId,
}

impl Pending {
    /// The decision record of `decision`, taken now.
    fn decide(&self, decision: Decision) -> Approval {
        Approval {
            job: self.job.clone(),
            subject: self.subject,
            subject_hash: self.version.clone(),
            round: self.round,
            decision,
            operator: self.operator.clone(),
            decided_at: Utc::now(),
        }
    }
}

/// The round a request for changes or an edit opens, with the decision it will record; past
/// the gate's last round the job is parked (`rounds_exhausted`). Checks that the job waits for
/// this decision and that `given` names its current version.
async fn open_round(
    env: &Env,
    workspace: &WorkspaceId,
    job: &Job,
    subject: ApprovalSubject,
    given: &str,
    operator: &OperatorId,
) -> Result<(Round, Pending), Error> {
    let version = checked_version(env, workspace, job, subject, given).await?;
    let pending = Pending { job: job.id.clone(), subject, version, round: job.round, operator: operator.clone() };
    match job.round.next() {
        Some(round) => Ok((round, pending)),
        None => Err(exhausted(env, workspace, job, pending.decide(Decision::RoundsExhausted)).await),
    }
}

/// Park the job as `needs_human` with a record of the request that went past the last round;
/// the error that says so (or the one that kept it from being recorded).
async fn exhausted(env: &Env, workspace: &WorkspaceId, job: &Job, approval: Approval) -> Error {
    let subject = approval.subject;
    let record = match encode(&ApprovalRecord { approval, next: Vec::new() }) {
        Ok(record) => record,
        Err(e) => return Error::from(e),
    };
    let (store, id, record) = (&*env.store, &job.id, &record);
    let parked = run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
        let mut tx = Tx::begin(store, workspace);
        let mut current: Job = tx.get(JOBS, &doc_id(id)).await?.ok_or(harmonia_store::Error::NotFound)?.decode()?;
        if current.status != super::waiting::waiting_status(subject) {
            return Err(harmonia_store::Error::Aborted(Code::InvalidTransition));
        }
        current
            .advance(JobStatus::NeedsHuman, Utc::now())
            .map_err(|_| harmonia_store::Error::Aborted(Code::InvalidTransition))?;
        tx.put(JOBS, &doc_id(id), encode(&current)?);
        tx.get(APPROVALS, &exhausted_id(id, subject)).await?;
        tx.put(APPROVALS, &exhausted_id(id, subject), record.clone());
        tx.commit().await
    })
    .await;
    if let Err(e) = parked {
        return moved_meanwhile(e);
    }
    Error::new(
        Code::RoundsExhausted,
        format!(
            "The {} already had {} operator rounds, the most one decision allows, so the job is now needs_human. \
             Its versions and decisions stay on record; submit the source again to start over.",
            subject.as_str(),
            Round::MAX.get()
        ),
    )
}

/// Store the round's decision record (and `writes`) and move the job to `status` in `round`,
/// in one transaction that fails if the job stopped waiting or the round was taken meanwhile.
async fn record_round(
    env: &Env,
    workspace: &WorkspaceId,
    job: &Job,
    round: Round,
    record: &ApprovalRecord,
    status: JobStatus,
    writes: Vec<(harmonia_store::Collection, DocId, serde_json::Map<String, serde_json::Value>)>,
) -> Result<(), Error> {
    let subject = record.approval.subject;
    let waiting = super::waiting::waiting_status(subject);
    let data = &encode(record)?;
    let (store, id, writes) = (&*env.store, &job.id, &writes);
    run_transaction(harmonia_store::DEFAULT_ATTEMPTS, || async move {
        let mut tx = Tx::begin(store, workspace);
        let decision_id = round_decision_id(id, subject, round);
        if tx.get(APPROVALS, &decision_id).await?.is_some() {
            return Err(harmonia_store::Error::Aborted(Code::InvalidTransition));
        }
        let mut current: Job = tx.get(JOBS, &doc_id(id)).await?.ok_or(harmonia_store::Error::NotFound)?.decode()?;
        if current.status != waiting || current.round.next() != Some(round) {
            return Err(harmonia_store::Error::Aborted(Code::InvalidTransition));
        }
        if current.status == status {
            current.updated_at = Utc::now();
        } else {
            current.advance(status, Utc::now()).map_err(|_| harmonia_store::Error::Aborted(Code::InvalidTransition))?;
        }
        current.round = round;
        current.pass = Pass::FIRST;
        tx.put(JOBS, &doc_id(id), encode(&current)?);
        tx.put(APPROVALS, &decision_id, data.clone());
        for (collection, doc, value) in writes {
            tx.get(*collection, doc).await?;
            tx.put(*collection, doc, value.clone());
        }
        tx.commit().await
    })
    .await
    .map_err(moved_meanwhile)
}

/// A record the round needs; a missing one is `not_found`.
async fn stored<T: serde::de::DeserializeOwned>(
    env: &Env,
    workspace: &WorkspaceId,
    collection: harmonia_store::Collection,
    id: &DocId,
) -> Result<T, Error> {
    env.store
        .get(workspace, collection, id)
        .await
        .map_err(Error::from)?
        .ok_or_else(|| Error::from_code(Code::NotFound))?
        .decode()
        .map_err(Error::from)
}
