//! The `ingest` function binary: hosted by `harmonia-host` (configuration from the
//! environment, graceful shutdown); the router lives in this crate's library.

use harmonia_host::Function;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    harmonia_host::run(Function::Ingest, Vec::new(), |env, config| {
        Ok(harmonia_ingest::app(harmonia_ingest::IngestState::hosted(env, config)?))
    })
    .await
}
