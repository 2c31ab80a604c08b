//! The `plan` function: its step lives in `harmonia-pipeline`; this binary only hosts it
//! (configuration from the environment, push endpoints, graceful shutdown).

use harmonia_host::Function;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    harmonia_host::run_stage(Function::Plan).await
}
