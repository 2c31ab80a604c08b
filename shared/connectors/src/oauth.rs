//! OAuth 2.0 bearer tokens with refresh (RFC 6749 §6), for the platforms that grant them to a
//! channel: LinkedIn and X.
//!
//! A channel's secrets give an access token and, to keep it alive, a refresh token with the
//! OAuth client's id (and secret, for a confidential client). Each call is made with the
//! current access token. A token the platform said has expired is refreshed before the call;
//! a 401 (a token expired early or revoked) refreshes it once and makes the call again, which
//! is safe for a create too: a 401 means the platform made nothing. Refreshing is
//! single-flight: calls that met the same stale token wait for one refresh.
//!
//! Refreshed tokens outlive the process. X rotates refresh tokens (each is good for one
//! refresh), so a pair kept only in memory would leave the next process, or the next Cloud
//! Run instance, holding a spent one. They are kept in the store ([`TOKENS`], in the `system`
//! workspace), sealed with AES-256-GCM under a key derived from the channel's own secrets,
//! which the store never sees: a reader of the store learns nothing of the tokens, and only a
//! process holding the same secrets finds the entry (its id is derived from them too). When
//! the secrets file is given new credentials, their entry is a new one and the old is no
//! longer read. Two instances refreshing at once: the second's refresh is refused (its refresh
//! token was just spent), and it adopts the pair the first kept.

use std::sync::Arc;

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use base64::Engine;
use chrono::{DateTime, Utc};
use harmonia_contracts::body;
use harmonia_contracts::ids::{DocId, WorkspaceId};
use harmonia_store::{Collection, Store};
use hmac::{KeyInit, Mac};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

/// Where refreshed tokens are kept, sealed, in the system workspace
/// ([`harmonia_contracts::ids::SYSTEM_WORKSPACE`]).
pub const TOKENS: Collection = Collection::new("channel_tokens");

/// The longest token endpoint answer read (64 KiB): a token answer is a few hundred bytes.
pub const MAX_TOKEN_RESPONSE_BYTES: usize = 64 << 10;

/// How long before its stated expiry a token is refreshed rather than used.
const EXPIRY_MARGIN: chrono::Duration = chrono::Duration::seconds(60);

/// How the OAuth client authenticates at the token endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    /// HTTP Basic with the client id and secret when there is a secret, else the client id in
    /// the form (a public client): X.
    Basic,
    /// The client id and secret in the form: LinkedIn.
    Form,
}

/// A channel's OAuth 2.0 credentials as its secrets give them.
#[derive(Clone)]
pub struct Credentials {
    /// The platform's token endpoint.
    pub token_url: String,
    /// The OAuth client's id (needed to refresh).
    pub client_id: Option<String>,
    /// The OAuth client's secret, for a confidential client.
    pub client_secret: Option<SecretString>,
    /// The access token.
    pub access_token: SecretString,
    /// The refresh token, when the channel has one.
    pub refresh_token: Option<SecretString>,
    /// How the client authenticates at the token endpoint.
    pub client_auth: ClientAuth,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("token_url", &self.token_url)
            .field("client_id", &self.client_id)
            .field("refreshable", &self.refresh_token.is_some())
            .finish_non_exhaustive()
    }
}

/// The HTTP client a connector whose calls take at most `timeout` uses, its session's token
/// calls included.
pub fn client(timeout: std::time::Duration) -> Result<reqwest::Client, harmonia_contracts::Error> {
    reqwest::Client::builder().timeout(timeout).build().map_err(|e| {
        harmonia_contracts::Error::new(harmonia_contracts::Code::InvalidConfig, "the HTTP client could not be built")
            .with_cause(e)
    })
}

/// Tokens in use.
#[derive(Clone)]
struct Tokens {
    access: SecretString,
    refresh: Option<SecretString>,
    expires_at: Option<DateTime<Utc>>,
}

/// The tokens as sealed for the store.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Plain {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_at: Option<i64>,
}

/// The stored entry: the sealed tokens and when they were kept.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Sealed {
    nonce: String,
    sealed: String,
    #[serde(with = "harmonia_contracts::time::rfc3339")]
    saved_at: DateTime<Utc>,
}

/// A token endpoint's answer (RFC 6749 §5.1), the fields read.
#[derive(Deserialize)]
struct Granted {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_in: Option<i64>,
}

/// A token endpoint's successful answer: the new access token, the new refresh token when the
/// platform rotated it, and how many seconds the access token lives, when it said; `None` when
/// the bytes are not that.
pub fn decode_token_answer(bytes: &[u8]) -> Option<(String, Option<String>, Option<i64>)> {
    if bytes.len() > MAX_TOKEN_RESPONSE_BYTES {
        return None;
    }
    let granted: Granted = serde_json::from_slice(bytes).ok()?;
    let usable = |t: &str| !t.is_empty() && t.len() <= 8192 && t.bytes().all(|b| b.is_ascii_graphic());
    if !usable(&granted.access_token) || granted.refresh_token.as_deref().is_some_and(|t| !usable(t)) {
        return None;
    }
    let lives = granted.expires_in.filter(|s| (1..=10 * 365 * 86_400).contains(s));
    Some((granted.access_token, granted.refresh_token, lives))
}

/// Where a channel's refreshed tokens are kept: the store, the entry's id and the sealing key.
struct Keep {
    store: Arc<dyn Store>,
    id: DocId,
    key: LessSafeKey,
}

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

impl Keep {
    /// The entry of the channel `label` (its platform and handle) holding `credentials`: its id
    /// and key are derived from the credentials as the secrets give them.
    fn new(store: Arc<dyn Store>, label: &str, credentials: &Credentials) -> Option<Self> {
        let mut material = Vec::new();
        for part in [
            Some(label),
            credentials.client_id.as_deref(),
            credentials.client_secret.as_ref().map(ExposeSecret::expose_secret),
            Some(credentials.access_token.expose_secret()),
            credentials.refresh_token.as_ref().map(ExposeSecret::expose_secret),
        ] {
            material.extend_from_slice(part.unwrap_or_default().as_bytes());
            material.push(0);
        }
        let derive = |what: &[u8]| {
            let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&material).ok()?;
            mac.update(b"harmonia channel tokens v1: ");
            mac.update(what);
            Some(mac.finalize().into_bytes())
        };
        let id = format!("tok-{}", &hex::encode(derive(b"id")?)[..40]).parse().ok()?;
        let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &derive(b"key")?).ok()?);
        Some(Self { store, id, key })
    }

    fn system() -> WorkspaceId {
        WorkspaceId::from_literal(harmonia_contracts::ids::SYSTEM_WORKSPACE)
    }

    /// The kept tokens and the entry's version; `None` when there are none, or they cannot be
    /// opened (they were sealed under other credentials).
    async fn load(&self) -> Option<(Tokens, u64)> {
        let doc = match self.store.get(&Self::system(), TOKENS, &self.id).await {
            Ok(doc) => doc?,
            Err(e) => {
                tracing::warn!(code = %e.code(), "the channel's refreshed tokens could not be read");
                return None;
            }
        };
        let sealed: Sealed = doc.decode().ok()?;
        let b64 = base64::engine::general_purpose::STANDARD;
        let nonce = Nonce::try_assume_unique_for_key(&b64.decode(sealed.nonce).ok()?).ok()?;
        let mut bytes = b64.decode(sealed.sealed).ok()?;
        let opened = self.key.open_in_place(nonce, Aad::from(self.id.as_str().as_bytes()), &mut bytes).ok()?;
        let plain: Plain = serde_json::from_slice(opened).ok()?;
        let tokens = Tokens {
            access: SecretString::from(plain.access_token),
            refresh: plain.refresh_token.map(SecretString::from),
            expires_at: plain.expires_at.and_then(|s| DateTime::from_timestamp(s, 0)),
        };
        Some((tokens, doc.version))
    }

    /// Keep `tokens` over the entry at `version` (or as a new entry); whether they were kept.
    async fn save(&self, tokens: &Tokens, version: Option<u64>) -> bool {
        let plain = Plain {
            access_token: tokens.access.expose_secret().to_owned(),
            refresh_token: tokens.refresh.as_ref().map(|r| r.expose_secret().to_owned()),
            expires_at: tokens.expires_at.map(|t| t.timestamp()),
        };
        let Ok(mut bytes) = serde_json::to_vec(&plain) else { return false };
        let mut nonce = [0u8; NONCE_LEN];
        if SystemRandom::new().fill(&mut nonce).is_err() {
            return false;
        }
        let aad = Aad::from(self.id.as_str().as_bytes());
        if self.key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), aad, &mut bytes).is_err() {
            return false;
        }
        let b64 = base64::engine::general_purpose::STANDARD;
        let sealed = Sealed { nonce: b64.encode(nonce), sealed: b64.encode(bytes), saved_at: Utc::now() };
        let Ok(data) = harmonia_store::encode(&sealed) else { return false };
        let ws = Self::system();
        let kept = match version {
            Some(v) => harmonia_store::update(&*self.store, &ws, TOKENS, &self.id, data, v).await.map(|_| true),
            None => harmonia_store::create(&*self.store, &ws, TOKENS, &self.id, data).await,
        };
        match kept {
            Ok(kept) => kept,
            Err(e) => {
                tracing::warn!(code = %e.code(), "the channel's refreshed tokens could not be kept");
                false
            }
        }
    }
}

/// The tokens in use and the kept entry's version they came from.
struct Current {
    tokens: Tokens,
    version: Option<u64>,
    loaded: bool,
}

/// A channel's OAuth 2.0 session: the current tokens, refreshed as needed.
pub struct Session {
    credentials: Credentials,
    http: reqwest::Client,
    current: tokio::sync::Mutex<Current>,
    keep: Option<Keep>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("credentials", &self.credentials).finish_non_exhaustive()
    }
}

/// Whether the token endpoint refused the refresh, or could not be asked.
enum Refreshed {
    /// New tokens are in use.
    Yes,
    /// The endpoint refused (a spent or revoked refresh token), or there is nothing to refresh
    /// with.
    Refused,
    /// The endpoint did not answer usably.
    Unreachable,
}

impl Session {
    /// A session over `credentials`, keeping refreshed tokens in `store` under the channel
    /// `label` (its platform and handle); with no store, they live as long as the process.
    pub fn new(credentials: Credentials, http: reqwest::Client, store: Option<Arc<dyn Store>>, label: &str) -> Self {
        let keep = store.and_then(|s| Keep::new(s, label, &credentials));
        let tokens = Tokens {
            access: credentials.access_token.clone(),
            refresh: credentials.refresh_token.clone(),
            expires_at: None,
        };
        let current = tokio::sync::Mutex::new(Current { tokens, version: None, loaded: false });
        Self { credentials, http, current, keep }
    }

    /// Send the request `build` makes with an access token; on a 401, refresh the token once
    /// and send it again. `None` when no answer came (the caller cannot tell what happened),
    /// or the token endpoint could not be reached to refresh a refused token.
    pub async fn send(&self, build: impl Fn(&str) -> reqwest::RequestBuilder) -> Option<reqwest::Response> {
        let token = self.token().await;
        let response = build(token.expose_secret()).send().await.ok()?;
        if response.status().as_u16() != 401 {
            return Some(response);
        }
        match self.refresh(&token).await {
            Refreshed::Yes => {
                let token = self.token().await;
                build(token.expose_secret()).send().await.ok()
            }
            Refreshed::Refused => Some(response),
            // The token endpoint did not answer: no more is known than of a call that got no
            // answer (the 401 says only that the token in hand is done).
            Refreshed::Unreachable => None,
        }
    }

    /// The access token to use now: the kept one once loaded, refreshed first when it is known
    /// to have expired.
    async fn token(&self) -> SecretString {
        let stale = {
            let mut current = self.current.lock().await;
            if !current.loaded {
                current.loaded = true;
                if let Some((tokens, version)) = match &self.keep {
                    Some(keep) => keep.load().await,
                    None => None,
                } {
                    current.tokens = tokens;
                    current.version = Some(version);
                }
            }
            let expired = current.tokens.expires_at.is_some_and(|at| at - EXPIRY_MARGIN <= Utc::now());
            if !expired || current.tokens.refresh.is_none() {
                return current.tokens.access.clone();
            }
            current.tokens.access.clone()
        };
        let _ = self.refresh(&stale).await;
        self.current.lock().await.tokens.access.clone()
    }

    /// Refresh the tokens, unless another call already replaced `stale`.
    async fn refresh(&self, stale: &SecretString) -> Refreshed {
        let mut current = self.current.lock().await;
        if current.tokens.access.expose_secret() != stale.expose_secret() {
            return Refreshed::Yes;
        }
        // Another instance may have refreshed (and spent the refresh token held here).
        if let Some((kept, version)) = self.kept_newer(current.version).await {
            current.tokens = kept;
            current.version = Some(version);
            return Refreshed::Yes;
        }
        let Some(refresh) = current.tokens.refresh.clone() else { return Refreshed::Refused };
        let Some(client_id) = self.credentials.client_id.as_deref() else { return Refreshed::Refused };
        let mut form = vec![("grant_type", "refresh_token"), ("refresh_token", refresh.expose_secret())];
        let mut request = self.http.post(&self.credentials.token_url);
        match (self.credentials.client_auth, &self.credentials.client_secret) {
            (ClientAuth::Basic, Some(secret)) => request = request.basic_auth(client_id, Some(secret.expose_secret())),
            (ClientAuth::Form, Some(secret)) => {
                form.push(("client_id", client_id));
                form.push(("client_secret", secret.expose_secret()));
            }
            (_, None) => form.push(("client_id", client_id)),
        }
        let Ok(mut response) = request.form(&form).send().await else { return Refreshed::Unreachable };
        let status = response.status().as_u16();
        let Ok(bytes) = body::read(&mut response, MAX_TOKEN_RESPONSE_BYTES).await else {
            return Refreshed::Unreachable;
        };
        if !(200..300).contains(&status) {
            // The endpoint's error names the grant; only the status is logged.
            tracing::warn!(status, "the platform refused to refresh the channel's access token");
            // A spent refresh token: another instance may have just refreshed with it.
            return match self.kept_newer(current.version).await {
                Some((kept, version)) => {
                    current.tokens = kept;
                    current.version = Some(version);
                    Refreshed::Yes
                }
                None if status >= 500 => Refreshed::Unreachable,
                None => Refreshed::Refused,
            };
        }
        let Some((access, rotated, lives)) = decode_token_answer(&bytes) else { return Refreshed::Unreachable };
        let tokens = Tokens {
            access: SecretString::from(access),
            // A platform that does not rotate answers without one: the old one stays good.
            refresh: rotated.map(SecretString::from).or(Some(refresh)),
            expires_at: lives.map(|s| Utc::now() + chrono::Duration::seconds(s)),
        };
        if let Some(keep) = &self.keep {
            if keep.save(&tokens, current.version).await {
                current.version = Some(current.version.map_or(1, |v| v + 1));
            } else if let Some((kept, version)) = keep.load().await {
                // Another instance kept a pair first; this one's is good too, but the kept
                // pair is the one every instance will read next.
                current.version = Some(version);
                if kept.refresh.as_ref().map(ExposeSecret::expose_secret)
                    != tokens.refresh.as_ref().map(ExposeSecret::expose_secret)
                {
                    tracing::info!("another instance refreshed the channel's tokens at the same time");
                }
            }
        }
        current.tokens = tokens;
        Refreshed::Yes
    }

    /// The kept tokens, when they are newer than `version`.
    async fn kept_newer(&self, version: Option<u64>) -> Option<(Tokens, u64)> {
        let (tokens, kept) = self.keep.as_ref()?.load().await?;
        (Some(kept) > version).then_some((tokens, kept))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_answer_is_read_only_in_its_documented_shape() {
        let answer = br#"{"token_type":"bearer","expires_in":7200,"access_token":"AAA","scope":"tweet.write","refresh_token":"RRR"}"#;
        assert_eq!(decode_token_answer(answer), Some(("AAA".into(), Some("RRR".into()), Some(7200))));
        assert_eq!(decode_token_answer(br#"{"access_token":"AAA"}"#), Some(("AAA".into(), None, None)));
        for bad in [
            &br#"{"access_token":""}"#[..],
            br#"{"access_token":"with space"}"#,
            br#"{"access_token":"A","refresh_token":"\n"}"#,
            br#"{"error":"invalid_grant"}"#,
            b"\xff",
        ] {
            assert_eq!(decode_token_answer(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(decode_token_answer(br#"{"access_token":"A","expires_in":-5}"#).map(|t| t.2), Some(None));
    }

    fn credentials(access: &str) -> Credentials {
        Credentials {
            token_url: "http://127.0.0.1:9/token".into(),
            client_id: Some("client".into()),
            client_secret: Some(SecretString::from("client-secret")),
            access_token: SecretString::from(access.to_owned()),
            refresh_token: Some(SecretString::from("refresh-1")),
            client_auth: ClientAuth::Basic,
        }
    }

    #[tokio::test]
    async fn kept_tokens_are_sealed_and_found_only_with_the_same_secrets() {
        let (_dir, store) = crate::testing::store();
        let keep = Keep::new(store.clone(), "x @fieldnotes", &credentials("access-1")).expect("keep");
        let tokens = Tokens {
            access: SecretString::from("access-2"),
            refresh: Some(SecretString::from("refresh-2")),
            expires_at: DateTime::from_timestamp(2_000_000_000, 0),
        };
        assert!(keep.save(&tokens, None).await);
        assert!(!keep.save(&tokens, None).await, "a second create loses to the first");
        let (loaded, version) = keep.load().await.expect("kept");
        assert_eq!(loaded.access.expose_secret(), "access-2");
        assert_eq!(loaded.refresh.as_ref().map(ExposeSecret::expose_secret), Some("refresh-2"));
        assert_eq!(loaded.expires_at, tokens.expires_at);
        assert_eq!(version, 1);
        assert!(keep.save(&tokens, Some(1)).await);
        assert!(!keep.save(&tokens, Some(1)).await, "an update over a newer entry is refused");

        // Nothing of the tokens is readable in the store.
        let docs = harmonia_store::scan_all(&*store, &Keep::system(), TOKENS).await.expect("scan");
        let stored = serde_json::to_string(&docs.iter().map(|d| &d.data).collect::<Vec<_>>()).expect("json");
        assert!(!stored.contains("access-2") && !stored.contains("refresh-2"), "{stored}");

        // Other secrets (a new access token in the file) find another entry, and none.
        let other = Keep::new(store.clone(), "x @fieldnotes", &credentials("access-9")).expect("keep");
        assert_ne!(other.id, keep.id);
        assert!(other.load().await.is_none());
        // An entry sealed under other secrets, put where this one looks, does not open.
        let moved = Keep { store: store.clone(), id: other.id.clone(), key: keep.key };
        assert!(moved.save(&tokens, None).await);
        assert!(other.load().await.is_none(), "sealed under another key and id");
    }
}
