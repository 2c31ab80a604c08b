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
