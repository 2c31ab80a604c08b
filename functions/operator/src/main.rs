//! The `operator` function binary: hosted by `harmonia-host` (configuration from the
//! environment, graceful shutdown); the routes live in this crate's library.

use harmonia_host::Function;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    harmonia_host::run(Function::Operator, Vec::new(), |env, config| {
        Ok(harmonia_operator::app(harmonia_operator::OperatorState::hosted(env, config)?))
    })
    .await
}
