//! What the connectors' tests share: a workspace, a live post, a store for kept tokens and an
//! OAuth 2.0 session against a recorded platform.

use std::sync::Arc;

use harmonia_contracts::domain::Platform;
use harmonia_contracts::ids::WorkspaceId;
use harmonia_contracts::tool::Provenance;
use harmonia_store::Store;
use secrecy::SecretString;

use crate::Outgoing;
use crate::oauth::{ClientAuth, Credentials, Session, client};

/// The workspace the tests post for.
pub(crate) fn ws() -> &'static WorkspaceId {
    static WS: std::sync::LazyLock<WorkspaceId> = std::sync::LazyLock::new(|| "ws".parse().expect("ws"));
    &WS
}

/// A live post of `body` to `platform` under `key`, replying to nothing.
pub(crate) fn live(platform: Platform, key: &str, body: &str) -> Outgoing {
    Outgoing { idempotency_key: key.into(), platform, body: body.into(), provenance: Provenance::Live, reply: None }
}

/// A new SQLite store (it goes with the directory).
pub(crate) fn store() -> (harmonia_testkit::TempDir, Arc<dyn Store>) {
    let dir = harmonia_testkit::temp_dir();
    let store = harmonia_store_sqlite::SqliteStore::open(dir.path().join("s.db")).expect("store");
    (dir, Arc::new(store))
}

/// A session of the client `(id, secret)` authenticating as `client_auth` at `token_url`, with
/// `access` and, when given, `refresh`, keeping refreshed tokens in `store`.
pub(crate) fn session(
    token_url: &str,
    (client_id, client_secret): (&str, &str),
    (access, refresh): (&str, Option<&str>),
    client_auth: ClientAuth,
    store: Option<Arc<dyn Store>>,
) -> (Session, reqwest::Client) {
    let http = client(std::time::Duration::from_secs(5)).expect("client");
    let credentials = Credentials {
        token_url: token_url.to_owned(),
        client_id: Some(client_id.to_owned()),
        client_secret: Some(SecretString::from(client_secret.to_owned())),
        access_token: SecretString::from(access.to_owned()),
        refresh_token: refresh.map(|r| SecretString::from(r.to_owned())),
        client_auth,
    };
    (Session::new(credentials, http.clone(), store, "the channel under test"), http)
}
