use harmonia_contracts::Code;

/// A blob failure. `Display` never includes blob bytes or backend response bodies.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No object exists where the reference points.
    #[error("the blob is missing")]
    Missing,
    /// The object is not the bytes its reference names (another length or digest).
    #[error("the blob does not match its reference")]
    Corrupt,
    /// The blob is larger than [`MAX_BLOB_BYTES`](crate::MAX_BLOB_BYTES) or the read's limit.
    #[error("the blob is larger than allowed")]
    TooLarge,
    /// The disk under the blob folder is full or cannot be written.
    #[error(transparent)]
    Storage(#[from] harmonia_contracts::storage::Fault),
    /// The backend failed or could not be reached; `kind` is a short, safe status name.
    #[error("blob storage unavailable ({kind})")]
    Unavailable {
        /// A short, safe status name (e.g. `io:PermissionDenied`, `http 503`).
        kind: String,
    },
}

impl Error {
    /// The stable code.
    pub fn code(&self) -> Code {
        match self {
            Error::Missing | Error::Corrupt => Code::BlobCorrupt,
            Error::TooLarge => Code::PayloadTooLarge,
            Error::Unavailable { .. } => Code::BlobUnavailable,
            Error::Storage(fault) => fault.code(),
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
            Error::Missing => harmonia_contracts::Error::new(
                Code::BlobCorrupt,
                "A stored blob is missing: blob storage has lost data it held; restore it from a backup",
            ),
            Error::Storage(fault) => fault.into(),
            other => harmonia_contracts::Error::from_code(other.code()).with_cause(other),
        }
    }
}
