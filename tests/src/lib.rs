//! Helpers for Harmonia's cross-crate end-to-end tests (the tests live in `e2e/`): a handler
//! that forwards deliveries to a channel, and function binaries run as their own processes,
//! whose resilience drills report when they hold a step (see `harmonia_host`'s `drill` module).

pub mod recorded;

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use harmonia_bus::{Delivery, Handler, Outcome};
use serde::Deserialize;
use tokio::sync::mpsc;

/// Forwards every delivery to a channel and acks it.
pub struct Forward(pub mpsc::UnboundedSender<Delivery>);

#[async_trait]
impl Handler for Forward {
    async fn handle(&self, delivery: Delivery) -> Outcome {
        // A closed channel means the test stopped listening: acking is all that is left to do.
        let _ = self.0.send(delivery);
        Outcome::Ack
    }
}

/// A forwarding handler and the receiving end of its channel.
pub fn forward() -> (Arc<Forward>, mpsc::UnboundedReceiver<Delivery>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Arc::new(Forward(tx)), rx)
}

/// One line of a drill's ready file.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Signal {
    /// `holding` or `released`.
    pub signal: String,
    /// The hold's number within its process (pairs `released` with `holding`).
    pub hold: u64,
    /// `delivery` (held before the step runs), `response` (held after the work is done) or
    /// `effect` (a connector's answer, held before the receipt is written).
    pub kind: String,
    /// The held delivery's topic.
    #[serde(default)]
    pub topic: Option<String>,
    /// The held delivery's message id.
    #[serde(default)]
    pub message_id: Option<String>,
    /// The held response's request method.
    #[serde(default)]
    pub method: Option<String>,
    /// The held response's request path.
    #[serde(default)]
    pub path: Option<String>,
    /// The held effect's connector.
    #[serde(default)]
    pub connector: Option<String>,
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match (&self.topic, &self.message_id, &self.method, &self.path, &self.connector) {
            (Some(topic), Some(id), _, _, _) => format!("topic {topic}, message {id}"),
            (_, _, Some(method), Some(path), _) => format!("{method} {path}"),
            (_, _, _, _, Some(connector)) => format!("connector {connector}"),
            _ => "?".to_owned(),
        };
        write!(f, "{} {} #{} ({what})", self.signal, self.kind, self.hold)
    }
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
    ready_file: PathBuf,
    /// Holds the ready file's directory until the process is gone.
    _dir: harmonia_testkit::TempDir,
}

/// A binary `cargo build --workspace --bins` put under the target directory.
fn built(file: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    // The benchmarks of ./infra/bench-cloud.sh run the image's binaries: the folder of their
    // target and profile (`x86_64-unknown-linux-gnu/image`).
    let profile = std::env::var("HARMONIA_BIN_PROFILE").unwrap_or_else(|_| "debug".into());
    let path = target.join(profile).join(file);
    assert!(path.exists(), "{} is missing: run ./infra/test.sh, which builds the binaries first", path.display());
    path
}

impl FunctionProcess {
    /// Where `cargo build --workspace --bins` put the function binaries.
    pub fn binary(name: &str) -> PathBuf {
        built(&format!("harmonia-{name}"))
    }

    /// Where `cargo build --workspace --bins` put the `harmonia` command.
    pub fn cli() -> PathBuf {
        built("harmonia")
    }

    /// The command `harmonia --data-dir DATA_DIR ARGS` with `env` set (and `remove` unset) and
    /// the repository's skills, not started: for a test that runs it its own way (in the
    /// background, killed mid-step).
    pub fn cli_command(
        data_dir: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
        remove: &[&str],
    ) -> tokio::process::Command {
        let skills = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills");
        let mut command = tokio::process::Command::new(Self::cli());
        command.arg("--data-dir").arg(data_dir).args(args).env("HARMONIA_SKILLS_DIR", skills);
        command.envs(env.iter().copied());
        remove.iter().for_each(|name| {
            command.env_remove(name);
        });
        command
    }

    /// `harmonia --data-dir DATA_DIR ARGS --json serve --port P` on a free port, once it says
    /// it listens: the process (killed when dropped) and its base URL.
    pub async fn serve_cli(
        data_dir: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
        remove: &[&str],
    ) -> (tokio::process::Child, String) {
        use tokio::io::AsyncBufReadExt;
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let port_text = port.to_string();
        let mut all = args.to_vec();
        all.extend_from_slice(&["--json", "serve", "--port", &port_text]);
        let mut serve = Self::cli_command(data_dir, &all, env, remove)
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("harmonia serve");
        // It prints where it listens once it does.
        let mut lines = tokio::io::BufReader::new(serve.stdout.take().expect("stdout")).lines();
        let ready = lines.next_line().await.expect("read").expect("serve says where it listens");
        assert!(ready.contains("listening"), "{ready}");
        (serve, format!("http://127.0.0.1:{port}"))
    }

    /// Run `harmonia --data-dir DATA_DIR ARGS` with `env` set (and `remove` unset), with the
    /// repository's skills; (exit code, stdout, stderr).
    pub async fn run_cli(
        data_dir: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
        remove: &[&str],
    ) -> (i32, String, String) {
        let out = Self::cli_command(data_dir, args, env, remove).output().await.expect("run harmonia");
        let text = |b: Vec<u8>| String::from_utf8(b).expect("utf-8");
        (out.status.code().unwrap_or(-1), text(out.stdout), text(out.stderr))
    }

    /// Start `harmonia-<name>` with `env`, on a free port, and wait until it answers.
    pub async fn start(name: &str, env: &[(String, String)]) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        Self::start_on(name, env, port).await
    }

    /// Start `harmonia-<name>` on `port` (a restart keeps its push endpoint). Each start has its
    /// own drill ready file, so a restarted process never reads its predecessor's holds.
    pub async fn start_on(name: &str, env: &[(String, String)], port: u16) -> Self {
        let dir = harmonia_testkit::temp_dir();
        let ready_file = dir.path().join(format!("{name}.drill.jsonl"));
        let mut command = tokio::process::Command::new(Self::binary(name));
        command
            .env("PORT", port.to_string())
            .env("HARMONIA_BIND", "127.0.0.1")
            .env("HARMONIA_FAULT_READY_FILE", &ready_file)
            .kill_on_drop(true);
        for (k, v) in env {
            command.env(k, v);
        }
        command.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::inherit());
        let child = command.spawn().expect("spawn a function");
        let url = format!("http://127.0.0.1:{port}");
        let process = Self { name: name.to_owned(), url, child, port, env: env.to_vec(), ready_file, _dir: dir };
        process.wait_healthy().await;
        process
    }

    async fn wait_healthy(&self) {
        let client = reqwest::Client::new();
        let healthz = format!("{}/healthz", self.url);
        harmonia_testkit::eventually(format!("{} answers {healthz}", self.name), || async {
            match client.get(&healthz).send().await {
                Ok(r) if r.status().is_success() => Ok(()),
                Ok(r) => Err(format!("status {}", r.status())),
                Err(e) => Err(e.to_string()),
            }
        })
        .await;
    }

    /// Every drill signal this process has reported so far.
    pub fn signals(&self) -> Vec<Signal> {
        let text = match std::fs::read_to_string(&self.ready_file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
            Err(e) => panic!("read {}: {e}", self.ready_file.display()),
        };
        // A line is written in one append, so every line present is complete.
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("a drill line is not a signal ({e}): {l}")))
            .collect()
    }

    /// The holds that have started and not ended, oldest first.
    pub fn holding_now(&self) -> Vec<Signal> {
        let signals = self.signals();
        let released: Vec<u64> = signals.iter().filter(|s| s.signal == "released").map(|s| s.hold).collect();
        signals.into_iter().filter(|s| s.signal == "holding" && !released.contains(&s.hold)).collect()
    }

    /// Wait until this process reports that it holds something `matching` (a delivery before
    /// its step, a response after its work, or a connector's answer), and return that signal.
    pub async fn wait_holding(&self, what: &str, matching: impl Fn(&Signal) -> bool) -> Signal {
        harmonia_testkit::eventually(format!("{} holds {what}", self.name), || async {
            self.holding_now().into_iter().find(|s| matching(s))
        })
        .await
    }

    /// Wait until it holds something `matching`, SIGKILL it, and check that the hold had not
    /// ended: the kill landed inside it. Logs the signal it waited for; returns it.
    pub async fn kill_while_holding(&mut self, what: &str, matching: impl Fn(&Signal) -> bool) -> Signal {
        let held = self.wait_holding(what, matching).await;
        // Straight to the process's stderr (not the test harness's captured output), so the
        // signal each kill waited for is in the test command's log.
        let line = format!("drill: {} reported `{held}`; killing it\n", self.name);
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
        self.kill().await;
        assert!(
            self.holding_now().iter().any(|s| s.hold == held.hold),
            "{} finished its hold ({held}) before the kill landed: the drill did not kill it mid-step",
            self.name
        );
        held
    }

    /// Kill it now (SIGKILL) and reap it.
    pub async fn kill(&mut self) {
        // An error means it has already exited, which is what a kill wants.
        let _ = self.child.kill().await;
    }

    /// SIGKILL it while it holds a delivery (see [`Self::kill_while_holding`]) and hand back
    /// what a restart needs, so the caller can restart it in the background (on the same port,
    /// with the same environment) while it keeps observing.
    pub async fn kill_for_restart(mut self) -> (String, Vec<(String, String)>, u16) {
        self.kill_while_holding("a delivery", |s| s.kind == "delivery").await;
        (self.name.clone(), self.env.clone(), self.port)
    }

    /// SIGKILL it while it holds something `matching` and start it again on the same port
    /// with the same environment.
    pub async fn kill_and_restart(&mut self, what: &str, matching: impl Fn(&Signal) -> bool) -> Signal {
        let held = self.kill_while_holding(what, matching).await;
        self.restart().await;
        held
    }

    /// Start it again (after a kill) on the same port with the same environment.
    pub async fn restart(&mut self) {
        *self = Self::start_on(&self.name, &self.env, self.port).await;
    }
}
