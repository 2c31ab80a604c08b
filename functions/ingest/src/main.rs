//! The `ingest` function: `POST /v1/sources` (authenticated like the operator API) validates a
//! source with `harmonia_pipeline::steps::ingest` and creates its job.

use harmonia_host::Function;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    harmonia_host::run(Function::Ingest, Vec::new(), |env| {
        Ok(harmonia_operator::ingest_app(harmonia_operator::OperatorState {
            env,
            credentials: harmonia_host::credentials()?,
        }))
    })
    .await
}
