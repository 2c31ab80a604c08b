//! Test helpers shared by Harmonia's crates, so that no test hand-rolls its own:
//!
//! - [`eventually`]: poll a probe until it yields, instead of sleeping for a guessed time;
//! - [`spawn_app`] and [`oneshot`]: serve a router on an ephemeral port, or call it in-process;
//! - [`send`] and [`error_code`]: a request's status and JSON body, and its error code;
//!   [`assert_json_fallbacks`]: an HTTP function's JSON 404 and 405;
//! - [`spawn_cutting`]: serve a router whose next answer a [`Cut`] loses after the work is done;
//! - [`mastodon`], [`linkedin`] and [`x`]: recorded platforms, answering with the connectors'
//!   recordings ([`recorded`] and [`oauth`]: what the last two share, and their token side);
//! - [`samples`]: the example sources under `examples/`;
//! - [`temp_dir`] and [`unique`]: per-test directories (removed on drop) and names;
//! - [`firestore_emulator`] / [`pubsub_emulator`]: the emulator endpoints the project's scripts
//!   export. When the variables are missing these fail with instructions rather than letting
//!   the test skip silently.

mod app;
mod client;
mod emulators;
mod eventually;
pub mod linkedin;
pub mod mastodon;
pub mod oauth;
pub mod recorded;
pub mod samples;
pub mod x;

pub use app::{Cut, Reply, Spawned, oneshot, spawn_app, spawn_cutting};
pub use client::{assert_json_fallbacks, error_code, send};
pub use emulators::{
    NotifyingStorage, create_bucket, firestore_emulator, pubsub_emulator, storage_bucket, storage_emulator,
};
pub use eventually::{DEADLINE, Probe, eventually, eventually_within};
pub use tempfile::TempDir;

/// A fresh temporary directory, removed when the returned guard is dropped.
///
/// Keep the guard alive for as long as anything (a database file, a queue) lives inside it:
/// store it next to what uses the directory rather than letting it fall out of scope.
pub fn temp_dir() -> TempDir {
    tempfile::Builder::new().prefix("harmonia-test-").tempdir().expect("create a temporary directory")
}

/// Say that `test` did not run here, and `why` (a tmpfs it cannot mount, say): on standard
/// error, and as a line `test: why` in the file `HARMONIA_SKIPS_FILE` names, which
/// `infra/test.sh` counts and lists in its summary. A test that calls this returns at once.
pub fn skipped(test: &str, why: &str) {
    eprintln!("skipped {test}: {why}");
    if let Some(file) = std::env::var_os("HARMONIA_SKIPS_FILE") {
        let line = format!("{test}: {}\n", why.split_whitespace().collect::<Vec<_>>().join(" "));
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
            .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
        if let Err(e) = appended {
            eprintln!("the skip could not be recorded: {e}");
        }
    }
}

/// A name unique to this call, safe as a Pub/Sub, Firestore or SQLite name: `prefix-<hex>`.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", &uuid::Uuid::new_v4().simple().to_string()[..16])
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_temporary_directory_is_removed_when_its_guard_is_dropped() {
        let dir = super::temp_dir();
        let path = dir.path().to_path_buf();
        std::fs::write(path.join("db.sqlite"), b"x").expect("write");
        assert!(path.exists());
        drop(dir);
        assert!(!path.exists(), "{} was left behind", path.display());
    }

    #[test]
    fn unique_names_differ_and_keep_their_prefix() {
        let (a, b) = (super::unique("job"), super::unique("job"));
        assert_ne!(a, b);
        assert!(a.starts_with("job-") && a.len() == "job-".len() + 16, "{a}");
    }
}
