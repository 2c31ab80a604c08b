//! The embedded default's blob backend: files in a folder of the data directory.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use crate::{Blobs, Error, Key};

/// Blobs as files under one folder: `{root}/workspaces/{ws}/sha256/{digest}`.
///
/// A write goes to a temporary file under `{root}/tmp`, is flushed to disk, then renamed into
/// place (and the folder flushed), so a blob is either absent or whole, even across a crash or
/// a power cut; concurrent writers of the same blob (other processes on the same data
/// directory included) each rename identical bytes over the other's.
#[derive(Clone, Debug)]
pub struct Folder {
    root: PathBuf,
}

impl Folder {
    /// Blobs under `root`, which is created when first written to.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Copy every blob of this folder that `to` lacks into `to` (each written as
    /// [`Blobs::write`] writes, so a copy is whole or absent), returning how many were copied.
    /// Backups and restores of the embedded default use it: blobs never change, so what `to`
    /// already has is left alone.
    pub async fn copy_into(&self, to: &Folder) -> Result<u64, Error> {
        let (from, to) = (self.root.clone(), to.root.clone());
        tokio::task::spawn_blocking(move || copy_all(&from, &to))
            .await
            .map_err(|_| Error::Unavailable { kind: "io:Interrupted".into() })?
    }

    fn path(&self, key: &Key) -> PathBuf {
        self.root.join(key.as_str())
    }
}

fn unavailable(e: &std::io::Error) -> Error {
    Error::Unavailable { kind: format!("io:{:?}", e.kind()) }
}

/// A write under `dir` failed: a full or unwritable disk says so, naming the folder.
fn failed_write(e: &std::io::Error, dir: &Path) -> Error {
    harmonia_contracts::storage::Fault::of_io(e, dir).map_or_else(|| unavailable(e), Error::Storage)
}

fn write_new(root: &Path, target: &Path, bytes: &[u8]) -> Result<(), Error> {
    if target.exists() {
        return Ok(());
    }
    let dir = target.parent().ok_or(Error::Unavailable { kind: "io:InvalidInput".into() })?;
    let tmp_dir = root.join("tmp");
    std::fs::create_dir_all(dir).map_err(|e| failed_write(&e, dir))?;
    std::fs::create_dir_all(&tmp_dir).map_err(|e| failed_write(&e, &tmp_dir))?;
    let tmp = tmp_dir.join(uuid::Uuid::new_v4().to_string());
    let written = (|| {
        let mut file = std::fs::File::create_new(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, target)?;
        // The rename is durable once the folder holding the new name is.
        std::fs::File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(|e| failed_write(&e, dir))
}

fn read_bounded(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, Error> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unavailable(&e)),
    };
    let len = file.metadata().map_err(|e| unavailable(&e))?.len();
    if len > limit {
        return Err(Error::TooLarge);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    // The length was checked, but the file may grow while it is read.
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| unavailable(&e))?;
    if bytes.len() as u64 > limit {
        return Err(Error::TooLarge);
    }
    Ok(Some(bytes))
}

/// Every blob file under `from` (`workspaces/{ws}/sha256/{digest}`) that `to` lacks, copied.
fn copy_all(from: &Path, to: &Path) -> Result<u64, Error> {
    let workspaces = from.join("workspaces");
    let entries = |dir: &Path| -> Result<Vec<std::fs::DirEntry>, Error> {
        match std::fs::read_dir(dir) {
            Ok(entries) => entries.collect::<Result<_, _>>().map_err(|e| unavailable(&e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(unavailable(&e)),
        }
    };
    let mut copied = 0;
    for workspace in entries(&workspaces)? {
        for blob in entries(&workspace.path().join("sha256"))? {
            let relative = blob.path().strip_prefix(from).map(Path::to_path_buf).map_err(|_| Error::Corrupt)?;
            let target = to.join(relative);
            if target.exists() {
                continue;
            }
            let bytes = std::fs::read(blob.path()).map_err(|e| unavailable(&e))?;
            write_new(to, &target, &bytes)?;
            copied += 1;
        }
    }
    Ok(copied)
}

#[async_trait]
impl Blobs for Folder {
    async fn write(&self, key: &Key, bytes: Vec<u8>) -> Result<(), Error> {
        let (root, target) = (self.root.clone(), self.path(key));
        tokio::task::spawn_blocking(move || write_new(&root, &target, &bytes))
            .await
            .map_err(|_| Error::Unavailable { kind: "io:Interrupted".into() })?
    }

    async fn read(&self, key: &Key, limit: u64) -> Result<Option<Vec<u8>>, Error> {
        let path = self.path(key);
        tokio::task::spawn_blocking(move || read_bounded(&path, limit))
            .await
            .map_err(|_| Error::Unavailable { kind: "io:Interrupted".into() })?
    }

    fn describe(&self) -> String {
        format!("folder {}", self.root.display())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn folder() -> (Arc<dyn Blobs>, harmonia_testkit::TempDir) {
        let dir = harmonia_testkit::temp_dir();
        (Arc::new(Folder::new(dir.path().join("blobs"))), dir)
    }

    crate::blob_conformance!(async { folder() });

    /// A blob is one file at its content address, and no temporary file is left behind.
    #[tokio::test]
    async fn a_blob_is_one_file_at_its_address_and_nothing_is_left_behind() {
        let dir = harmonia_testkit::temp_dir();
        let blobs = Folder::new(dir.path().join("blobs"));
        let ws: harmonia_contracts::ids::WorkspaceId = "ws-a".parse().expect("ws");
        let blob = crate::put(&blobs, &ws, b"transcript".to_vec()).await.expect("put");
        let file = dir.path().join("blobs/workspaces/ws-a/sha256").join(blob.sha256.as_str());
        assert_eq!(std::fs::read(&file).expect("the blob's file"), b"transcript");
        let tmp = std::fs::read_dir(dir.path().join("blobs/tmp")).expect("tmp").count();
        assert_eq!(tmp, 0, "the temporary file was renamed into place");
    }

    /// Copying a folder brings over exactly the blobs the other lacks, and leaves what it has.
    #[tokio::test]
    async fn a_copy_brings_over_the_blobs_the_other_folder_lacks() {
        let dir = harmonia_testkit::temp_dir();
        let (from, to) = (Folder::new(dir.path().join("a")), Folder::new(dir.path().join("b")));
        let (x, y): (harmonia_contracts::ids::WorkspaceId, harmonia_contracts::ids::WorkspaceId) =
            ("ws-x".parse().expect("ws"), "ws-y".parse().expect("ws"));
        let one = crate::put(&from, &x, b"one".to_vec()).await.expect("put");
        let two = crate::put(&from, &y, b"two".to_vec()).await.expect("put");
        crate::put(&to, &x, b"one".to_vec()).await.expect("already there");
        assert_eq!(from.copy_into(&to).await.expect("copy"), 1, "only the blob it lacked");
        assert_eq!(crate::get(&to, &x, &one).await.expect("one"), b"one");
        assert_eq!(crate::get(&to, &y, &two).await.expect("two"), b"two");
        assert_eq!(from.copy_into(&to).await.expect("again"), 0);
        // An empty or absent folder copies nothing.
        assert_eq!(Folder::new(dir.path().join("none")).copy_into(&to).await.expect("none"), 0);
    }

    /// A folder that cannot be written is `blob_unavailable`, naming no path or content.
    #[tokio::test]
    async fn an_unwritable_folder_is_unavailable() {
        let dir = harmonia_testkit::temp_dir();
        let file = dir.path().join("not-a-folder");
        std::fs::write(&file, b"x").expect("file");
        let blobs = Folder::new(&file);
        let ws: harmonia_contracts::ids::WorkspaceId = "ws-a".parse().expect("ws");
        let e = crate::put(&blobs, &ws, b"bytes".to_vec()).await.expect_err("a file is not a folder");
        assert_eq!(e.code(), harmonia_contracts::Code::BlobUnavailable);
        assert!(e.retryable());
        assert!(!e.to_string().contains("not-a-folder"), "{e}");
    }
}
