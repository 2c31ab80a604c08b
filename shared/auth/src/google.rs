//! Google-signed ID tokens, as Cloud Run callers present them when Harmonia is deployed.
//!
//! A token is accepted only if it is an RS256 JWT signed by one of the configured keys (a JWKS
//! document, e.g. Google's published certificates), its issuer is Google, its audience is the
//! service's, it has not expired, and its verified email is mapped to an operator identity.

use std::collections::HashMap;

use base64::Engine as _;
use harmonia_contracts::{Code, Error};
use serde::Deserialize;

use crate::Identity;

/// Clock skew tolerated on `exp`, seconds.
const LEEWAY_SECS: i64 = 60;
const ISSUERS: [&str; 2] = ["https://accounts.google.com", "accounts.google.com"];

/// Verifies Google ID tokens and maps their emails to identities.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GoogleIdTokens {
    audience: String,
    /// Key id → (modulus, exponent), big-endian.
    keys: HashMap<String, (Vec<u8>, Vec<u8>)>,
    principals: HashMap<String, Identity>,
}

#[derive(Deserialize)]
struct Jwks {
    keys: Vec<Jwk>,
}

#[derive(Deserialize)]
struct Jwk {
    kid: String,
    kty: String,
    n: String,
    e: String,
}

#[derive(Deserialize)]
struct Header {
    alg: String,
    kid: String,
}

#[derive(Deserialize)]
struct Claims {
    iss: String,
    aud: String,
    exp: i64,
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    email_verified: Option<bool>,
}

fn b64(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).ok()
}

fn refused() -> Error {
    Error::from_code(Code::Unauthenticated)
}

impl GoogleIdTokens {
    /// From a JWKS document, the expected audience, and the email → identity table.
    pub fn new(jwks: &str, audience: &str, principals: HashMap<String, Identity>) -> Result<Self, Error> {
        let bad = || Error::new(Code::InvalidDocument, "the JWKS document is not valid");
        let parsed: Jwks = serde_json::from_str(jwks).map_err(|_| bad())?;
        let keys = parsed
            .keys
            .into_iter()
            .filter(|k| k.kty == "RSA")
            .map(|k| Ok((k.kid, (b64(&k.n).ok_or_else(bad)?, b64(&k.e).ok_or_else(bad)?))))
            .collect::<Result<HashMap<_, _>, Error>>()?;
        if keys.is_empty() || audience.is_empty() {
            return Err(bad());
        }
        Ok(Self { audience: audience.to_owned(), keys, principals })
    }

    /// Whether `token` has the shape of a JWT.
    pub fn looks_like(token: &str) -> bool {
        token.split('.').count() == 3
    }

    /// The identity of a valid token at unix time `now`.
    pub fn verify(&self, token: &str, now: i64) -> Result<Identity, Error> {
        let mut parts = token.split('.');
        let (Some(h), Some(p), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err(refused());
        };
        let header: Header = serde_json::from_slice(&b64(h).ok_or_else(refused)?).map_err(|_| refused())?;
        if header.alg != "RS256" {
            return Err(refused());
        }
        let (n, e) = self.keys.get(&header.kid).ok_or_else(refused)?;
        let signature = b64(s).ok_or_else(refused)?;
        let message = &token[..h.len() + 1 + p.len()];
        ring::signature::RsaPublicKeyComponents { n, e }
            .verify(&ring::signature::RSA_PKCS1_2048_8192_SHA256, message.as_bytes(), &signature)
            .map_err(|_| refused())?;
        let claims: Claims = serde_json::from_slice(&b64(p).ok_or_else(refused)?).map_err(|_| refused())?;
        if !ISSUERS.contains(&claims.iss.as_str()) || claims.aud != self.audience || claims.exp + LEEWAY_SECS < now {
            return Err(refused());
        }
        if claims.email_verified != Some(true) {
            return Err(refused());
        }
        let email = claims.email.ok_or_else(refused)?.to_ascii_lowercase();
        self.principals.get(&email).cloned().ok_or_else(|| Error::from_code(Code::Authorization))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = include_str!("../testdata/test-signing-key.rsa.b64");

    fn enc(bytes: &[u8]) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    struct Signer(ring::rsa::KeyPair);

    impl Signer {
        fn new() -> Self {
            let der = base64::engine::general_purpose::STANDARD.decode(KEY.trim()).expect("base64 key");
            Self(ring::rsa::KeyPair::from_der(&der).expect("PKCS#1 test key"))
        }

        fn jwks(&self, kid: &str) -> String {
            let parts: ring::rsa::PublicKeyComponents<Vec<u8>> = self.0.public().into();
            let strip = |b: &[u8]| b.iter().skip_while(|x| **x == 0).copied().collect::<Vec<u8>>();
            let (n, e) = (strip(&parts.n), strip(&parts.e));
            serde_json::json!({"keys": [{"kid": kid, "kty": "RSA", "alg": "RS256", "use": "sig", "n": enc(&n), "e": enc(&e)}]}).to_string()
        }

        fn token(&self, kid: &str, claims: serde_json::Value) -> String {
            let header = enc(serde_json::json!({"alg": "RS256", "kid": kid, "typ": "JWT"}).to_string().as_bytes());
            let payload = enc(claims.to_string().as_bytes());
            let message = format!("{header}.{payload}");
            let mut sig = vec![0; self.0.public().modulus_len()];
            self.0
                .sign(
                    &ring::signature::RSA_PKCS1_SHA256,
                    &ring::rand::SystemRandom::new(),
                    message.as_bytes(),
                    &mut sig,
                )
                .expect("sign");
            format!("{message}.{}", enc(&sig))
        }
    }

    fn claims(aud: &str, exp: i64, email: &str, verified: bool) -> serde_json::Value {
        serde_json::json!({"iss": "https://accounts.google.com", "aud": aud, "exp": exp, "iat": exp - 3600,
                           "email": email, "email_verified": verified, "sub": "1234"})
    }

    #[test]
    fn only_valid_google_tokens_for_mapped_principals_pass() {
        let signer = Signer::new();
        let who = Identity { operator: "ana".parse().expect("op"), workspace: "ws".parse().expect("ws") };
        let principals = HashMap::from([("ana@example.com".to_owned(), who.clone())]);
        let v =
            GoogleIdTokens::new(&signer.jwks("k1"), "https://operator.example.run.app", principals).expect("verifier");
        let now = 1_800_000_000;
        let aud = "https://operator.example.run.app";
        let good = signer.token("k1", claims(aud, now + 600, "Ana@example.com", true));
        assert_eq!(v.verify(&good, now).ok(), Some(who));
        let code = |t: &str| v.verify(t, now).err().map(|e| e.code);
        assert_eq!(
            code(&signer.token("k1", claims("https://other", now + 600, "ana@example.com", true))),
            Some(Code::Unauthenticated)
        );
        assert_eq!(
            code(&signer.token("k1", claims(aud, now - 600, "ana@example.com", true))),
            Some(Code::Unauthenticated),
            "expired"
        );
        assert_eq!(
            code(&signer.token("k1", claims(aud, now + 600, "ana@example.com", false))),
            Some(Code::Unauthenticated)
        );
        assert_eq!(
            code(&signer.token("k2", claims(aud, now + 600, "ana@example.com", true))),
            Some(Code::Unauthenticated),
            "unknown key"
        );
        assert_eq!(
            code(&signer.token("k1", claims(aud, now + 600, "eve@example.com", true))),
            Some(Code::Authorization),
            "no mapping"
        );
        let mut forged = good.clone();
        forged.replace_range(forged.len() - 8.., "AAAAAAAA");
        assert_eq!(code(&forged), Some(Code::Unauthenticated), "bad signature");
        let (h, rest) = good.split_once('.').expect("jwt");
        let other_claims = enc(claims(aud, now + 99_999, "ana@example.com", true).to_string().as_bytes());
        let sig = rest.rsplit_once('.').expect("sig").1;
        assert_eq!(code(&format!("{h}.{other_claims}.{sig}")), Some(Code::Unauthenticated), "tampered claims");
    }
}
