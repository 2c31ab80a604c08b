//! The `ingest` function binary: hosted by `harmonia-host` (configuration from the
//! environment, graceful shutdown); the router lives in this crate's library.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    harmonia_host::run("ingest", Vec::new(), |env, config| {
        Ok(harmonia_ingest::app(harmonia_ingest::IngestState { env, credentials: harmonia_host::credentials(config)? }))
    })
    .await
}
