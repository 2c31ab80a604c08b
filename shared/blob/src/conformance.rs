//! The conformance suite every [`Blobs`] backend runs unchanged.
//!
//! Each case works in fresh, unique workspaces, so cases can share one backend (one folder,
//! one emulator bucket). Backends instantiate the whole suite with
//! [`blob_conformance!`](crate::blob_conformance).

use std::sync::Arc;

use harmonia_contracts::domain::BlobRef;
use harmonia_contracts::ids::WorkspaceId;

use crate::{Blobs, Error, Key, MAX_BLOB_BYTES, get, put};

fn ws() -> WorkspaceId {
    WorkspaceId::generate()
}

/// Bytes of every value, `len` long, varying with `seed`.
fn bytes(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// What was put reads back byte for byte, under the reference of its bytes.
pub async fn put_then_get_round_trips_exact_bytes(blobs: Arc<dyn Blobs>) {
    let w = ws();
    for (len, seed) in [(0, 0), (1, 7), (4096, 1), (100_003, 2)] {
        let data = bytes(len, seed);
        let blob = put(&*blobs, &w, data.clone()).await.expect("put");
        assert_eq!(blob, BlobRef::of(&data));
        assert_eq!(get(&*blobs, &w, &blob).await.expect("get"), data, "{len} bytes");
    }
}

/// A blob of several MiB (a long source's transcript) round-trips.
pub async fn a_blob_of_several_mebibytes_round_trips(blobs: Arc<dyn Blobs>) {
    let w = ws();
    let data = bytes(6 * 1024 * 1024 + 5, 3);
    let blob = put(&*blobs, &w, data.clone()).await.expect("put");
    assert_eq!(blob.bytes, data.len() as u64);
    assert!(get(&*blobs, &w, &blob).await.expect("get") == data);
}

/// Putting the same bytes twice, or from racing tasks, gives one reference and one blob.
pub async fn putting_the_same_bytes_again_is_the_same_blob(blobs: Arc<dyn Blobs>) {
    let w = ws();
    let data = bytes(10_000, 4);
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let (blobs, w, data) = (blobs.clone(), w.clone(), data.clone());
        tasks.push(tokio::spawn(async move { put(&*blobs, &w, data).await }));
    }
    let first = put(&*blobs, &w, data.clone()).await.expect("put");
    for task in tasks {
        assert_eq!(task.await.expect("task").expect("put"), first);
    }
    assert_eq!(get(&*blobs, &w, &first).await.expect("get"), data);
}

/// A reference with nothing behind it is `Missing` (`blob_corrupt`), not an empty blob.
pub async fn a_missing_blob_is_missing(blobs: Arc<dyn Blobs>) {
    let never = BlobRef::of(b"never stored");
    let e = get(&*blobs, &ws(), &never).await.expect_err("nothing there");
    assert!(matches!(e, Error::Missing), "{e:?}");
    assert_eq!(e.code(), harmonia_contracts::Code::BlobCorrupt);
    assert!(!e.retryable());
}

/// A workspace cannot read another's blob, even knowing its reference.
pub async fn workspaces_are_isolated(blobs: Arc<dyn Blobs>) {
    let (a, b) = (ws(), ws());
    let blob = put(&*blobs, &a, b"only for a".to_vec()).await.expect("put");
    assert!(matches!(get(&*blobs, &b, &blob).await, Err(Error::Missing)));
    assert_eq!(get(&*blobs, &a, &blob).await.expect("a reads its own"), b"only for a");
}

/// An object that is not the bytes its reference names — other bytes of the same length, or
/// longer, or shorter — is refused as `Corrupt`, never returned.
pub async fn an_object_unlike_its_reference_is_refused(blobs: Arc<dyn Blobs>) {
    let w = ws();
    let good = bytes(1000, 5);
    let blob = BlobRef::of(&good);
    for bad in [bytes(1000, 6), bytes(1001, 5), bytes(999, 5)] {
        let (w, blob) = (WorkspaceId::generate(), blob.clone());
        blobs.write(&Key::new(&w, &blob), bad).await.expect("write");
        let e = get(&*blobs, &w, &blob).await.expect_err("not the named bytes");
        assert!(matches!(e, Error::Corrupt), "{e:?}");
    }
    // Untouched by the others.
    put(&*blobs, &w, good.clone()).await.expect("put");
    assert_eq!(get(&*blobs, &w, &blob).await.expect("get"), good);
}

/// A write never replaces an object that is already there.
pub async fn a_write_never_replaces_an_object(blobs: Arc<dyn Blobs>) {
    let w = ws();
    let blob = BlobRef::of(b"first");
    let key = Key::new(&w, &blob);
    blobs.write(&key, b"first".to_vec()).await.expect("first write");
    blobs.write(&key, b"second".to_vec()).await.expect("a second write is not an error");
    assert_eq!(blobs.read(&key, 100).await.expect("read").expect("present"), b"first");
}

/// A read stops at its limit: a larger object is `TooLarge`, and a put past
/// [`MAX_BLOB_BYTES`] stores nothing.
pub async fn reads_and_puts_are_bounded(blobs: Arc<dyn Blobs>) {
    let w = ws();
    let blob = put(&*blobs, &w, bytes(5000, 8)).await.expect("put");
    let key = Key::new(&w, &blob);
    assert!(matches!(blobs.read(&key, 4999).await, Err(Error::TooLarge)));
    assert_eq!(blobs.read(&key, 5000).await.expect("read").map(|b| b.len()), Some(5000));
    let huge = vec![0u8; usize::try_from(MAX_BLOB_BYTES).expect("fits") + 1];
    let huge_ref = BlobRef::of(&huge);
    assert!(matches!(put(&*blobs, &w, huge).await, Err(Error::TooLarge)));
    assert_eq!(blobs.read(&Key::new(&w, &huge_ref), 1).await.expect("read"), None);
}

/// What a conformance fixture builds: a backend, possibly with a guard that must outlive it
/// (a temporary folder, removed when the case ends).
pub trait Backend {
    /// The backend under test.
    fn blobs(&self) -> Arc<dyn Blobs>;
}

impl Backend for Arc<dyn Blobs> {
    fn blobs(&self) -> Arc<dyn Blobs> {
        self.clone()
    }
}

impl<Guard> Backend for (Arc<dyn Blobs>, Guard) {
    fn blobs(&self) -> Arc<dyn Blobs> {
        self.0.clone()
    }
}

/// Instantiate every conformance case as a `#[tokio::test]`, given an async expression that
/// builds a [`Backend`].
#[macro_export]
macro_rules! blob_conformance {
    ($make:expr) => {
        $crate::blob_conformance!(@cases $make;
            put_then_get_round_trips_exact_bytes,
            a_blob_of_several_mebibytes_round_trips,
            putting_the_same_bytes_again_is_the_same_blob,
            a_missing_blob_is_missing,
            workspaces_are_isolated,
            an_object_unlike_its_reference_is_refused,
            a_write_never_replaces_an_object,
            reads_and_puts_are_bounded,
        );
    };
    (@cases $make:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                let backend = $make.await;
                $crate::conformance::$case($crate::conformance::Backend::blobs(&backend)).await;
                drop(backend);
            }
        )*
    };
}
