use super::*;

/// The conformance suite and the bucket's layout, against the Cloud Storage emulator
/// `infra/test.sh` starts (feature `e2e`).
#[cfg(feature = "e2e")]
mod emulator {
    use std::sync::Arc;

    use harmonia_blob::{Blobs, Key};

    use super::super::*;

    async fn blobs() -> Arc<dyn Blobs> {
        harmonia_testkit::storage_emulator();
        let bucket = harmonia_testkit::storage_bucket("blobs").await;
        Arc::new(GcsBlobs::connect(&bucket).await.expect("client"))
    }

    harmonia_blob::blob_conformance!(blobs());

    /// Objects are named by their key in the bucket, as other Cloud Storage tools list them, and
    /// hold exactly the bytes (read back over the JSON API, not through this backend).
    #[tokio::test]
    async fn a_blob_is_an_object_named_by_its_key() {
        harmonia_testkit::storage_emulator();
        let bucket = harmonia_testkit::storage_bucket("layout").await;
        let blobs = GcsBlobs::connect(&bucket).await.expect("client");
        let ws: harmonia_contracts::ids::WorkspaceId = "ws-layout".parse().expect("ws");
        let blob = harmonia_blob::put(&blobs, &ws, b"segments".to_vec()).await.expect("put");
        let name = Key::new(&ws, &blob).to_string();
        assert_eq!(name, format!("workspaces/ws-layout/sha256/{}", blob.sha256));
        let url = format!(
            "http://{}/storage/v1/b/{bucket}/o/{}?alt=media",
            harmonia_testkit::storage_emulator(),
            name.replace('/', "%2F")
        );
        let body = reqwest::get(&url).await.expect("download").bytes().await.expect("body");
        assert_eq!(&body[..], b"segments");
        assert_eq!(blobs.describe(), format!("gs://{bucket}"));
    }

    /// A bucket that does not exist is `blob_unavailable` (retryable: it may be being created),
    /// never "missing blob".
    #[tokio::test]
    async fn a_missing_bucket_is_unavailable() {
        harmonia_testkit::storage_emulator();
        let blobs = GcsBlobs::connect("harmonia-no-such-bucket").await.expect("client");
        let ws: harmonia_contracts::ids::WorkspaceId = "ws-a".parse().expect("ws");
        let e = harmonia_blob::put(&blobs, &ws, b"x".to_vec()).await.expect_err("no bucket");
        assert_eq!(e.code(), harmonia_contracts::Code::BlobUnavailable, "{e:?}");
    }
}

#[test]
fn bucket_names_are_checked_before_any_request() {
    for good in ["abc", "harmonia-sources", "a.b_c-1"] {
        assert!(valid_bucket_name(good), "{good}");
    }
    for bad in ["ab", "Upper", "-lead", "trail-", "sp ace", &"a".repeat(64), "gs://x"] {
        assert!(!valid_bucket_name(bad), "{bad}");
    }
}
