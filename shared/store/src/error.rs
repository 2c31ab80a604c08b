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
    /// Stored data could not be decoded.
    #[error("stored data is corrupt")]
    Corrupt,
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
            Error::Corrupt => Code::StoreCorrupt,
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
            other => harmonia_contracts::Error::from_code(other.code()),
        }
    }
}
