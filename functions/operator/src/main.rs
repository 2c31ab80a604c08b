//! The `operator` function binary: hosted by `harmonia-host` (configuration from the
//! environment, graceful shutdown); the routes live in this crate's library.

use harmonia_host::Function;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    harmonia_host::run(Function::Operator, Vec::new(), |env, config| {
        let state = harmonia_operator::OperatorState::hosted(env, config)?;
        let ask = match &config.nova_url {
            Some(url) => {
                harmonia_operator::nova::routes(harmonia_operator::nova::NovaLink::new(url)?, state.credentials.clone())
            }
            None => axum::Router::new(),
        };
        Ok(harmonia_operator::app_with(state, ask))
    })
    .await
}
