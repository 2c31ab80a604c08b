//! Bearer credentials for operators, shared by the operator API and Nova. A credential names
//! one operator and the one workspace it may see; the workspace always comes from the
//! credential, never from a request body. Only SHA-256 digests are kept; a credential is shown
//! once, when it is issued. When deployed, callers may instead present Google-signed ID tokens
//! ([`GoogleIdTokens`], verified against a fetched and cached [`KeySet`]).

mod google;

use std::collections::HashMap;
use std::sync::Arc;

pub use google::{GoogleIdTokens, KeySet};

use harmonia_contracts::ids::{OperatorId, WorkspaceId};
use harmonia_contracts::{Code, Error};
use serde::{Deserialize, Serialize};
use sha2::Digest;

/// Who a credential belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    /// The operator.
    pub operator: OperatorId,
    /// The only workspace the credential can see.
    pub workspace: WorkspaceId,
}

/// The accepted credentials: operator bearer credentials by digest (the embedded default) and,
/// when deployed, Google-signed ID tokens.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    /// Lowercase hex SHA-256 of a credential → its identity.
    pub digests: HashMap<String, Identity>,
    /// Google ID-token verification, when configured.
    #[serde(skip)]
    pub google: Option<Arc<GoogleIdTokens>>,
}

fn digest(credential: &str) -> String {
    hex::encode(sha2::Sha256::digest(credential.as_bytes()))
}

impl Credentials {
    /// Add a credential.
    pub fn insert(&mut self, credential: &str, identity: Identity) {
        self.digests.insert(digest(credential), identity);
    }

    /// A fresh random credential for `identity` (returned once; only its digest is kept).
    pub fn issue(&mut self, identity: Identity) -> String {
        let credential = format!("hop_{}{}", uuid_hex(), uuid_hex());
        self.insert(&credential, identity);
        credential
    }

    /// The identity behind an `Authorization` header value (`Bearer <credential>`).
    pub async fn authenticate(&self, authorization: Option<&str>) -> Result<Identity, Error> {
        let value = authorization.ok_or_else(|| Error::from_code(Code::Unauthenticated))?;
        let token = value
            .strip_prefix("Bearer ")
            .or_else(|| value.strip_prefix("bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| Error::from_code(Code::Unauthenticated))?;
        if let Some(google) = &self.google
            && GoogleIdTokens::looks_like(token)
        {
            return google.verify(token).await;
        }
        self.digests.get(&digest(token)).cloned().ok_or_else(|| Error::from_code(Code::Unauthenticated))
    }
}

fn uuid_hex() -> String {
    // 122 random bits each; two of them make a credential.
    uuid::Uuid::new_v4().simple().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_issued_credentials_authenticate() {
        let mut c = Credentials::default();
        let who = Identity { operator: "ana".parse().expect("op"), workspace: "ws".parse().expect("ws") };
        let token = c.issue(who.clone());
        assert_eq!(c.authenticate(Some(&format!("Bearer {token}"))).await.ok(), Some(who));
        for bad in [None, Some(""), Some("Bearer "), Some("Basic abc"), Some("Bearer hop_nope"), Some(token.as_str())] {
            assert_eq!(c.authenticate(bad).await.err().map(|e| e.code), Some(Code::Unauthenticated), "{bad:?}");
        }
        assert!(!serde_json::to_string(&c).unwrap_or_default().contains(&token), "only digests are stored");
    }
}
