//! Resilience drills (`HARMONIA_FAULT_*`): a function holds each delivery before its step runs,
//! each HTTP response after its work is done, or each connector call after the platform
//! answered and before the receipt is written, so that a test can kill it inside that window.
//!
//! A hold is only useful to a test that knows it is in progress. Every hold is therefore
//! reported twice, when it starts (`holding`) and when it ends (`released`): as a `drill:` log
//! line, and, when `HARMONIA_FAULT_READY_FILE` names a file, as one JSON line appended to it:
//!
//! ```json
//! {"signal":"holding","hold":3,"kind":"delivery","topic":"draft.written","message_id":"17"}
//! {"signal":"released","hold":3,"kind":"response","method":"POST","path":"/v1/sources"}
//! {"signal":"holding","hold":4,"kind":"effect","connector":"sandbox"}
//! ```
//!
//! `hold` numbers the holds of one process, pairing each `released` with its `holding`. A test
//! waits for a `holding` line without its `released` line, kills the process, and can then
//! check that the hold was still unreleased: the kill provably landed mid-step, whatever the
//! machine's speed.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::middleware::Next;
use harmonia_bus::{Delivery, Handler, Outcome};
use harmonia_connectors::{Checked, Connector, Found, Lookup, Outgoing, ReadBackFailed, Sent};
use harmonia_contracts::Code;
use harmonia_contracts::domain::ConnectorKind;
use harmonia_contracts::ids::WorkspaceId;
use serde_json::{Value, json};

/// What a drill holds.
pub(crate) enum Held<'a> {
    /// A pushed delivery, before the step runs.
    Delivery {
        /// The topic it was published to.
        topic: &'a str,
        /// Its message id.
        message_id: &'a str,
    },
    /// An HTTP response, after the work is done.
    Response {
        /// The request's method.
        method: &'a str,
        /// The request's path.
        path: &'a str,
    },
    /// A connector's answer, after the platform was called and before the caller records it.
    Effect {
        /// The connector's name.
        connector: &'a str,
    },
}

impl Held<'_> {
    fn record(&self, signal: &str, hold: u64) -> Value {
        match self {
            Held::Delivery { topic, message_id } => {
                json!({"signal": signal, "hold": hold, "kind": "delivery", "topic": topic, "message_id": message_id})
            }
            Held::Response { method, path } => {
                json!({"signal": signal, "hold": hold, "kind": "response", "method": method, "path": path})
            }
            Held::Effect { connector } => {
                json!({"signal": signal, "hold": hold, "kind": "effect", "connector": connector})
            }
        }
    }
}

/// Holds for a fixed time and reports each hold (see the module docs).
#[derive(Clone, Debug)]
pub(crate) struct Drill {
    hold: Duration,
    ready_file: Option<Arc<PathBuf>>,
    next: Arc<AtomicU64>,
}

impl Drill {
    /// Holds of `hold`, reported to `ready_file` when there is one.
    pub(crate) fn new(hold: Duration, ready_file: Option<PathBuf>) -> Self {
        Self { hold, ready_file: ready_file.map(Arc::new), next: Arc::new(AtomicU64::new(1)) }
    }

    /// Report the hold, wait, report its release.
    pub(crate) async fn hold(&self, held: Held<'_>) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let ms = u64::try_from(self.hold.as_millis()).unwrap_or(u64::MAX);
        match &held {
            Held::Delivery { topic, message_id } => {
                tracing::warn!(hold = n, topic, message_id, hold_ms = ms, "drill: holding delivery");
            }
            Held::Response { method, path } => {
                tracing::warn!(hold = n, method, path, hold_ms = ms, "drill: holding response");
            }
            Held::Effect { connector } => {
                tracing::warn!(hold = n, connector, hold_ms = ms, "drill: holding a connector's answer");
            }
        }
        self.report(&held.record("holding", n));
        tokio::time::sleep(self.hold).await;
        self.report(&held.record("released", n));
    }

    fn report(&self, record: &Value) {
        let Some(path) = self.ready_file.as_deref() else { return };
        // One `write` of a whole line to a file opened for appending: concurrent holds in this
        // process never interleave their lines, and the line is in the file (the kernel's)
        // the moment this returns, so a SIGKILL right after cannot lose it.
        let line = format!("{record}\n");
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            tracing::error!(path = %path.display(), error = %e, "drill: the ready file cannot be written");
        }
    }
}

/// `app` with every response held (see [`Drill`]) after its handler ran.
pub(crate) fn hold_responses(app: Router, drill: Drill) -> Router {
    app.layer(axum::middleware::from_fn(move |request: Request, next: Next| {
        let drill = drill.clone();
        async move {
            let (method, path) = (request.method().to_string(), request.uri().path().to_owned());
            let response = next.run(request).await;
            drill.hold(Held::Response { method: &method, path: &path }).await;
            response
        }
    }))
}

/// A push handler that holds each delivery (see [`Drill`]) before handing it on.
pub(crate) struct Delayed {
    inner: Arc<dyn Handler>,
    topic: String,
    drill: Drill,
}

impl Delayed {
    /// Hold deliveries of `topic` with `drill`, then pass them to `inner`.
    pub(crate) fn new(inner: Arc<dyn Handler>, topic: String, drill: Drill) -> Self {
        Self { inner, topic, drill }
    }
}

#[async_trait::async_trait]
impl Handler for Delayed {
    async fn handle(&self, delivery: Delivery) -> Outcome {
        self.drill.hold(Held::Delivery { topic: &self.topic, message_id: &delivery.message_id }).await;
        self.inner.handle(delivery).await
    }
}

/// A connector whose every call is held (see [`Drill`]) after the platform answered: the post
/// is made and its claim stands, but the caller has not recorded the receipt yet.
pub(crate) struct HeldEffects {
    inner: Arc<dyn Connector>,
    drill: Drill,
}

impl HeldEffects {
    /// `inner`, with each send held by `drill` before its answer is handed back.
    pub(crate) fn new(inner: Arc<dyn Connector>, drill: Drill) -> Self {
        Self { inner, drill }
    }
}

#[async_trait::async_trait]
impl Connector for HeldEffects {
    fn kind(&self) -> ConnectorKind {
        self.inner.kind()
    }

    async fn create(&self, workspace: &WorkspaceId, post: &Outgoing) -> Sent {
        let sent = self.inner.send(workspace, post).await;
        self.drill.hold(Held::Effect { connector: self.kind().as_str() }).await;
        sent
    }

    async fn read_back(&self, lookup: Lookup<'_>) -> Result<Found, ReadBackFailed> {
        self.inner.read_back(lookup).await
    }

    async fn check(&self) -> Result<Checked, Code> {
        self.inner.check().await
    }

    async fn engagement(
        &self,
        post: harmonia_connectors::engagement::Asked<'_>,
    ) -> harmonia_connectors::engagement::Measurement {
        self.inner.engagement(post).await
    }

    async fn trends(
        &self,
    ) -> Result<Vec<harmonia_connectors::trends::PublicTrend>, harmonia_connectors::engagement::MeasureFailed> {
        self.inner.trends().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Ack;

    #[async_trait::async_trait]
    impl Handler for Ack {
        async fn handle(&self, _: Delivery) -> Outcome {
            Outcome::Ack
        }
    }

    fn delivery(id: &str) -> Delivery {
        Delivery {
            message_id: id.to_owned(),
            subscription: "draft.written.review".parse().expect("name"),
            data: Vec::new(),
            attributes: Default::default(),
            attempt: None,
            published_at: chrono::Utc::now(),
        }
    }

    fn lines(path: &std::path::Path) -> Vec<Value> {
        std::fs::read_to_string(path)
            .expect("read")
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_held_delivery_is_reported_before_the_step_and_released_after_the_hold() {
        let dir = harmonia_testkit::temp_dir();
        let file = dir.path().join("ready");
        let drill = Drill::new(Duration::from_secs(2), Some(file.clone()));
        let delayed = Arc::new(Delayed::new(Arc::new(Ack), "draft.written".into(), drill));
        let task = tokio::spawn({
            let delayed = delayed.clone();
            async move { delayed.handle(delivery("m-7")).await }
        });
        // Let the handler reach its hold; paused time does not advance on its own.
        tokio::task::yield_now().await;
        let held = lines(&file);
        assert_eq!(
            held,
            vec![
                json!({"signal": "holding", "hold": 1, "kind": "delivery", "topic": "draft.written", "message_id": "m-7"})
            ]
        );
        assert!(!task.is_finished(), "the step waits for the hold");
        assert_eq!(task.await.expect("join"), Outcome::Ack);
        let all = lines(&file);
        assert_eq!(all.len(), 2);
        assert_eq!((&all[1]["signal"], &all[1]["hold"]), (&json!("released"), &json!(1)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_held_response_is_sent_after_its_release_is_reported() {
        let dir = harmonia_testkit::temp_dir();
        let file = dir.path().join("ready");
        let app = Router::new().route("/v1/sources", axum::routing::post(|| async { "created" }));
        let app = hold_responses(app, Drill::new(Duration::from_secs(1), Some(file.clone())));
        let request = axum::http::Request::post("/v1/sources").body(axum::body::Body::empty()).expect("request");
        let reply = harmonia_testkit::oneshot(app, request).await;
        assert_eq!(&reply.body[..], b"created");
        let signals: Vec<(String, String)> = lines(&file)
            .iter()
            .map(|l| (l["signal"].as_str().expect("s").to_owned(), format!("{} {}", l["method"], l["path"])))
            .collect();
        let held = r#""POST" "/v1/sources""#.to_owned();
        assert_eq!(signals, vec![("holding".to_owned(), held.clone()), ("released".to_owned(), held)]);
    }

    #[tokio::test(start_paused = true)]
    async fn holds_are_numbered_and_a_response_names_its_request() {
        let dir = harmonia_testkit::temp_dir();
        let file = dir.path().join("ready");
        let drill = Drill::new(Duration::from_millis(10), Some(file.clone()));
        drill.hold(Held::Response { method: "POST", path: "/v1/sources" }).await;
        drill.hold(Held::Response { method: "GET", path: "/v1/jobs" }).await;
        let all = lines(&file);
        let holds: Vec<(&str, u64, &str)> = all
            .iter()
            .map(|l| (l["signal"].as_str().expect("s"), l["hold"].as_u64().expect("n"), l["path"].as_str().expect("p")))
            .collect();
        assert_eq!(
            holds,
            vec![
                ("holding", 1, "/v1/sources"),
                ("released", 1, "/v1/sources"),
                ("holding", 2, "/v1/jobs"),
                ("released", 2, "/v1/jobs")
            ]
        );
    }

    /// A platform that counts its posts.
    #[derive(Default)]
    struct Counting(std::sync::atomic::AtomicUsize);

    #[async_trait::async_trait]
    impl Connector for Counting {
        fn kind(&self) -> ConnectorKind {
            ConnectorKind::Sandbox
        }
        async fn create(&self, _: &WorkspaceId, _: &Outgoing) -> Sent {
            self.0.fetch_add(1, Ordering::SeqCst);
            Sent::Refused(harmonia_connectors::Refusal::Failed)
        }
        async fn read_back(&self, _: Lookup<'_>) -> Result<Found, ReadBackFailed> {
            Ok(Found::Missing)
        }
        async fn check(&self) -> Result<Checked, Code> {
            Ok(Checked::NothingToCheck("nothing"))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_held_effect_is_reported_after_the_platform_was_called_and_answers_after_its_release() {
        let dir = harmonia_testkit::temp_dir();
        let file = dir.path().join("ready");
        let platform = Arc::new(Counting::default());
        let held = Arc::new(HeldEffects::new(platform.clone(), Drill::new(Duration::from_secs(2), Some(file.clone()))));
        let post = Outgoing {
            idempotency_key: "ws:key".into(),
            platform: harmonia_contracts::domain::Platform::Bluesky,
            body: "text".into(),
            provenance: harmonia_contracts::tool::Provenance::Mock,
            reply: None,
        };
        let task = tokio::spawn({
            let held = held.clone();
            async move { held.send(&"demo".parse().expect("ws"), &post).await }
        });
        tokio::task::yield_now().await;
        assert_eq!(platform.0.load(Ordering::SeqCst), 1, "the platform was called before the hold");
        assert_eq!(
            lines(&file),
            vec![json!({"signal": "holding", "hold": 1, "kind": "effect", "connector": "sandbox"})]
        );
        assert!(!task.is_finished(), "the caller waits for the hold");
        assert_eq!(
            task.await.expect("join"),
            Sent::Refused(harmonia_connectors::Refusal::Failed),
            "the platform's own answer"
        );
        assert_eq!(lines(&file)[1]["signal"], "released");
        assert_eq!(held.kind(), ConnectorKind::Sandbox);
    }
}
