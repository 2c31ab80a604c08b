//! `ingest` from Cloud Storage: an object finalised in the sources bucket
//! (`HARMONIA_SOURCES_BUCKET`) is announced by the bucket's Pub/Sub notification, and
//! [`UploadIngest`] validates and ingests it exactly as `POST /v1/sources` would.
//!
//! The object's name says its format (`.vtt`, `.srt`, `.json`); its custom metadata names the
//! `workspace` (required), the `title` (else the file name) and the `language` (else `en`).
//! The object is read at the announced generation. An upload that cannot become a job — no or
//! an invalid workspace, another bucket, an unknown format, too large, an invalid source — is
//! recorded once as an [`IngestFailure`] with its code (in the named workspace, or `system`)
//! and acknowledged, so it is never retried; only a transient failure (storage or the store
//! unavailable) is redelivered, and after the subscription's attempts it is dead-lettered and
//! recorded. A redelivered notification creates no second job: the job's ids derive from the
//! object's bucket, name and generation.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use harmonia_bus::{Delivery, Handler, Outcome};
use harmonia_contracts::domain::SOURCE_MAX_BYTES;
use harmonia_contracts::ids::{JobId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use harmonia_store::{create_if_absent, encode};
use serde::{Deserialize, Deserializer, Serialize};
use sha2::Digest as _;

use super::deadletter::system_workspace;
use crate::Env;
use crate::formats::{self, Format};
use crate::records::{INGEST_FAILURES, doc_id};

/// The notification attribute that names the event.
const EVENT_TYPE: &str = "eventType";
/// The only event that is ingested: a new object (or a new generation of one) is complete.
const FINALIZE: &str = "OBJECT_FINALIZE";
/// Longest object name Cloud Storage allows, in bytes.
const MAX_OBJECT_NAME: usize = 1024;

/// What a Cloud Storage notification announces: the object's JSON API resource
/// (`payloadFormat=JSON_API_V1`), of which only these fields are read.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectNotice {
    /// Bucket.
    pub bucket: String,
    /// Object name.
    pub name: String,
    /// Generation (the JSON API writes int64 values as strings).
    #[serde(deserialize_with = "int_text")]
    pub generation: i64,
    /// Size in bytes.
    #[serde(deserialize_with = "int_text")]
    pub size: i64,
    /// Custom metadata.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

/// A JSON API integer: a string of digits (or, leniently, a JSON number).
fn int_text<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Int {
        Text(String),
        Number(i64),
    }
    match Int::deserialize(d)? {
        Int::Number(n) => Ok(n),
        Int::Text(t) => t.parse().map_err(|_| serde::de::Error::custom("not an integer")),
    }
}

impl ObjectNotice {
    /// Decode a notification's data; anything else is `invalid_request`.
    pub fn decode(data: &[u8]) -> Result<Self, Error> {
        let invalid = |why: &'static str| Error::new(Code::InvalidRequest, why);
        let notice: Self = serde_json::from_slice(data)
            .map_err(|_| invalid("the notification is not a Cloud Storage object resource"))?;
        if notice.bucket.is_empty() || notice.name.is_empty() || notice.name.len() > MAX_OBJECT_NAME {
            return Err(invalid("the notification names no valid bucket and object"));
        }
        if notice.generation <= 0 || notice.size < 0 {
            return Err(invalid("the notification's generation or size is out of range"));
        }
        Ok(notice)
    }

    /// `gs://bucket/name`.
    pub fn url(&self) -> String {
        format!("gs://{}/{}", self.bucket, self.name)
    }

    /// A digest naming this generation of this object, for idempotency keys and record ids.
    fn digest(&self) -> String {
        let id = format!("{}\n{}\n{}", self.bucket, self.name, self.generation);
        hex::encode(sha2::Sha256::digest(id.as_bytes()))[..40].to_owned()
    }
}

/// An upload that could not become a job, recorded once per object generation (collection
/// `ingest_failures`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngestFailure {
    /// `gs://bucket/name` (empty when the notification named none).
    pub object: String,
    /// The object's generation (0 when the notification named none).
    pub generation: i64,
    /// The stable code.
    pub code: Code,
    /// A safe sentence: why, never the object's content.
    pub message: String,
    /// The Pub/Sub message that announced it.
    pub message_id: String,
    /// When it was recorded.
    pub recorded_at: DateTime<Utc>,
}

/// Why an upload did not become a job.
enum Failure {
    /// Transient: redeliver.
    Retry,
    /// Permanent: record it in `workspace` and acknowledge.
    Refused { workspace: WorkspaceId, error: Error },
}

/// The ingest function's handler of Cloud Storage notifications from the sources bucket.
pub struct UploadIngest {
    env: Arc<Env>,
}

impl UploadIngest {
    /// A handler ingesting through `env` (its `uploads` names the bucket it reads).
    pub fn new(env: Arc<Env>) -> Self {
        Self { env }
    }
}

#[async_trait]
impl Handler for UploadIngest {
    async fn handle(&self, delivery: Delivery) -> Outcome {
        // Deletions, archivals and metadata updates are not new sources.
        if delivery.attributes.get(EVENT_TYPE).is_some_and(|t| t != FINALIZE) {
            return Outcome::Ack;
        }
        let notice = ObjectNotice::decode(&delivery.data);
        let outcome = match &notice {
            Ok(notice) => ingest_upload(&self.env, notice).await,
            Err(e) => Err(Failure::Refused { workspace: system_workspace(), error: e.clone() }),
        };
        match outcome {
            Ok(job) => {
                tracing::info!(job = %job, message_id = %delivery.message_id, "upload ingested");
                Outcome::Ack
            }
            Err(Failure::Retry) => Outcome::Nack,
            Err(Failure::Refused { workspace, error }) => {
                let (object, generation) = notice.as_ref().map_or((String::new(), 0), |n| (n.url(), n.generation));
                let id = match &notice {
                    Ok(n) => format!("upload-{}", n.digest()),
                    Err(_) => {
                        format!("upload-message-{}", &hex::encode(sha2::Sha256::digest(&delivery.message_id))[..40])
                    }
                };
                let record = IngestFailure {
                    object,
                    generation,
                    code: error.code,
                    message: error.message.to_string(),
                    message_id: delivery.message_id.clone(),
                    recorded_at: Utc::now(),
                };
                let Ok(data) = encode(&record) else { return Outcome::Nack };
                match create_if_absent(&*self.env.store, &workspace, INGEST_FAILURES, &doc_id(id), data).await {
                    Ok(_) => {
                        tracing::warn!(workspace = %workspace, code = %error.code, message_id = %delivery.message_id, "upload refused and recorded");
                        Outcome::Ack
                    }
                    Err(_) => Outcome::Nack,
                }
            }
        }
    }
}

/// Validate and ingest the upload `notice` announces.
async fn ingest_upload(env: &Env, notice: &ObjectNotice) -> Result<JobId, Failure> {
    let refused_in = |workspace: &WorkspaceId| {
        let workspace = workspace.clone();
        move |error: Error| Failure::Refused { workspace: workspace.clone(), error }
    };
    let workspace: WorkspaceId = match notice.metadata.get("workspace").map(|w| w.parse::<WorkspaceId>()) {
        Some(Ok(workspace)) => workspace,
        Some(Err(e)) => return Err(refused_in(&system_workspace())(e)),
        None => {
            return Err(refused_in(&system_workspace())(Error::new(
                Code::InvalidRequest,
                "the object has no workspace metadata (set x-goog-meta-workspace when uploading)",
            )));
        }
    };
    let refused = refused_in(&workspace);
    let Some(uploads) = env.uploads.as_ref() else {
        return Err(refused(Error::new(
            Code::InvalidConfig,
            "this deployment takes no uploads: HARMONIA_SOURCES_BUCKET is not set",
        )));
    };
    if notice.bucket != uploads.bucket() {
        return Err(refused(Error::new(Code::InvalidRequest, "the object is not in the sources bucket")));
    }
    let Some(format) = Format::from_path(&notice.name) else {
        return Err(refused(Error::new(Code::InvalidRequest, "the object's name must end in .vtt, .srt or .json")));
    };
    let limit = SOURCE_MAX_BYTES as u64;
    let too_large = || Error::new(Code::PayloadTooLarge, "a source is at most 4 MiB");
    if notice.size as u64 > limit {
        return Err(refused(too_large()));
    }
    let bytes = match uploads.fetch(&notice.name, notice.generation, limit).await {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return Err(refused(Error::new(Code::NotFound, "the object was deleted or replaced before it was read")));
        }
        Err(harmonia_blob::Error::TooLarge) => return Err(refused(too_large())),
        Err(_) => return Err(Failure::Retry),
    };
    let title = notice.metadata.get("title").cloned().unwrap_or_else(|| file_stem(&notice.name));
    let language = notice.metadata.get("language").map_or("en", String::as_str);
    let input = formats::parse(&bytes, format, &title, language).map_err(&refused)?;
    let key = format!("gcs-{}", notice.digest());
    match super::ingest(env, &workspace, input, None, Some(&key)).await {
        Ok(job) => Ok(job.id),
        Err(e) if e.code.default_retryable() => Err(Failure::Retry),
        Err(e) => Err(refused(e)),
    }
}

/// The object's file name without folders or extension: `talks/Q3 keynote.vtt` → `Q3 keynote`.
fn file_stem(name: &str) -> String {
    let file = name.rsplit('/').next().unwrap_or(name);
    let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    if stem.trim().is_empty() { "Untitled source".into() } else { stem.chars().take(300).collect() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notification_is_read_as_cloud_storage_writes_it() {
        let data = br#"{"kind":"storage#object","id":"b/talks/k.vtt/17","bucket":"b","name":"talks/k.vtt",
            "generation":"17","metageneration":"1","size":"120","contentType":"text/vtt",
            "metadata":{"workspace":"acme","title":"Keynote"}}"#;
        let notice = ObjectNotice::decode(data).expect("a notification");
        assert_eq!(
            (notice.bucket.as_str(), notice.name.as_str(), notice.generation, notice.size),
            ("b", "talks/k.vtt", 17, 120)
        );
        assert_eq!(notice.metadata.get("workspace").map(String::as_str), Some("acme"));
        assert_eq!(notice.url(), "gs://b/talks/k.vtt");
        // Another generation of the same name is another upload.
        let next = ObjectNotice { generation: 18, ..notice.clone() };
        assert_ne!(notice.digest(), next.digest());
    }

    #[test]
    fn anything_else_is_an_invalid_request() {
        for bad in [
            &b"not json"[..],
            br#"{"bucket":"b","name":"k.vtt","generation":"x","size":"1"}"#,
            br#"{"bucket":"b","name":"k.vtt","generation":"0","size":"1"}"#,
            br#"{"bucket":"b","name":"","generation":"3","size":"1"}"#,
            br#"{"bucket":"b","name":"k.vtt","generation":"3","size":"-1"}"#,
            br#"{"bucket":"b","name":"k.vtt","generation":"3","size":"1","metadata":{"workspace":7}}"#,
        ] {
            let e = ObjectNotice::decode(bad).expect_err("refused");
            assert_eq!(e.code, Code::InvalidRequest, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_title_falls_back_to_the_file_name() {
        assert_eq!(file_stem("talks/Q3 keynote.vtt"), "Q3 keynote");
        assert_eq!(file_stem("plain.srt"), "plain");
        assert_eq!(file_stem("dir/.vtt"), "Untitled source");
    }
}
