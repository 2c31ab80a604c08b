//! Where the emulators started by `infra/emulators/start.sh` listen.

fn required(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!(
            "{var} is not set: emulator-backed tests run under `infra/test.sh`, which starts the \
             Firestore, Pub/Sub and Cloud Storage emulators (install the first two with `gcloud components install \
             cloud-firestore-emulator pubsub-emulator beta`, or Debian's \
             google-cloud-cli-firestore-emulator and google-cloud-cli-pubsub-emulator)"
        )
    })
}

/// `host:port` of the Firestore emulator started by the project's scripts.
pub fn firestore_emulator() -> String {
    required("FIRESTORE_EMULATOR_HOST")
}

/// `host:port` of the Pub/Sub emulator started by the project's scripts.
pub fn pubsub_emulator() -> String {
    required("PUBSUB_EMULATOR_HOST")
}

/// `host:port` of the Cloud Storage emulator (fake-gcs-server) started by the project's
/// scripts.
pub fn storage_emulator() -> String {
    required("STORAGE_EMULATOR_HOST")
}

/// Create a fresh bucket named `{prefix}-<hex>` in the Cloud Storage emulator (through its
/// JSON API, as the official client administers buckets only over gRPC, which the emulator
/// does not serve) and return its name.
pub async fn storage_bucket(prefix: &str) -> String {
    create_bucket(&storage_emulator(), prefix).await
}

/// Create a fresh bucket `{prefix}-<hex>` in the Cloud Storage emulator at `host`.
pub async fn create_bucket(host: &str, prefix: &str) -> String {
    let name = crate::unique(prefix).to_ascii_lowercase();
    let url = format!("http://{host}/storage/v1/b?project=harmonia-emulator");
    let response = reqwest::Client::new()
        .post(&url)
        .json(&serde_json::json!({ "name": name }))
        .send()
        .await
        .expect("reach the Cloud Storage emulator");
    assert!(response.status().is_success(), "create bucket {name}: {}", response.status());
    name
}

/// A Cloud Storage emulator of a test's own, whose finalised objects are announced on the
/// Pub/Sub emulator's `topic` in `project`, as a bucket's notification would (fake-gcs-server
/// applies notifications to the whole server, so a test that needs them starts its own). It
/// stops when dropped.
pub struct NotifyingStorage {
    /// `host:port`, for `STORAGE_EMULATOR_HOST`.
    pub host: String,
    child: std::process::Child,
}

impl Drop for NotifyingStorage {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl NotifyingStorage {
    /// Start one (the topic must exist before objects are written: a missing topic loses the
    /// event) and wait until it answers.
    pub async fn start(project: &str, topic: &str) -> Self {
        pubsub_emulator();
        let binary = required("HARMONIA_FAKE_GCS_SERVER");
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let host = format!("127.0.0.1:{port}");
        let child = std::process::Command::new(binary)
            .args(["-scheme", "http", "-host", "127.0.0.1", "-port", &port.to_string(), "-backend", "memory"])
            .args(["-external-url", &format!("http://{host}"), "-log-level", "warn"])
            .args(["-event.pubsub-project-id", project, "-event.pubsub-topic", topic, "-event.list", "finalize"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("start fake-gcs-server");
        let storage = Self { host, child };
        let url = format!("http://{}/storage/v1/b", storage.host);
        crate::eventually("the Cloud Storage emulator answers", || async {
            reqwest::get(&url).await.ok().filter(|r| r.status().is_success()).map(|_| ()).ok_or("not yet")
        })
        .await;
        storage
    }

    /// Create a fresh bucket `{prefix}-<hex>` here and return its name.
    pub async fn bucket(&self, prefix: &str) -> String {
        create_bucket(&self.host, prefix).await
    }

    /// Upload `bytes` as `bucket/name` with custom `metadata` (a multipart upload, as
    /// `gcloud storage cp --custom-metadata` sends it); returns the object's resource.
    pub async fn upload(&self, bucket: &str, name: &str, metadata: &[(&str, &str)], bytes: &[u8]) -> serde_json::Value {
        let meta: serde_json::Map<String, serde_json::Value> =
            metadata.iter().map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(*v))).collect();
        let resource = serde_json::json!({ "name": name, "metadata": meta });
        let boundary = "harmonia-upload-boundary";
        let mut body = format!(
            "--{boundary}\r\ncontent-type: application/json; charset=UTF-8\r\n\r\n{resource}\r\n--{boundary}\r\ncontent-type: application/octet-stream\r\n\r\n"
        )
        .into_bytes();
        body.extend_from_slice(bytes);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let url = format!("http://{}/upload/storage/v1/b/{bucket}/o?uploadType=multipart", self.host);
        let response = reqwest::Client::new()
            .post(&url)
            .header("content-type", format!("multipart/related; boundary={boundary}"))
            .body(body)
            .send()
            .await
            .expect("reach the Cloud Storage emulator");
        assert!(response.status().is_success(), "upload {name}: {}", response.status());
        response.json().await.expect("the object's resource")
    }
}
