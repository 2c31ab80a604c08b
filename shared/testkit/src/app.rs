//! Running a router under test: on a real socket ([`spawn_app`]) or in-process ([`oneshot`]).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Request, StatusCode};
use tokio::sync::oneshot as signal;
use tokio::task::JoinHandle;
use tower::ServiceExt as _;

/// A router served on `127.0.0.1` at an ephemeral port; it stops when [`Spawned::shutdown`] is
/// called or the handle is dropped.
#[derive(Debug)]
pub struct Spawned {
    /// The address it listens on.
    pub addr: SocketAddr,
    stop: Option<signal::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl Spawned {
    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        self.to_string()
    }

    /// Stop accepting, let in-flight requests finish, and wait for the server to end.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.expect("the server task ended cleanly");
        }
    }
}

/// Its base URL, so that a test can write `format!("{server}/path")`.
impl std::fmt::Display for Spawned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "http://{}", self.addr)
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            // The receiver is gone only if the server already stopped: nothing left to do.
            let _ = stop.send(());
        }
    }
}

/// Serve `router` on `127.0.0.1:0` and return where it listens; it is accepting connections
/// when this returns.
pub async fn spawn_app(router: Router) -> Spawned {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind an ephemeral port");
    let addr = listener.local_addr().expect("the bound address");
    spawned(listener, addr, router)
}

/// `router` served on `listener` (bound at `addr`) until stopped.
fn spawned<L>(listener: L, addr: SocketAddr, router: Router) -> Spawned
where
    L: axum::serve::Listener<Addr = SocketAddr>,
{
    let (stop, stopped) = signal::channel::<()>();
    let task = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async {
                // A dropped sender also means stop.
                let _ = stopped.await;
            })
            .await
            .expect("serve the router under test");
    });
    Spawned { addr, stop: Some(stop), task: Some(task) }
}

/// A switch that cuts the next answer a server from [`spawn_cutting`] writes: the connection
/// is closed before a byte of the answer goes out, as when a platform did the work and then lost
/// the connection. Each cut is used once.
#[derive(Clone, Debug, Default)]
pub struct Cut(Arc<AtomicBool>);

impl Cut {
    /// Cut the connection of the next answer written.
    pub fn next_answer(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A listener whose connections a [`Cut`] closes.
struct Cutting {
    inner: tokio::net::TcpListener,
    cut: Cut,
}

impl axum::serve::Listener for Cutting {
    type Io = CutStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            // A failed accept (a connection reset before it was taken) is the client's loss.
            if let Ok((stream, addr)) = self.inner.accept().await {
                return (CutStream { inner: stream, cut: self.cut.clone() }, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// A connection that fails its next write once its [`Cut`] is set, so the server closes it.
struct CutStream {
    inner: tokio::net::TcpStream,
    cut: Cut,
}

impl CutStream {
    fn cut_now(&self) -> bool {
        self.cut.0.swap(false, Ordering::SeqCst)
    }
}

impl tokio::io::AsyncRead for CutStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for CutStream {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        if self.cut_now() {
            return Poll::Ready(Err(std::io::ErrorKind::ConnectionReset.into()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        if self.cut_now() {
            return Poll::Ready(Err(std::io::ErrorKind::ConnectionReset.into()));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Serve `router` as [`spawn_app`] does; setting `cut` closes the connection of the next
/// answer.
pub async fn spawn_cutting(router: Router, cut: Cut) -> Spawned {
    let inner = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind an ephemeral port");
    let addr = inner.local_addr().expect("the bound address");
    spawned(Cutting { inner, cut }, addr, router)
}

/// Serve `app` as [`spawn_cutting`] does, until the test process ends (as every recorded
/// platform is); its base URL.
pub(crate) async fn serve_for_the_process(app: Router, cut: Cut) -> String {
    let server = spawn_cutting(app, cut).await;
    let url = server.url();
    std::mem::forget(server);
    url
}

/// What a router answered to [`oneshot`].
#[derive(Debug)]
pub struct Reply {
    /// The status code.
    pub status: StatusCode,
    /// The response headers.
    pub headers: HeaderMap,
    /// The whole body.
    pub body: Bytes,
}

impl Reply {
    /// The body as JSON; panics with the body text when it is not JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!("the {} response is not JSON ({e}): {}", self.status, String::from_utf8_lossy(&self.body))
        })
    }
}

/// Send one request straight into `router` (no socket) and collect the whole reply.
pub async fn oneshot(router: Router, request: Request<Body>) -> Reply {
    let response = router.oneshot(request).await.expect("a router's error type is Infallible");
    let (parts, body) = response.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.expect("read the response body");
    Reply { status: parts.status, headers: parts.headers, body }
}

#[cfg(test)]
mod tests {
    use axum::routing::get;

    use super::*;

    fn router() -> Router {
        Router::new().route("/hello", get(|| async { axum::Json(serde_json::json!({"hello": "world"})) }))
    }

    #[tokio::test]
    async fn oneshot_returns_status_and_json_body() {
        let reply = oneshot(router(), Request::get("/hello").body(Body::empty()).expect("request")).await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.json()["hello"], "world");
        let missing = oneshot(router(), Request::get("/nope").body(Body::empty()).expect("request")).await;
        assert_eq!(missing.status, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn a_spawned_app_answers_on_its_port_until_shut_down() {
        let app = spawn_app(router()).await;
        let addr = app.addr;
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect while serving");
        tokio::io::AsyncWriteExt::write_all(
            &mut stream,
            b"GET /hello HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
        )
        .await
        .expect("write");
        let mut answer = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut stream, &mut answer).await.expect("read");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        app.shutdown().await;
        assert!(tokio::net::TcpStream::connect(addr).await.is_err(), "the port is closed after shutdown");
    }
}
