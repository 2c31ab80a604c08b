//! References to content-addressed blobs: large, immutable byte strings (a long source's
//! transcript and frames) kept outside the document store, which holds only the reference.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use sha2::Digest as _;

use crate::error::{Code, Error};

/// A SHA-256 digest: 64 lower-case hexadecimal digits.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Sha256Hex(String);

impl Sha256Hex {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(hex::encode(sha2::Sha256::digest(bytes)))
    }

    /// The 64 digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Sha256Hex {
    type Err = Error;
    fn from_str(raw: &str) -> Result<Self, Error> {
        if raw.len() == 64 && raw.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            Ok(Self(raw.to_owned()))
        } else {
            Err(Error::new(Code::InvalidId, "a SHA-256 digest is 64 lower-case hexadecimal digits"))
        }
    }
}

impl<'de> Deserialize<'de> for Sha256Hex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(|e: Error| serde::de::Error::custom(e.message))
    }
}

impl fmt::Display for Sha256Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fixed_schema!(Sha256Hex, {"type": "string", "pattern": "^[0-9a-f]{64}$"});

/// A blob, named by what it holds: the SHA-256 of its bytes and their number. The same bytes
/// always have the same reference, and bytes read back are accepted only when both match.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BlobRef {
    /// SHA-256 of the bytes.
    pub sha256: Sha256Hex,
    /// Length in bytes.
    pub bytes: u64,
}

impl BlobRef {
    /// The reference of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self { sha256: Sha256Hex::of(bytes), bytes: bytes.len() as u64 }
    }

    /// Whether `bytes` are exactly the blob this names.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        bytes.len() as u64 == self.bytes && Sha256Hex::of(bytes) == self.sha256
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_names_exactly_its_bytes() {
        let r = BlobRef::of(b"hello");
        assert_eq!(r.sha256.as_str(), "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
        assert_eq!(r.bytes, 5);
        assert!(r.matches(b"hello"));
        assert!(!r.matches(b"hellO"));
        assert!(!r.matches(b"hello "));
    }

    #[test]
    fn a_digest_is_parsed_once_and_refuses_anything_else() {
        let good = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
        assert!(good.parse::<Sha256Hex>().is_ok());
        for bad in ["", &good[..63], &good.to_uppercase(), &format!("{}g", &good[..63]), "../../etc/passwd"] {
            assert_eq!(bad.parse::<Sha256Hex>().expect_err(bad).code, Code::InvalidId, "{bad}");
        }
        let json = serde_json::json!({"sha256": "nope", "bytes": 1});
        assert!(serde_json::from_value::<BlobRef>(json).is_err());
    }
}
