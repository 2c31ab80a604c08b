use harmonia_contracts::Code;

/// A storage failure. `Display` never includes document data or backend response bodies.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The document does not exist in this workspace.
    #[error("document not found")]
    NotFound,
    /// A create found the document already there.
    #[error("document already exists")]
    AlreadyExists,
    /// A write's expected version did not match.
    #[error("document changed since it was read")]
    PreconditionFailed,
    /// A concurrent commit won; re-read and retry.
    #[error("transaction conflict")]
    Conflict,
    /// The request itself is invalid (bad field path, limit, size).
    #[error("invalid storage request: {0}")]
    Invalid(&'static str),
    /// The backend failed or could not be reached; `kind` is a short status name.
    #[error("store unavailable ({kind})")]
    Unavailable {
        /// A short, safe status name (e.g. `UNAVAILABLE`, `sqlite_busy`).
        kind: String,
    },
    /// The disk under the data file is full or cannot be written (the embedded default).
    #[error(transparent)]
    Storage(#[from] harmonia_contracts::storage::Fault),
    /// Stored data could not be decoded.
    #[error("stored data is corrupt")]
    Corrupt,
    /// The data file is not a Harmonia store, or is damaged: empty, not SQLite, another
    /// application's, written by a newer version, or reported corrupt by SQLite. It names the
    /// file (the operator's own path, never its content).
    #[error("{path} is not a usable Harmonia data file: {reason}")]
    NotAStore {
        /// The file.
        path: String,
        /// Why, in words.
        reason: &'static str,
    },
    /// A transaction gave up on purpose, for the reason its code names (e.g.
    /// `invalid_transition`: the job moved on); [`run_transaction`](crate::run_transaction)
    /// does not retry it.
    #[error("transaction aborted ({0})")]
    Aborted(Code),
    /// An immutable document already exists under that id with other content.
    #[error("a different immutable document exists under that id")]
    ImmutableConflict,
}

impl Error {
    /// The stable code.
    pub fn code(&self) -> Code {
        match self {
            Error::NotFound => Code::NotFound,
            Error::AlreadyExists => Code::AlreadyExists,
            Error::PreconditionFailed => Code::PreconditionFailed,
            Error::Conflict => Code::TransactionConflict,
            Error::Invalid(_) => Code::InvalidRequest,
            Error::Unavailable { .. } => Code::StoreUnavailable,
            Error::Storage(fault) => fault.code(),
            Error::Corrupt | Error::NotAStore { .. } => Code::StoreCorrupt,
            Error::Aborted(code) => *code,
            Error::ImmutableConflict => Code::ImmutableConflict,
        }
    }

    /// Whether retrying can help.
    pub fn retryable(&self) -> bool {
        self.code().default_retryable()
    }
}

impl From<Error> for harmonia_contracts::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Invalid(why) => harmonia_contracts::Error::new(Code::InvalidRequest, why),
            Error::NotAStore { path, reason } => harmonia_contracts::Error::new(
                Code::StoreCorrupt,
                format!(
                    "{path} is not a usable Harmonia data file: {reason}. Nothing was changed; check --data-dir, or put a backup in its place with `harmonia restore FILE` (this file is then kept beside it)"
                ),
            ),
            Error::Storage(fault) => fault.into(),
            other => harmonia_contracts::Error::from_code(other.code()).with_cause(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_aborted_transaction_keeps_its_code_and_is_not_retried() {
        let e = Error::Aborted(Code::InvalidTransition);
        assert_eq!(e.code(), Code::InvalidTransition);
        assert!(!e.retryable());
        assert_eq!(e.to_string(), "transaction aborted (invalid_transition)");
        assert_eq!(harmonia_contracts::Error::from(e).code, Code::InvalidTransition);
    }
}
