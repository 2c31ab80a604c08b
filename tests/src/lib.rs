//! Helpers for Harmonia's cross-crate end-to-end tests (the tests live in `e2e/`): a handler
//! that forwards deliveries to a channel, and a push server on an ephemeral port.

use std::sync::Arc;

use async_trait::async_trait;
use harmonia_bus::{Delivery, Handler, Outcome};
use tokio::sync::mpsc;

/// Forwards every delivery to a channel and acks it.
pub struct Forward(pub mpsc::UnboundedSender<Delivery>);

#[async_trait]
impl Handler for Forward {
    async fn handle(&self, delivery: Delivery) -> Outcome {
        let _ = self.0.send(delivery);
        Outcome::Ack
    }
}

/// Serve `app` on 127.0.0.1 at an ephemeral port; returns the port.
pub async fn serve(app: axum::Router) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind an ephemeral port");
    let port = listener.local_addr().expect("local address").port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    port
}

/// A forwarding handler and the receiving end of its channel.
pub fn forward() -> (Arc<Forward>, mpsc::UnboundedReceiver<Delivery>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Arc::new(Forward(tx)), rx)
}

/// A function binary running as its own process on its own port; killed when dropped.
pub struct FunctionProcess {
    /// The function's name.
    pub name: String,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    child: tokio::process::Child,
    port: u16,
    env: Vec<(String, String)>,
}

impl FunctionProcess {
    /// Where `cargo build --workspace --bins` put the function binaries.
    pub fn binary(name: &str) -> std::path::PathBuf {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
        let path = target.join("debug").join(format!("harmonia-{name}"));
        assert!(
            path.exists(),
            "{} is missing: run ./infra/test.sh, which builds the function binaries first",
            path.display()
        );
        path
    }

    /// Start `harmonia-<name>` with `env`, on a free port, and wait until it answers.
    pub async fn start(name: &str, env: &[(String, String)]) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        Self::start_on(name, env, port).await
    }

    /// Start `harmonia-<name>` on `port` (a restart keeps its push endpoint).
    pub async fn start_on(name: &str, env: &[(String, String)], port: u16) -> Self {
        let mut command = tokio::process::Command::new(Self::binary(name));
        command.env("PORT", port.to_string()).env("HARMONIA_BIND", "127.0.0.1").kill_on_drop(true);
        for (k, v) in env {
            command.env(k, v);
        }
        command.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::inherit());
        let child = command.spawn().expect("spawn a function");
        let url = format!("http://127.0.0.1:{port}");
        let process = Self { name: name.to_owned(), url, child, port, env: env.to_vec() };
        process.wait_healthy().await;
        process
    }

    async fn wait_healthy(&self) {
        let client = reqwest::Client::new();
        for _ in 0..600 {
            if client.get(format!("{}/healthz", self.url)).send().await.is_ok_and(|r| r.status().is_success()) {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("{} did not become healthy", self.name);
    }

    /// Kill it now (SIGKILL).
    pub async fn kill(&mut self) {
        let _ = self.child.kill().await;
    }

    /// SIGKILL it and hand back what a restart needs, so the caller can restart it in the
    /// background (on the same port, with the same environment) while it keeps observing.
    pub async fn kill_for_restart(mut self) -> (String, Vec<(String, String)>, u16) {
        self.kill().await;
        (self.name.clone(), self.env.clone(), self.port)
    }

    /// SIGKILL it and start it again on the same port with the same environment.
    pub async fn kill_and_restart(&mut self) {
        self.kill().await;
        let again = Self::start_on(&self.name, &self.env, self.port).await;
        *self = again;
    }
}
