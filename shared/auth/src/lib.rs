//! Who may call Harmonia's HTTP functions (operator API, ingest, Nova), and with which role.
//!
//! A caller presents `Authorization: Bearer <credential>`; the workspace always comes from
//! what the credential proves, never from a request.
//!
//! - Operator credentials ([`credential`]): `hop_<workspace>/<operator>/<secret>`. The
//!   records live in the store ([`operators`]): one per operator name in each workspace, with
//!   the role (`operator` or `admin`) and the SHA-256 digest of the current credential only.
//!   Authenticating is one direct read of the record the credential names and a constant-time
//!   digest comparison; nothing is cached, so a revocation holds on the next request in every
//!   function. A credential is shown once, when it is issued.
//! - Google-signed ID tokens ([`GoogleIdTokens`], verified against a fetched and cached
//!   [`KeySet`]), when deployed: the token's verified email is mapped to an operator and a
//!   workspace by configuration, and such a caller has the role [`Role::Operator`]. Admin
//!   actions (managing credentials) need an admin operator credential, so the people who can
//!   change who has access are exactly the ones recorded in the store.
//! - Console sessions ([`sessions`]): a browser signs in once with either of the above and then
//!   holds an HttpOnly session cookie; its state-changing requests carry the session's CSRF
//!   token. A session ends at sign-out, after its lifetime, or when its credential is revoked
//!   or rotated.

pub mod credential;
mod google;
pub mod operators;
pub mod sessions;

use std::fmt;
use std::sync::Arc;

pub use credential::Credential;
pub use google::{GoogleIdTokens, KeySet, MAX_KEY_SET_BYTES, Principal, decode_key_set};

use harmonia_contracts::ids::{OperatorId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use harmonia_store::Store;
use serde::{Deserialize, Serialize};

/// What an authenticated caller may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Read the workspace, submit sources, decide at the gates, ask Nova.
    Operator,
    /// Everything an operator may, and manage the workspace's operators.
    Admin,
}

impl Role {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }
}

/// Who a caller is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    /// The operator.
    pub operator: OperatorId,
    /// The only workspace the caller can see.
    pub workspace: WorkspaceId,
    /// What the caller may do there.
    pub role: Role,
}

/// The accepted credentials: operator credentials checked against their records in the
/// store, and, when deployed, Google-signed ID tokens.
#[derive(Clone)]
pub struct Credentials {
    store: Arc<dyn Store>,
    google: Option<Arc<GoogleIdTokens>>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials").field("google", &self.google).finish_non_exhaustive()
    }
}

impl Credentials {
    /// Operator credentials whose records live in `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store, google: None }
    }

    /// The same, also accepting Google ID tokens that `google` verifies.
    pub fn with_google(mut self, google: GoogleIdTokens) -> Self {
        self.google = Some(Arc::new(google));
        self
    }

    /// The identity behind an `Authorization` header value (`Bearer <credential>`). A missing,
    /// malformed, unknown, revoked or wrong credential is `unauthenticated`; a store that
    /// cannot be read is `store_unavailable` (the caller may retry), never a refusal.
    pub async fn authenticate(&self, authorization: Option<&str>) -> Result<Identity, Error> {
        self.identify(authorization).await.map(|(who, _)| who)
    }

    /// Sign in to the console with an `Authorization` header value, as [`Self::authenticate`]
    /// checks it: a new session for that identity (see [`sessions`]).
    pub async fn sign_in(&self, authorization: Option<&str>) -> Result<(Identity, sessions::Opened), Error> {
        let (who, basis) = self.identify(authorization).await?;
        let opened = sessions::open(&*self.store, &who, basis, chrono::Utc::now()).await?;
        Ok((who, opened))
    }

    /// The open session a console cookie holds (see [`sessions::authenticate`]).
    pub async fn session(&self, token: &str) -> Result<sessions::Session, Error> {
        sessions::authenticate(&*self.store, token, chrono::Utc::now()).await
    }

    /// Sign out: the session never authenticates again.
    pub async fn sign_out(&self, token: &str) -> Result<(), Error> {
        sessions::close(&*self.store, token).await
    }

    /// The identity behind the header, and what a session opened with it would stand on.
    async fn identify(&self, authorization: Option<&str>) -> Result<(Identity, sessions::Basis), Error> {
        let refused = || Error::from_code(Code::Unauthenticated);
        let value = authorization.ok_or_else(refused)?;
        let token = value
            .strip_prefix("Bearer ")
            .or_else(|| value.strip_prefix("bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(refused)?;
        // The prefix decides: an operator credential may contain dots (ids do) and so look
        // like a JWT, but no Google token starts with `hop_`.
        if token.starts_with(credential::PREFIX) {
            let credential = Credential::parse(token).ok_or_else(refused)?;
            let who = operators::authenticate(&*self.store, &credential).await?;
            return Ok((who, sessions::Basis::Credential { digest: credential.digest() }));
        }
        match &self.google {
            Some(google) if GoogleIdTokens::looks_like(token) => {
                Ok((google.verify(token).await?, sessions::Basis::Google))
            }
            _ => Err(refused()),
        }
    }
}

#[cfg(test)]
mod tests {
    use harmonia_store_sqlite::SqliteStore;

    use super::*;

    #[tokio::test]
    async fn only_issued_active_credentials_authenticate() {
        let dir = harmonia_testkit::temp_dir();
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("auth.db")).expect("store"));
        let credentials = Credentials::new(store.clone());
        let ws: WorkspaceId = "ws".parse().expect("ws");
        let (ana, cli) = ("ana".parse().expect("op"), "cli".parse().expect("op"));
        let issued = operators::add(&*store, &ws, &ana, Role::Admin, &cli).await.expect("add");
        let token = issued.credential.clone();
        let who = Identity { operator: ana.clone(), workspace: ws.clone(), role: Role::Admin };
        assert_eq!(credentials.authenticate(Some(&format!("Bearer {token}"))).await.ok(), Some(who));
        let forged = format!("{}0", &token[..token.len() - 1]);
        let forged = if forged == token { format!("{}1", &token[..token.len() - 1]) } else { forged };
        let elsewhere = token.replacen("hop_ws/", "hop_other/", 1);
        for bad in [
            None,
            Some(""),
            Some("Bearer "),
            Some("Basic abc"),
            Some("Bearer hop_nope"),
            Some(token.as_str()),
            Some(&*format!("Bearer {forged}")),
            Some(&*format!("Bearer {elsewhere}")),
            Some("Bearer a.b.c"),
        ] {
            assert_eq!(
                credentials.authenticate(bad).await.err().map(|e| e.code),
                Some(Code::Unauthenticated),
                "{bad:?}"
            );
        }
        let stored = store.get(&ws, operators::OPERATORS, &"ana".parse().expect("id")).await.expect("get");
        let stored = serde_json::to_string(&stored.expect("record").data).expect("json");
        assert!(!stored.contains(&token), "only the digest is stored");
        assert!(!stored.contains(token.rsplit('/').next().expect("secret")), "not even the secret alone");
    }
}
