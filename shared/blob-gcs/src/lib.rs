//! Harmonia's blob backend on Cloud Storage: one bucket, objects named by their
//! [`Key`](harmonia_blob::Key) (`workspaces/{ws}/sha256/{digest}`), written and read with the
//! official client (`google-cloud-storage`).
//!
//! Writes are create-only (`ifGenerationMatch=0`), so an object, once there, is never
//! replaced; a write that finds one (HTTP 412) is done. Objects of the sizes Harmonia stores
//! go up in one request (the client's resumable threshold is raised above
//! [`MAX_BLOB_BYTES`](harmonia_blob::MAX_BLOB_BYTES)), which the client retries on transient
//! failures because the precondition makes the write idempotent.
//!
//! With `STORAGE_EMULATOR_HOST` set (e.g. `127.0.0.1:4443`, or a full `http://` URL) the
//! client talks to that emulator with anonymous credentials; otherwise to Cloud Storage with
//! Application Default Credentials (on Cloud Run, the service's own account).

use async_trait::async_trait;
use google_cloud_storage::client::Storage;
use harmonia_blob::{Blobs, Error, Key, MAX_BLOB_BYTES};

/// The environment variable naming a Cloud Storage emulator (`host:port` or a URL).
pub const EMULATOR_VAR: &str = "STORAGE_EMULATOR_HOST";

/// Blobs in one Cloud Storage bucket.
#[derive(Clone, Debug)]
pub struct GcsBlobs {
    client: Storage,
    bucket: String,
    /// `projects/_/buckets/{bucket}`, as the client names buckets.
    resource: String,
}

pub use harmonia_blob::valid_bucket_name;

/// A client for `bucket` (its name checked first), the bucket's name and its resource name
/// (`projects/_/buckets/{bucket}`, as the client names buckets).
async fn in_bucket(bucket: &str) -> Result<(Storage, String, String), Error> {
    if !valid_bucket_name(bucket) {
        return Err(Error::Unavailable { kind: "invalid bucket name".into() });
    }
    Ok((client().await?, bucket.to_owned(), format!("projects/_/buckets/{bucket}")))
}

/// The emulator's base URL from `STORAGE_EMULATOR_HOST`, if set and not empty.
pub fn emulator_endpoint() -> Option<String> {
    let raw = std::env::var(EMULATOR_VAR).ok().filter(|v| !v.trim().is_empty())?;
    let raw = raw.trim().trim_end_matches('/');
    Some(if raw.starts_with("http://") || raw.starts_with("https://") {
        raw.to_owned()
    } else {
        format!("http://{raw}")
    })
}

impl GcsBlobs {
    /// Blobs in `bucket` (which must exist), through the emulator when
    /// `STORAGE_EMULATOR_HOST` is set. No request is made until the first blob is written
    /// or read.
    pub async fn connect(bucket: &str) -> Result<Self, Error> {
        let (client, bucket, resource) = in_bucket(bucket).await?;
        Ok(Self { client, bucket, resource })
    }

    /// The bucket.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }
}

/// A safe, short name of a client error: its HTTP status, or its kind.
fn unavailable(e: &google_cloud_storage::Error) -> Error {
    let kind = match e.http_status_code() {
        Some(status) => format!("http {status}"),
        None if e.is_timeout() => "timeout".into(),
        None if e.is_authentication() => "authentication".into(),
        None if e.is_connect() => "connect".into(),
        None if e.is_io() || e.is_transport() => "transport".into(),
        None => e.status().map_or_else(|| "error".into(), |s| format!("{:?}", s.code)),
    };
    Error::Unavailable { kind }
}

fn not_found(e: &google_cloud_storage::Error) -> bool {
    e.http_status_code() == Some(404)
        || e.status().is_some_and(|s| s.code == google_cloud_gax::error::rpc::Code::NotFound)
}

/// The bytes of `object` in `resource` (at `generation`, when given), at most `limit`; `None`
/// when there is no such object.
async fn read_limited(
    client: &Storage,
    resource: &str,
    object: &str,
    generation: Option<i64>,
    limit: u64,
) -> Result<Option<Vec<u8>>, Error> {
    let mut request = client.read_object(resource, object);
    if let Some(generation) = generation {
        request = request.set_generation(generation);
    }
    let mut response = match request.send().await {
        Ok(response) => response,
        Err(e) if not_found(&e) => return Ok(None),
        Err(e) => return Err(unavailable(&e)),
    };
    let size = u64::try_from(response.object().size).unwrap_or(u64::MAX);
    if size > limit {
        return Err(Error::TooLarge);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    while let Some(chunk) = response.next().await {
        let chunk = chunk.map_err(|e| unavailable(&e))?;
        if (bytes.len() + chunk.len()) as u64 > limit {
            return Err(Error::TooLarge);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Some(bytes))
}

/// The client for `STORAGE_EMULATOR_HOST` or Cloud Storage, writing in one request up to the
/// largest blob.
async fn client() -> Result<Storage, Error> {
    // Above the largest blob, so every write is one request (the emulator also serves no
    // resumable sessions behind a port).
    let threshold = usize::try_from(MAX_BLOB_BYTES).unwrap_or(usize::MAX).saturating_add(1);
    let mut builder = Storage::builder().with_resumable_upload_threshold(threshold);
    if let Some(endpoint) = emulator_endpoint() {
        builder = builder
            .with_endpoint(endpoint)
            .with_credentials(google_cloud_auth::credentials::anonymous::Builder::new().build());
    }
    builder.build().await.map_err(|_| Error::Unavailable { kind: "client".into() })
}

/// The bucket operators upload sources to (`HARMONIA_SOURCES_BUCKET`), read by object
/// generation.
#[derive(Clone, Debug)]
pub struct GcsUploads {
    client: Storage,
    bucket: String,
    resource: String,
}

impl GcsUploads {
    /// Uploads in `bucket`, through the emulator when `STORAGE_EMULATOR_HOST` is set.
    pub async fn connect(bucket: &str) -> Result<Self, Error> {
        let (client, bucket, resource) = in_bucket(bucket).await?;
        Ok(Self { client, bucket, resource })
    }
}

#[async_trait]
impl harmonia_blob::Uploads for GcsUploads {
    fn bucket(&self) -> &str {
        &self.bucket
    }

    async fn fetch(&self, object: &str, generation: i64, limit: u64) -> Result<Option<Vec<u8>>, Error> {
        read_limited(&self.client, &self.resource, object, Some(generation), limit).await
    }
}

#[async_trait]
impl Blobs for GcsBlobs {
    async fn write(&self, key: &Key, bytes: Vec<u8>) -> Result<(), Error> {
        let sent = self
            .client
            .write_object(&self.resource, key.as_str(), bytes::Bytes::from(bytes))
            .set_if_generation_match(0)
            .set_content_type("application/octet-stream")
            .send_buffered()
            .await;
        match sent {
            Ok(_) => Ok(()),
            // The object exists: content-addressed, so it is this blob (reads check).
            Err(e) if e.http_status_code() == Some(412) => Ok(()),
            Err(e) => Err(unavailable(&e)),
        }
    }

    async fn read(&self, key: &Key, limit: u64) -> Result<Option<Vec<u8>>, Error> {
        read_limited(&self.client, &self.resource, key.as_str(), None, limit).await
    }

    fn describe(&self) -> String {
        format!("gs://{}", self.bucket)
    }
}

#[cfg(test)]
mod tests;
