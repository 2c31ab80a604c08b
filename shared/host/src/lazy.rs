//! Cloud clients connected on first use.
//!
//! A function starts serving before it opens a gRPC channel to Firestore or Pub/Sub or builds
//! a Cloud Storage client (each loads credentials and TLS roots): Cloud Run counts the time to
//! the first answer as cold start, and a health check or a request that needs none of them
//! should not wait for, or hold the memory of, all of them. The first call that needs a client
//! connects it; while connecting fails, each call fails with its backend's retryable
//! `unavailable` error (a pushed delivery is then redelivered) and the next one tries again.
//! The configuration behind every client is still checked at start-up ([`crate::Config`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use harmonia_blob::{Blobs, Key, Uploads};
use harmonia_bus::{Bus, OutboundMessage};
use harmonia_contracts::ids::{DocId, WorkspaceId};
use harmonia_store::{Collection, Document, Query, Store, Write};
use tokio::sync::OnceCell;

/// How a client is made: called again after a failure.
type Connect<T, E> = Box<dyn Fn() -> Pin<Box<dyn Future<Output = Result<Arc<T>, E>> + Send>> + Send + Sync>;

/// A client made by `connect` when it is first needed, then kept.
struct Lazy<T: ?Sized, E> {
    client: OnceCell<Arc<T>>,
    connect: Connect<T, E>,
    what: &'static str,
}

impl<T: ?Sized + Send + Sync, E> Lazy<T, E> {
    fn new<F, Fut>(what: &'static str, connect: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Arc<T>, E>> + Send + 'static,
    {
        Self { client: OnceCell::new(), connect: Box::new(move || Box::pin(connect())), what }
    }

    async fn get(&self) -> Result<&Arc<T>, E> {
        self.client
            .get_or_try_init(|| async {
                let began = std::time::Instant::now();
                let made = (self.connect)().await;
                match &made {
                    Ok(_) => tracing::info!(client = self.what, ms = began.elapsed().as_millis() as u64, "connected"),
                    Err(_) => tracing::warn!(client = self.what, "could not connect; the next call tries again"),
                }
                made
            })
            .await
    }
}

/// A [`Store`] connected on first use.
pub struct LazyStore(Lazy<dyn Store, harmonia_store::Error>);

impl LazyStore {
    /// A store that `connect` makes when it is first needed.
    pub fn new<F, Fut>(what: &'static str, connect: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Arc<dyn Store>, harmonia_store::Error>> + Send + 'static,
    {
        Self(Lazy::new(what, connect))
    }
}

#[async_trait]
impl Store for LazyStore {
    async fn get(
        &self,
        workspace: &WorkspaceId,
        collection: Collection,
        id: &DocId,
    ) -> Result<Option<Document>, harmonia_store::Error> {
        self.0.get().await?.get(workspace, collection, id).await
    }

    async fn query(
        &self,
        workspace: &WorkspaceId,
        collection: Collection,
        query: &Query,
    ) -> Result<Vec<Document>, harmonia_store::Error> {
        self.0.get().await?.query(workspace, collection, query).await
    }

    async fn commit(&self, workspace: &WorkspaceId, writes: Vec<Write>) -> Result<(), harmonia_store::Error> {
        self.0.get().await?.commit(workspace, writes).await
    }
}

/// A [`Bus`] publisher connected on first use.
pub struct LazyBus(Lazy<dyn Bus, harmonia_bus::Error>);

impl LazyBus {
    /// A publisher that `connect` makes when it is first needed.
    pub fn new<F, Fut>(what: &'static str, connect: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Arc<dyn Bus>, harmonia_bus::Error>> + Send + 'static,
    {
        Self(Lazy::new(what, connect))
    }
}

#[async_trait]
impl Bus for LazyBus {
    async fn publish(&self, message: OutboundMessage) -> Result<String, harmonia_bus::Error> {
        self.0.get().await?.publish(message).await
    }
}

/// [`Blobs`] connected on first use; what they are is known before.
pub struct LazyBlobs {
    blobs: Lazy<dyn Blobs, harmonia_blob::Error>,
    describe: String,
}

impl LazyBlobs {
    /// Blobs that `connect` makes when first needed, described as `describe` until then.
    pub fn new<F, Fut>(describe: String, connect: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Arc<dyn Blobs>, harmonia_blob::Error>> + Send + 'static,
    {
        Self { blobs: Lazy::new("blobs", connect), describe }
    }
}

#[async_trait]
impl Blobs for LazyBlobs {
    async fn write(&self, key: &Key, bytes: Vec<u8>) -> Result<(), harmonia_blob::Error> {
        self.blobs.get().await?.write(key, bytes).await
    }

    async fn read(&self, key: &Key, limit: u64) -> Result<Option<Vec<u8>>, harmonia_blob::Error> {
        self.blobs.get().await?.read(key, limit).await
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }
}

/// [`Uploads`] connected on first use; their bucket is known before.
pub struct LazyUploads {
    uploads: Lazy<dyn Uploads, harmonia_blob::Error>,
    bucket: String,
}

impl LazyUploads {
    /// Uploads in `bucket` that `connect` makes when first needed.
    pub fn new<F, Fut>(bucket: String, connect: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Arc<dyn Uploads>, harmonia_blob::Error>> + Send + 'static,
    {
        Self { uploads: Lazy::new("uploads", connect), bucket }
    }
}

#[async_trait]
impl Uploads for LazyUploads {
    fn bucket(&self) -> &str {
        &self.bucket
    }

    async fn fetch(&self, object: &str, generation: i64, limit: u64) -> Result<Option<Vec<u8>>, harmonia_blob::Error> {
        self.uploads.get().await?.fetch(object, generation, limit).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A store that connects on the `n`th try only.
    fn flaky(tries: Arc<AtomicUsize>, succeeds_at: usize, dir: std::path::PathBuf) -> LazyStore {
        LazyStore::new("test store", move || {
            let (tries, dir) = (tries.clone(), dir.clone());
            async move {
                if tries.fetch_add(1, Ordering::SeqCst) + 1 < succeeds_at {
                    return Err(harmonia_store::Error::Unavailable { kind: "connect".into() });
                }
                let store = harmonia_store_sqlite::SqliteStore::open(dir.join("lazy.sqlite"))?;
                Ok(Arc::new(store) as Arc<dyn Store>)
            }
        })
    }

    #[tokio::test]
    async fn a_client_is_made_at_its_first_use_once_and_a_failed_connection_is_tried_again() {
        let dir = harmonia_testkit::temp_dir();
        let tries = Arc::new(AtomicUsize::new(0));
        let store = flaky(tries.clone(), 2, dir.path().to_path_buf());
        assert_eq!(tries.load(Ordering::SeqCst), 0, "nothing connects before it is used");
        let (ws, id): (WorkspaceId, DocId) = ("ws".parse().expect("ws"), "doc".parse().expect("id"));
        let first = store.get(&ws, Collection::new("notes"), &id).await;
        assert!(
            matches!(first, Err(harmonia_store::Error::Unavailable { .. })),
            "a failed connection is the backend's retryable error"
        );
        let data = harmonia_store::encode(&serde_json::json!({"n": 1})).expect("data");
        harmonia_store::create_if_absent(&store, &ws, Collection::new("notes"), &id, data)
            .await
            .expect("then it works");
        assert!(store.get(&ws, Collection::new("notes"), &id).await.expect("read").is_some());
        assert_eq!(tries.load(Ordering::SeqCst), 2, "connected once it succeeded, and kept");
    }
}
