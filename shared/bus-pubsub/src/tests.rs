use super::*;

/// The conformance suite, against the Pub/Sub emulator `infra/test.sh` starts (feature `e2e`).
#[cfg(feature = "e2e")]
mod emulator {
    use std::sync::Arc;

    use async_trait::async_trait;
    use harmonia_bus::Handler;
    use harmonia_bus::conformance::Fixture;
    use tokio::net::TcpListener;

    use super::super::*;

    struct PubSubFixture {
        bus: Arc<PubSubBus>,
        servers: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
    }

    impl Drop for PubSubFixture {
        fn drop(&mut self) {
            if let Ok(servers) = self.servers.lock() {
                servers.iter().for_each(tokio::task::JoinHandle::abort);
            }
        }
    }

    #[async_trait]
    impl Fixture for PubSubFixture {
        fn bus(&self) -> Arc<dyn Bus> {
            self.bus.clone()
        }
        async fn create_topic(&self, topic: &Name) {
            self.bus.create_topic(topic).await.expect("create topic");
        }
        async fn subscribe(&self, spec: SubscriptionSpec, handler: Arc<dyn Handler>) {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let port = listener.local_addr().expect("addr").port();
            let app = push::router("/push", handler);
            let server = tokio::spawn(async move {
                let _ = axum::serve(listener, app).await;
            });
            self.servers.lock().expect("lock").push(server);
            self.bus
                .create_push_subscription(&spec, &format!("http://127.0.0.1:{port}/push"))
                .await
                .expect("create push subscription");
        }
    }

    async fn fixture() -> Box<dyn Fixture> {
        harmonia_testkit::pubsub_emulator();
        let config = PubSubConfig::from_env(harmonia_testkit::unique("conformance"));
        let bus = PubSubBus::connect(config).await.expect("connect to the Pub/Sub emulator");
        Box::new(PubSubFixture { bus: Arc::new(bus), servers: std::sync::Mutex::new(Vec::new()) })
    }

    harmonia_bus::bus_conformance!(fixture());
}

#[test]
fn emulator_host_becomes_an_http_endpoint() {
    let config = PubSubConfig { project: "p".into(), emulator_endpoint: Some("http://127.0.0.1:1".into()) };
    assert_eq!(config.topic_path(&"t-1".parse().expect("t")), "projects/p/topics/t-1");
    assert_eq!(config.subscription_path(&"s-1".parse().expect("s")), "projects/p/subscriptions/s-1");
}
