//! The blob interface of Harmonia: large, immutable byte strings kept beside the document
//! store, which holds only their [`BlobRef`] (a long source's transcript and frames).
//!
//! Blobs are content-addressed and workspace-scoped: a blob lives at
//! `workspaces/{workspace}/sha256/{digest}` ([`Key`]), so the same bytes are stored once per
//! workspace, a workspace can only name its own blobs, and a write can never replace what a
//! reference points at. Backends implement two operations — [`Blobs::write`] (create-only)
//! and [`Blobs::read`] (bounded) — and [`put`] and [`get`] are built on them once: `get`
//! accepts bytes only when their length and SHA-256 match the reference, so a damaged or
//! swapped object is refused (`blob_corrupt`), never returned.
//!
//! Backends: [`Folder`] (a folder in the embedded default's data directory) here, and Cloud
//! Storage in `harmonia-blob-gcs`. `conformance` (feature `conformance`) is the suite both
//! pass unchanged.

mod error;
mod folder;
mod uploads;

#[cfg(any(test, feature = "conformance"))]
pub mod conformance;

use std::fmt;

use async_trait::async_trait;
use harmonia_contracts::domain::BlobRef;
use harmonia_contracts::ids::WorkspaceId;

pub use error::Error;
pub use folder::Folder;
pub use uploads::Uploads;

/// Largest blob, in bytes: a source of the documented 4 MiB, once parsed and written as JSON
/// (field names and escapes add to its length), with room to spare. Reads stop here, so a
/// stray huge object cannot exhaust memory.
pub const MAX_BLOB_BYTES: u64 = 16 * 1024 * 1024;

/// Where a blob lives in its backend: `workspaces/{workspace}/sha256/{digest}`. Built only from
/// a workspace and a reference, so every part is a checked id or 64 hex digits — safe as a
/// relative file path and as a Cloud Storage object name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key(String);

impl Key {
    /// The key of `blob` in `workspace`.
    pub fn new(workspace: &WorkspaceId, blob: &BlobRef) -> Self {
        Self(format!("workspaces/{workspace}/sha256/{}", blob.sha256))
    }

    /// The key as a `/`-separated path.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A blob backend.
#[async_trait]
pub trait Blobs: Send + Sync + 'static {
    /// Store `bytes` at `key` unless something is there already, durably before returning.
    /// An existing object is left as it is and is not an error: keys are content addresses,
    /// and [`get`] checks what it reads.
    async fn write(&self, key: &Key, bytes: Vec<u8>) -> Result<(), Error>;

    /// The bytes at `key`, or `None` when there is no object. More than `limit` bytes is
    /// [`Error::TooLarge`], found before they are all read.
    async fn read(&self, key: &Key, limit: u64) -> Result<Option<Vec<u8>>, Error>;

    /// A short name of the backend and where it keeps blobs, for operators (`folder
    /// /data/blobs`, `gs://bucket`).
    fn describe(&self) -> String;
}

/// Store `bytes` as a blob of `workspace`, returning its reference. Storing the same bytes
/// again writes nothing new and returns the same reference.
pub async fn put(blobs: &dyn Blobs, workspace: &WorkspaceId, bytes: Vec<u8>) -> Result<BlobRef, Error> {
    if bytes.len() as u64 > MAX_BLOB_BYTES {
        return Err(Error::TooLarge);
    }
    let blob = BlobRef::of(&bytes);
    blobs.write(&Key::new(workspace, &blob), bytes).await?;
    Ok(blob)
}

/// The bytes `blob` names in `workspace`: [`Error::Missing`] when no object is there, and
/// [`Error::Corrupt`] when what is there is not exactly those bytes.
pub async fn get(blobs: &dyn Blobs, workspace: &WorkspaceId, blob: &BlobRef) -> Result<Vec<u8>, Error> {
    let key = Key::new(workspace, blob);
    // One byte past the reference's length is enough to tell that the object is longer.
    let limit = blob.bytes.min(MAX_BLOB_BYTES) + 1;
    let bytes = match blobs.read(&key, limit).await {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Err(Error::Missing),
        Err(Error::TooLarge) => return Err(Error::Corrupt),
        Err(e) => return Err(e),
    };
    if blob.matches(&bytes) { Ok(bytes) } else { Err(Error::Corrupt) }
}

/// Whether `name` is a valid Cloud Storage bucket name: 3-63 characters of lower-case
/// letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit. Here rather
/// than in `harmonia-blob-gcs`, so that a configuration naming a bucket is checked by builds
/// without the Cloud Storage client too.
pub fn valid_bucket_name(name: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    (3..=63).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'))
        && edge(name.chars().next())
        && edge(name.chars().last())
}
