//! The operator's decisions: `approve`, `reject`, `request-changes` and `edit`. Each names the
//! exact version it is about (by default the one awaiting a decision), goes through the same
//! functions as the operator API (so the limits are the same), and then — on the embedded
//! default — follows the job until it needs the operator again.

use std::path::Path;

use harmonia_contracts::domain::{Approval, ApprovalSubject, Decision};
use harmonia_contracts::ids::{JobId, OperatorId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use harmonia_pipeline::detail::version_prefix as short;
use harmonia_pipeline::operator;
use harmonia_pipeline::rounds::{self, ChangesRequest, EditRequest, MAX_EDIT_CHARS};
use serde_json::json;

use crate::app::{Backend, Output, follow};

/// Who decides from the CLI: the person at this machine, acting as the operator.
fn cli_operator() -> Result<OperatorId, Error> {
    "cli".parse()
}

/// The version a decision names: the one given, or the one awaiting the decision (after
/// checking the job waits for this decision, so a decision at the wrong gate says so).
async fn version(
    backend: &Backend,
    ws: &WorkspaceId,
    job: &JobId,
    subject: ApprovalSubject,
    given: Option<String>,
) -> Result<String, Error> {
    let current = operator::job(backend.env(), ws, job).await?;
    operator::require_waiting(&current, subject)?;
    match given {
        Some(v) => Ok(v),
        None => operator::current_version(backend.env(), ws, &current, subject).await,
    }
}

/// After a decision: follow the job locally until it needs the operator again (printing only
/// what happened since), or report where a deployed job stands now.
async fn after(
    backend: &Backend,
    out: &Output,
    ws: &WorkspaceId,
    job: &JobId,
    decision: &Approval,
) -> Result<(), Error> {
    let since = Some(decision.decided_at);
    let now = match backend {
        Backend::Local(l) => match follow(l, out, ws, job, false, since).await {
            Ok(now) => Some(now),
            // The decision is recorded; a step after it failed the job, which the command
            // reports as its failure.
            Err(e) if operator::job(backend.env(), ws, job).await.is_ok_and(|j| j.failure.is_some()) => {
                return Err(Error::new(
                    e.code,
                    format!("The {} was {}. {}", decision.subject.as_str(), decision.decision.describe(), e.message),
                ));
            }
            // The decision is recorded: whatever else stopped the following, the command
            // succeeded, and the job carries on with the next command.
            Err(e) => {
                out.say(&format!(
                    "Recorded; the job continues: the {} was {}. Following it here stopped ({}); the next `harmonia` command carries it on (see `harmonia status {job}`).",
                    decision.subject.as_str(),
                    decision.decision.describe(),
                    e.message.trim_end_matches('.')
                ));
                operator::job(backend.env(), ws, job).await.ok()
            }
        },
        Backend::Cloud { .. } => Some(operator::job(backend.env(), ws, job).await?),
    };
    out.value(&json!({ "decision": decision, "job": now }));
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
    let version = version(backend, ws, &id, subject, given).await?;
    let decision = match reject {
        // The reason's limits are checked by `operator::decide`, for the CLI and the API alike.
        Some(reason) => Decision::Rejected { reason },
        None => Decision::Approved,
    };
    let request = operator::DecisionRequest {
        job: id.clone(),
        operator: cli_operator()?,
        subject,
        decision,
        subject_hash: version,
        trace: None,
    };
    let approval = operator::decide(backend.env(), ws, request).await?;
    let what = match &approval.decision {
        Decision::Rejected { .. } => "Rejected",
        _ => "Approved",
    };
    out.say(&format!("{what} the {} version {}.", subject.as_str(), short(&approval.subject_hash)));
    after(backend, out, ws, &id, &approval).await
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
    let version = version(backend, ws, &id, subject, given).await?;
    let request = ChangesRequest {
        job: id.clone(),
        operator: cli_operator()?,
        subject,
        subject_hash: version,
        feedback,
        trace: None,
    };
    let decision = rounds::request_changes(backend.env(), ws, request).await?;
    let round = decision.round.next().map_or(0, |r| r.get());
    let maker = if subject == ApprovalSubject::Strategy {
        "Ryan writes the next strategy"
    } else {
        "Noni writes the next draft, and Dara and policy check it"
    };
    out.say(&format!(
        "Asked for changes to the {} version {} (operator round {round} of 3). {maker}; your feedback is context for the role, not an instruction it must follow.",
        subject.as_str(),
        short(&decision.subject_hash),
    ));
    after(backend, out, ws, &id, &decision).await
}

/// `harmonia edit JOB --file TEXT_FILE`: the file's text, byte for byte, becomes the next
/// draft version once policy passes it.
pub(crate) async fn edit(
    backend: &Backend,
    out: &Output,
    ws: &WorkspaceId,
    job: &str,
    file: &Path,
    given: Option<String>,
) -> Result<(), Error> {
    backend.resume(ws).await?;
    let id: JobId = job.parse()?;
    let bytes = std::fs::read(file).map_err(|_| Error::new(Code::NotFound, "The draft file cannot be read."))?;
    // A bound before decoding, so a huge file is refused without being held as text twice.
    if bytes.len() > MAX_EDIT_CHARS * 4 {
        return Err(Error::new(Code::InvalidRequest, "An edited draft is 1 to 5,000 characters of text."));
    }
    let body =
        String::from_utf8(bytes).map_err(|_| Error::new(Code::InvalidRequest, "The draft file is not UTF-8 text."))?;
    let version = version(backend, ws, &id, ApprovalSubject::Draft, given).await?;
    let request = EditRequest { job: id.clone(), operator: cli_operator()?, subject_hash: version, body };
    let edited = rounds::edit(backend.env(), ws, request).await?;
    let round = edited.draft.round.get();
    out.say(&format!(
        "Stored your draft as version {} (operator round {round} of 3); every policy rule passed. Approve it with `harmonia approve {id} draft --version {}`.",
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
    let (_, record) = harmonia_pipeline::retry::retry(backend.env(), ws, &id, cli_operator()?).await?;
    let by = record.failure.role.map(|r| format!(" by {r}")).unwrap_or_default();
    out.say(&format!(
        "Retrying the {} step of job {id}, which had failed with {}{by}.",
        record.failure.stage, record.failure.code
    ));
    let now = match backend {
        Backend::Local(l) => follow(l, out, ws, &id, false, Some(record.at)).await?,
        Backend::Cloud { .. } => operator::job(backend.env(), ws, &id).await?,
    };
    out.value(&json!({ "retry": record, "job": now }));
    Ok(())
}
