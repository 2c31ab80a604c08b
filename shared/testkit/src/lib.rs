//! Test helpers shared by Harmonia's crates: temporary data directories, unique names, and
//! the emulator endpoints the project's scripts export.
//!
//! Emulator-backed tests call [`firestore_emulator`] / [`pubsub_emulator`]; when the
//! variables are missing they fail with instructions rather than skipping silently.

use std::path::Path;

/// A temporary directory that lives until the test process exits (dropping a
/// `tempfile::TempDir` mid-test would delete a database still in use).
pub fn temp_dir() -> LeakedDir {
    let dir = tempfile::Builder::new().prefix("harmonia-test-").tempdir().expect("create a temporary directory");
    LeakedDir(dir.keep())
}

/// A kept temporary directory.
#[derive(Debug)]
pub struct LeakedDir(std::path::PathBuf);

impl LeakedDir {
    /// The path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

/// A name unique to this call, safe as a Pub/Sub, Firestore or SQLite name: `prefix-<hex>`.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", &uuid::Uuid::new_v4().simple().to_string()[..16])
}

fn required(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!(
            "{var} is not set: emulator-backed tests run under `infra/test.sh`, which starts the \
             Firestore and Pub/Sub emulators (install them with `gcloud components install \
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
