//! The store of a data directory opened for reading only ([`crate::Local::open_reading`]):
//! every record is read from the data file as it is, and a change to it is refused with the
//! disk's fault; only what a read itself leaves behind — a specialist's session and its
//! activity record (`ask`), a console sign-in (`serve`) — is kept in a scratch file of this
//! process under the system's temporary folder, and goes with it.

use std::sync::Arc;

use async_trait::async_trait;
use harmonia_contracts::ids::{DocId, WorkspaceId};
use harmonia_store::{Collection, Document, Error, Query, Store, Write};
use harmonia_store_sqlite::SqliteStore;

/// The data file, read as it is, and a scratch file for what reading leaves behind.
pub(crate) struct Scratched {
    data: Arc<dyn Store>,
    scratch: SqliteStore,
    /// Removed with the process's last handle.
    _dir: tempfile::TempDir,
}

impl Scratched {
    /// Over `data`, with a scratch file in a new temporary folder.
    pub(crate) fn over(data: Arc<dyn Store>) -> Result<Self, harmonia_contracts::Error> {
        let dir = tempfile::Builder::new().prefix("harmonia-reading-").tempdir().map_err(|e| {
            harmonia_contracts::Error::new(
                harmonia_contracts::Code::StoreUnavailable,
                "The data directory cannot be written, and no scratch file could be made in the system's temporary folder to read it with.",
            )
            .with_cause(e)
        })?;
        let scratch = SqliteStore::open(dir.path().join("scratch.sqlite"))?;
        Ok(Self { data, scratch, _dir: dir })
    }
}

/// Whether documents of `collection` are what reading leaves behind: sessions (short-lived),
/// console sign-ins; activity records are written there too, but read from the data file.
fn scratch_reads(collection: Collection) -> bool {
    collection.is_short_lived() || collection == harmonia_auth::sessions::SESSIONS
}

fn scratch_writes(collection: Collection) -> bool {
    scratch_reads(collection) || collection == harmonia_agents::runtime::ACTIVITY
}

impl Scratched {
    /// Where documents of `collection` are read.
    fn read_from(&self, collection: Collection) -> &dyn Store {
        if scratch_reads(collection) { &self.scratch } else { &*self.data }
    }
}

#[async_trait]
impl Store for Scratched {
    async fn get(&self, ws: &WorkspaceId, of: Collection, id: &DocId) -> Result<Option<Document>, Error> {
        self.read_from(of).get(ws, of, id).await
    }

    async fn query(&self, ws: &WorkspaceId, of: Collection, query: &Query) -> Result<Vec<Document>, Error> {
        self.read_from(of).query(ws, of, query).await
    }

    /// A commit goes wholly to one file: the scratch one when it writes nothing else, the data
    /// file (which refuses it) otherwise.
    async fn commit(&self, workspace: &WorkspaceId, writes: Vec<Write>) -> Result<(), Error> {
        let to: &dyn Store =
            if writes.iter().all(|w| scratch_writes(w.collection)) { &self.scratch } else { &*self.data };
        to.commit(workspace, writes).await
    }
}
