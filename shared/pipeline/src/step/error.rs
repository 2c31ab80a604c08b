//! Why a step did not complete.

use harmonia_agents::runtime;
use harmonia_contracts::{AgentContractError, Code, Role};

/// Why a step did not complete.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Transient (store, bus or a dependency unavailable, a concurrent change): nack and let
    /// the bus retry. The error says which (its code) and why (its cause), for the handler's
    /// log line.
    #[error("transient failure ({}); will be retried", .0.code)]
    Retry(harmonia_contracts::Error),
    /// The job fails with this typed failure (recorded; the message is acked).
    #[error("job failed: {code}")]
    Fail {
        /// Role, when a specialist's contract failed.
        role: Option<Role>,
        /// Stable code.
        code: Code,
        /// Schema location, for schema violations.
        schema_path: Option<String>,
    },
    /// The job is no longer in a state this event applies to (e.g. rejected meanwhile): ack.
    #[error("event no longer applies")]
    Stale,
    /// A dependency the step needs is failing (a model failure): the job records the stall
    /// and keeps its status, and the message is retried like [`Error::Retry`].
    #[error("stalled on {code}; will be retried")]
    Stalled {
        /// Role whose model call failed, if any.
        role: Option<Role>,
        /// The model failure's code.
        code: Code,
    },
}

impl Error {
    /// A failure with a code and no role.
    pub fn fail(code: Code) -> Self {
        Error::Fail { role: None, code, schema_path: None }
    }

    /// The typed error a caller outside the step machinery reports (a gate that published
    /// what a decision released, say): the transient error itself, or the code's sentence.
    pub fn into_error(self) -> harmonia_contracts::Error {
        match self {
            Error::Retry(e) => e,
            Error::Fail { code, .. } | Error::Stalled { code, .. } => harmonia_contracts::Error::from_code(code),
            Error::Stale => harmonia_contracts::Error::from_code(Code::InvalidTransition),
        }
    }
}

/// Whether a code is a fault of the local disk: the step waits for space (or a writable
/// mount) and is tried again, as with an outage, instead of failing the job for it.
fn disk_fault(code: Code) -> bool {
    matches!(code, Code::StorageFull | Code::StorageReadOnly)
}

impl From<harmonia_store::Error> for Error {
    fn from(e: harmonia_store::Error) -> Self {
        match e {
            // The job moved on (rejected, failed) in a way this step cannot follow.
            harmonia_store::Error::Aborted(Code::InvalidTransition) => Error::Stale,
            e if e.retryable() || disk_fault(e.code()) => Error::Retry(e.into()),
            e => Error::fail(e.code()),
        }
    }
}

/// A typed error from the library code a step calls: transient codes are retried, the rest
/// fail the job with their code.
impl From<harmonia_contracts::Error> for Error {
    fn from(e: harmonia_contracts::Error) -> Self {
        if e.code.default_retryable() || disk_fault(e.code) { Error::Retry(e) } else { Error::fail(e.code) }
    }
}

impl From<AgentContractError> for Error {
    fn from(e: AgentContractError) -> Self {
        // A model failure (an outage, throttling, refused credentials, an unknown model) or a
        // spent token budget never fails the job: the step is retried, and once the model is
        // back (or the budget raised) the job carries on.
        if e.code.is_stall() {
            Error::Stalled { role: Some(e.role), code: e.code }
        } else {
            Error::Fail { role: Some(e.role), code: e.code, schema_path: e.schema_path }
        }
    }
}

impl From<runtime::Error> for Error {
    fn from(e: runtime::Error) -> Self {
        match e {
            runtime::Error::Contract(c) => c.into(),
            runtime::Error::Store(s) => s.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_aborted_transition_is_stale_and_other_store_errors_keep_their_meaning() {
        assert!(matches!(Error::from(harmonia_store::Error::Aborted(Code::InvalidTransition)), Error::Stale));
        assert!(
            matches!(Error::from(harmonia_store::Error::Conflict), Error::Retry(e) if e.code == Code::TransactionConflict)
        );
        assert!(matches!(Error::from(harmonia_store::Error::NotFound), Error::Fail { code: Code::NotFound, .. }));
    }

    #[test]
    fn only_disk_faults_are_kept_and_only_those_met_since_are_read() {
        let faults = crate::step::Faults::default();
        let before = std::time::Instant::now();
        faults.note(&harmonia_contracts::Error::from_code(Code::StoreUnavailable));
        assert_eq!(faults.since(before), None, "an outage is not a disk fault");
        faults.note(&harmonia_contracts::Error::from_code(Code::StorageFull));
        assert_eq!(faults.since(before).map(|e| e.code), Some(Code::StorageFull));
        assert_eq!(faults.since(std::time::Instant::now()), None, "met before the follower began");
    }

    #[test]
    fn a_full_or_read_only_disk_is_waited_out_and_never_fails_the_job() {
        use harmonia_contracts::storage::{Fault, Unwritable};
        let full = harmonia_store::Error::Storage(Fault::Full { dir: "/data".into(), free: Some(0) });
        assert!(matches!(Error::from(full), Error::Retry(e) if e.code == Code::StorageFull));
        let ro = Fault::ReadOnly { path: "/data".into(), why: Unwritable::ReadOnlyMount };
        assert!(
            matches!(Error::from(harmonia_contracts::Error::from(ro)), Error::Retry(e) if e.code == Code::StorageReadOnly)
        );
    }
}
