//! Cross-crate end-to-end tests: one binary, one module per area. The areas that need what
//! `infra/test.sh` provides (the Firestore, Pub/Sub and Cloud Storage emulators, the AT
//! Protocol PDS, Chromium, or the `harmonia` and function binaries it builds first, which a
//! test cannot build while `cargo test` holds the build directory) compile with the feature
//! `e2e`, which that script turns on; a plain `cargo test` runs the rest in this process alone.

/// The areas that need what `infra/test.sh` provides: compiled with the feature `e2e` only.
macro_rules! with_e2e {
    ($($area:ident),* $(,)?) => {
        $(
            #[cfg(feature = "e2e")]
            mod $area;
        )*
    };
}

with_e2e!(
    channels,
    cli,
    cloud,
    console,
    engagement,
    events,
    models,
    operator_loop,
    platforms,
    repairs,
    said,
    startup,
    telemetry,
    threads
);
mod pipeline;
mod terraform;
