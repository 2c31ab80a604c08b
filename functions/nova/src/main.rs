//! The `nova` function binary: hosted by `harmonia-host` (configuration from the
//! environment, graceful shutdown); the routes live in this crate's library.

use harmonia_host::Function;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    harmonia_host::run(Function::Nova, harmonia_nova::tools::all(), |env, config| {
        Ok(harmonia_nova::app(harmonia_nova::NovaState {
            runtime: env.runtime.clone(),
            credentials: harmonia_host::credentials(config, env.store.clone())?,
        }))
    })
    .await
}
