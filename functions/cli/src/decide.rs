//! The operator's decisions: `approve`, `reject`, `request-changes`, `edit` and `retry`. Each
//! names the exact version it is about (by default the one awaiting a decision). On the
//! embedded default it goes through the same functions as the operator API (so the limits are
//! the same), as the operator `cli` at this machine, and then follows the job until it needs
//! the operator again. With `--cloud` it is a request to the operator API, attributed to the
//! operator whose credential sent it; the deployment's functions carry the job on.

use std::path::Path;

use harmonia_client::api::{DecisionBody, DecisionKind, EditBody};
use harmonia_contracts::domain::{Approval, ApprovalSubject, Decision, Job};
use harmonia_contracts::ids::{JobId, OperatorId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use harmonia_pipeline::detail::version_prefix as short;
use harmonia_pipeline::gates::rounds::{self, ChangesRequest, EditRequest, MAX_EDIT_CHARS};
use harmonia_pipeline::gates::{self, Recorded};
use serde_json::json;

use crate::app::{Backend, Output, follow};

/// Who decides from the CLI: the person at this machine, acting as the operator.
fn cli_operator() -> Result<OperatorId, Error> {
    "cli".parse()
}

/// Who a deployment recorded the decision as, for the sentence that reports it ("" locally,
/// where the person at this machine is the operator `cli`).
fn attribution(backend: &Backend, decision: &Approval) -> String {
    match backend {
        Backend::Local(_) => String::new(),
        Backend::Cloud(_) => format!(", recorded as operator {}", decision.operator),
    }
}

/// The version a decision names: the one given, or the one awaiting the decision (after
/// checking the job waits for this decision, so a decision at the wrong gate says so). An
/// approval or rejection already stored is named again when `repeat` is that decision (the
/// command run again after its answer was lost): the gate answers it as already recorded.
async fn version(
    backend: &Backend,
    ws: &WorkspaceId,
    job: &JobId,
    subject: ApprovalSubject,
    given: Option<String>,
    repeat: Option<&Decision>,
) -> Result<String, Error> {
    match backend {
        Backend::Local(l) => {
            let current = gates::job(&l.env, ws, job).await?;
            if let Err(e) = gates::require_waiting(&current, subject) {
                let earlier = match repeat {
                    Some(d) => gates::decisions::earlier(&l.env, ws, &current, subject, d, given.as_deref()).await?,
                    None => None,
                };
                return earlier.map(|a| a.subject_hash).ok_or(e);
            }
            match given {
                Some(v) => Ok(v),
                None => gates::current_version(&l.env, ws, &current, subject).await,
            }
        }
        // The deployment answers a repeated decision on the version it names.
        Backend::Cloud(_) if repeat.is_some() && given.is_some() => Ok(given.unwrap_or_default()),
        Backend::Cloud(client) => {
            let current = client.job(job).await?;
            gates::require_waiting(&current.job, subject)?;
            given.or(current.awaiting_version).ok_or_else(|| {
                Error::new(Code::NotFound, "The job has no version awaiting a decision; name one with --version.")
            })
        }
    }
}

/// A deployment's answer to a decision, as the gates answer it on the embedded default.
pub(crate) fn answered<T>(value: T, unfinished: Option<harmonia_contracts::ErrorBody>) -> Recorded<T> {
    Recorded { value, unfinished: unfinished.map(|b| Error::new(b.code, b.message)), earlier: false }
}

/// Tell the operator that a recorded decision left `what` undone, and the command that carries
/// it on. The decision stands, so this is a warning, on standard error; the command still
/// succeeds.
pub(crate) fn warn(out: &Output, what: &str, e: &Error, next: &str) {
    out.warn(&format!(
        "Recorded, but {what}: {} Run `{next}` to carry it on.",
        e.message.trim_end_matches('.').to_owned() + "."
    ));
}

/// After a decision: follow the job locally until it needs the operator again (printing only
/// what happened since), or report where a deployed job stands now. The decision is stored:
/// whatever goes wrong from here is a warning naming the next command, never a failure of
/// this one.
async fn after(
    backend: &Backend,
    out: &Output,
    ws: &WorkspaceId,
    job: &JobId,
    recorded: Recorded<Approval>,
    answered: Option<Job>,
    again: &str,
) -> Result<(), Error> {
    let decision = &recorded.value;
    // A repeat reports what happens from now on; what the decision led to before was reported
    // then (and is in `harmonia show`).
    let since = if recorded.earlier { chrono::Utc::now() } else { decision.decided_at };
    let unfinished = recorded.unfinished.as_ref().map(Error::body);
    if let Some(e) = &recorded.unfinished {
        let next = match backend {
            Backend::Local(_) => format!("harmonia status {job}"),
            Backend::Cloud(_) => again.to_owned(),
        };
        warn(out, "what it releases did not start", e, &next);
    }
    let now = match backend {
        // Nothing moves until the next command: where the job stands is as it was stored.
        Backend::Local(l) if recorded.unfinished.is_some() => gates::job(&l.env, ws, job).await.ok(),
        Backend::Local(l) => match follow(l, out, ws, job, false, Some(since)).await {
            Ok(now) => Some(now),
            Err(e) => {
                let failed = gates::job(&l.env, ws, job).await.ok().filter(|j| j.failure.is_some());
                match &failed {
                    // A step after the decision failed the job.
                    Some(_) => warn(
                        out,
                        "a step after it failed the job",
                        &e,
                        &format!("harmonia show {job}` to see why, or `harmonia retry {job}"),
                    ),
                    // Following stopped (interrupted, a dependency down): the job carries on
                    // with the next command.
                    None => warn(out, "following the job here stopped", &e, &format!("harmonia status {job}")),
                }
                failed.or(gates::job(&l.env, ws, job).await.ok())
            }
        },
        // The deployment's functions carry the job on; the API answered with where it stands.
        Backend::Cloud(_) => answered,
    };
    out.value(&json!({ "decision": decision, "job": now, "earlier": recorded.earlier, "unfinished": unfinished }));
    Ok(())
}

/// `harmonia approve|reject JOB strategy|draft`.
pub(crate) async fn decide(
    backend: &Backend,
    out: &Output,
    ws: &WorkspaceId,
    job: &str,
    subject: ApprovalSubject,
    reject: Option<String>,
    given: Option<String>,
) -> Result<(), Error> {
    backend.resume(ws).await?;
    let id: JobId = job.parse()?;
    let decision = match &reject {
        // The reason's limits are checked by `gates::decide`, for the CLI and the API alike.
        Some(reason) => Decision::Rejected { reason: reason.clone() },
        None => Decision::Approved,
    };
    let version = version(backend, ws, &id, subject, given, Some(&decision)).await?;
    // What carries a deployed decision's released work on: the same approval again (a
    // rejection releases nothing).
    let again = match reject {
        None => format!("harmonia --cloud approve {job} {} --version {version}", subject.as_str()),
        Some(_) => format!("harmonia --cloud status {job}"),
    };
    let (recorded, answered) = match backend {
        Backend::Local(l) => {
            let request = gates::DecisionRequest {
                job: id.clone(),
                operator: cli_operator()?,
                subject,
                decision,
                subject_hash: version,
                trace: None,
            };
            (gates::decide(&l.env, ws, request).await?, None)
        }
        Backend::Cloud(client) => {
            let kind = if reject.is_some() { DecisionKind::Reject } else { DecisionKind::Approve };
            let body = DecisionBody { subject, decision: kind, version, reason: reject, feedback: None };
            let reply = client.decide(&id, &body).await?;
            (answered(reply.approval, reply.unfinished), Some(reply.job))
        }
    };
    let approval = &recorded.value;
    let (what, was) = match &approval.decision {
        Decision::Rejected { .. } => ("Rejected", "rejected"),
        _ => ("Approved", "approved"),
    };
    out.say(&match recorded.earlier {
        false => format!(
            "{what} the {} version {}{}.",
            subject.as_str(),
            short(&approval.subject_hash),
            attribution(backend, approval)
        ),
        true => format!(
            "The {} version {} was already {was} at {} by operator {}; nothing new was stored.",
            subject.as_str(),
            short(&approval.subject_hash),
            approval.decided_at.format("%Y-%m-%d %H:%M:%S UTC"),
            approval.operator
        ),
    });
    after(backend, out, ws, &id, recorded, answered, &again).await
}

/// `harmonia request-changes JOB strategy|draft --feedback TEXT`.
pub(crate) async fn request_changes(
    backend: &Backend,
    out: &Output,
    ws: &WorkspaceId,
    job: &str,
    subject: ApprovalSubject,
    feedback: String,
    given: Option<String>,
) -> Result<(), Error> {
    backend.resume(ws).await?;
    let id: JobId = job.parse()?;
    let version = version(backend, ws, &id, subject, given, None).await?;
    let again = format!("harmonia --cloud status {job}");
    let (recorded, answered) = match backend {
        Backend::Local(l) => {
            let request = ChangesRequest {
                job: id.clone(),
                operator: cli_operator()?,
                subject,
                subject_hash: version,
                feedback,
                trace: None,
            };
            (rounds::request_changes(&l.env, ws, request).await?, None)
        }
        Backend::Cloud(client) => {
            let body = DecisionBody {
                subject,
                decision: DecisionKind::RequestChanges,
                version,
                reason: None,
                feedback: Some(feedback),
            };
            let reply = client.decide(&id, &body).await?;
            (answered(reply.approval, reply.unfinished), Some(reply.job))
        }
    };
    let decision = &recorded.value;
    let round = decision.round.next().map_or(0, |r| r.get());
    let maker = if subject == ApprovalSubject::Strategy {
        "Ryan writes the next strategy"
    } else {
        "Noni writes the next draft, and Dara and policy check it"
    };
    out.say(&format!(
        "Asked for changes to the {} version {}{} (operator round {round} of 3). {maker}; your feedback is context for the role, not an instruction it must follow.",
        subject.as_str(),
        short(&decision.subject_hash),
        attribution(backend, decision),
    ));
    after(backend, out, ws, &id, recorded, answered, &again).await
}

/// `harmonia edit JOB --file TEXT_FILE [--post N]`: the file's text, byte for byte, becomes the
/// next draft version (or, with `--post`, post N of its thread) once policy passes it.
pub(crate) async fn edit(
    backend: &Backend,
    out: &Output,
    ws: &WorkspaceId,
    job: &str,
    file: &Path,
    given: Option<String>,
    post: Option<u32>,
) -> Result<(), Error> {
    backend.resume(ws).await?;
    let id: JobId = job.parse()?;
    let bytes =
        std::fs::read(file).map_err(|e| Error::new(Code::NotFound, "The draft file cannot be read.").with_cause(e))?;
    // A bound before decoding, so a huge file is refused without being held as text twice.
    if bytes.len() > MAX_EDIT_CHARS * 4 {
        return Err(Error::new(Code::InvalidRequest, "An edited draft is 1 to 5,000 characters of text."));
    }
    let body = String::from_utf8(bytes)
        .map_err(|e| Error::new(Code::InvalidRequest, "The draft file is not UTF-8 text.").with_cause(e))?;
    let version = version(backend, ws, &id, ApprovalSubject::Draft, given, None).await?;
    let edited = match backend {
        Backend::Local(l) => {
            let request = EditRequest { job: id.clone(), operator: cli_operator()?, subject_hash: version, body, post };
            rounds::edit(&l.env, ws, request).await?
        }
        Backend::Cloud(client) => {
            let reply = client.edit(&id, &EditBody { version, body, post }).await?;
            rounds::Edited { approval: reply.approval, draft: reply.draft }
        }
    };
    let round = edited.draft.round.get();
    let which = match post {
        Some(n) => format!(", post {n} of the thread's {} rewritten", edited.draft.thread.len()),
        None => String::new(),
    };
    out.say(&format!(
        "Stored your draft as version {}{which} (operator round {round} of 3); every policy rule passed. Approve it with `harmonia approve {id} draft --version {}`.",
        short(&edited.draft.content_hash),
        short(&edited.draft.content_hash),
    ));
    out.value(&json!({ "decision": edited.approval, "draft": edited.draft }));
    Ok(())
}

/// `harmonia retry JOB`: run the step that failed the job again, as the operator at this
/// machine, then (on the embedded default) follow the job until it needs the operator again.
pub(crate) async fn retry(backend: &Backend, out: &Output, ws: &WorkspaceId, job: &str) -> Result<(), Error> {
    backend.resume(ws).await?;
    let id: JobId = job.parse()?;
    let (answered, record) = match backend {
        Backend::Local(l) => harmonia_pipeline::retry::retry(&l.env, ws, &id, cli_operator()?).await?,
        Backend::Cloud(client) => {
            let reply = client.retry(&id).await?;
            (reply.job, reply.retry)
        }
    };
    let by = record.failure.role.map(|r| format!(" by {r}")).unwrap_or_default();
    out.say(&format!(
        "Retrying the {} step of job {id}, which had failed with {}{by}.",
        record.failure.stage, record.failure.code
    ));
    let now = match backend {
        Backend::Local(l) => follow(l, out, ws, &id, false, Some(record.at)).await?,
        Backend::Cloud(_) => answered,
    };
    out.value(&json!({ "retry": record, "job": now }));
    Ok(())
}
