//! The operator credential's text form: `hop_<workspace>/<operator>/<secret>`.
//!
//! The workspace and operator name make authentication one direct read of the operator's
//! record (`workspaces/{workspace}/operators/{operator}`), never a scan; `/` separates them
//! because no id may contain it (ids are `[A-Za-z0-9._:-]`), and it is one of the characters
//! a bearer token may carry (RFC 6750 `b64token`). The secret is 32 random bytes as lowercase
//! hex. Only the SHA-256 digest of the whole text is stored: the secret carries 256 random
//! bits, so a digest cannot be reversed by guessing, and a slow password hash would add
//! latency to every request for nothing.

use std::fmt;

use harmonia_contracts::ids::{OperatorId, WorkspaceId};
use sha2::Digest as _;
use subtle::ConstantTimeEq as _;

/// Every operator credential starts with this.
pub const PREFIX: &str = "hop_";
/// Separates the workspace, the operator and the secret.
const SEPARATOR: char = '/';
/// Random bytes in a secret.
const SECRET_BYTES: usize = 32;

/// A fresh secret: [`SECRET_BYTES`] random bytes as lowercase hex (credentials, console
/// sessions and their CSRF tokens).
pub(crate) fn new_secret() -> String {
    hex::encode(rand::random::<[u8; SECRET_BYTES]>())
}

/// Whether `text` has the shape [`new_secret`] gives: lowercase hex of [`SECRET_BYTES`] bytes.
pub(crate) fn is_secret(text: &str) -> bool {
    text.len() == SECRET_BYTES * 2 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// An operator credential: who it names, and the secret that proves it. `Debug` never shows
/// the secret; only [`Credential::expose`] does, for the one time it is handed out.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    workspace: WorkspaceId,
    operator: OperatorId,
    secret: String,
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credential")
            .field("workspace", &self.workspace)
            .field("operator", &self.operator)
            .finish_non_exhaustive()
    }
}

impl Credential {
    /// A new credential with a fresh random secret.
    pub fn generate(workspace: WorkspaceId, operator: OperatorId) -> Self {
        let secret = new_secret();
        Self { workspace, operator, secret }
    }

    /// The credential `text` spells, or `None` when it is not one (wrong prefix, an invalid
    /// id, a secret of the wrong length or alphabet).
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.strip_prefix(PREFIX)?.split(SEPARATOR);
        let (workspace, operator, secret) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || !is_secret(secret) {
            return None;
        }
        Some(Self { workspace: workspace.parse().ok()?, operator: operator.parse().ok()?, secret: secret.to_owned() })
    }

    /// The workspace the credential belongs to.
    pub fn workspace(&self) -> &WorkspaceId {
        &self.workspace
    }

    /// The operator it names.
    pub fn operator(&self) -> &OperatorId {
        &self.operator
    }

    /// The full text, to hand to its operator once. Never log it.
    pub fn expose(&self) -> String {
        format!("{PREFIX}{}{SEPARATOR}{}{SEPARATOR}{}", self.workspace, self.operator, self.secret)
    }

    /// The lowercase hex SHA-256 of the full text: what the store keeps.
    pub fn digest(&self) -> String {
        hex::encode(sha2::Sha256::digest(self.expose().as_bytes()))
    }

    /// Whether `stored` (a lowercase hex digest) is this credential's, compared in constant
    /// time so the comparison's duration says nothing about how much of it matched.
    pub fn matches(&self, stored: &str) -> bool {
        let mine = self.digest();
        bool::from(mine.as_bytes().ct_eq(stored.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids() -> (WorkspaceId, OperatorId) {
        ("brand.eu:1".parse().expect("ws"), "ana-b".parse().expect("op"))
    }

    #[test]
    fn a_generated_credential_parses_back_and_matches_only_its_digest() {
        let (ws, op) = ids();
        let credential = Credential::generate(ws.clone(), op.clone());
        let text = credential.expose();
        assert!(text.starts_with("hop_brand.eu:1/ana-b/"), "{text}");
        let parsed = Credential::parse(&text).expect("parses");
        assert_eq!((parsed.workspace(), parsed.operator()), (&ws, &op));
        assert!(parsed.matches(&credential.digest()));
        let other = Credential::generate(ws, op);
        assert_ne!(other.expose(), text, "each secret is fresh");
        assert!(!other.matches(&credential.digest()));
        assert!(!parsed.matches(""), "an empty digest matches nothing");
    }

    #[test]
    fn malformed_texts_are_not_credentials() {
        let secret = "ab".repeat(SECRET_BYTES);
        for bad in [
            String::new(),
            format!("hop_ws/ana/{secret}/extra"),
            format!("hop_ws/{secret}"),
            format!("hop_ws/ana/{}", &secret[1..]),
            format!("hop_ws/ana/{}", secret.to_uppercase()),
            format!("hop_ws/an a/{secret}"),
            format!("hop_/ana/{secret}"),
            format!("hip_ws/ana/{secret}"),
            "a.b.c".to_owned(),
        ] {
            assert!(Credential::parse(&bad).is_none(), "{bad}");
        }
        assert!(Credential::parse(&format!("hop_ws/ana/{secret}")).is_some());
    }

    #[test]
    fn debug_output_never_shows_the_secret() {
        let (ws, op) = ids();
        let credential = Credential::generate(ws, op);
        let secret = credential.expose().rsplit('/').next().map(str::to_owned).expect("secret");
        assert!(!format!("{credential:?}").contains(&secret));
    }
}
