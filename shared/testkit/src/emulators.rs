//! Where the emulators started by `infra/emulators/start.sh` listen.

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
