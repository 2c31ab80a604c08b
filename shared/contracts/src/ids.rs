//! Identifier newtypes, parsed once at the edge.
//!
//! Every id is 1–128 characters of `[A-Za-z0-9._:-]` and starts with a letter or digit, so it
//! is safe as a SQLite key, a Firestore document id (never `.`, `..` or `__x__`) and a Pub/Sub
//! attribute value. Generated ids are a short kind prefix and a time-ordered UUID.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize};

use crate::error::{Code, Error};

/// Longest accepted identifier, in bytes.
pub const MAX_ID_LEN: usize = 128;

/// The regular expression every identifier matches (also emitted in the JSON Schemas).
pub const ID_PATTERN: &str = "^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$";

/// Whether `raw` is a valid identifier; a `const fn` so that [`IdLiteral`] checks literals
/// while the program compiles. Only ASCII qualifies, so checking bytes is checking characters.
pub const fn is_valid_id(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    if bytes.is_empty() || bytes.len() > MAX_ID_LEN || !bytes[0].is_ascii_alphanumeric() {
        return false;
    }
    let mut i = 1;
    while i < bytes.len() {
        let c = bytes[i];
        if !(c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'-')) {
            return false;
        }
        i += 1;
    }
    true
}

fn id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-')
}

/// `text` when it is a valid id; otherwise a readable prefix of it (unsafe characters replaced
/// by `_`) joined to its SHA-256, which is valid, never longer than [`MAX_ID_LEN`], and the
/// same for the same text.
fn stable_id(text: &str) -> String {
    use sha2::Digest as _;
    if is_valid_id(text) {
        return text.to_owned();
    }
    let digest = hex::encode(sha2::Sha256::digest(text.as_bytes()));
    let room = MAX_ID_LEN - digest.len() - 1;
    let readable: String = text
        .chars()
        .skip_while(|c| !c.is_ascii_alphanumeric())
        .map(|c| if id_char(c) { c } else { '_' })
        .take(room)
        .collect();
    if readable.is_empty() { digest } else { format!("{readable}.{digest}") }
}

fn check_id(kind: &'static str, raw: &str) -> Result<(), Error> {
    if is_valid_id(raw) {
        Ok(())
    } else {
        Err(Error::new(
            Code::InvalidId,
            format!(
                "{kind} must be 1-128 characters of letters, digits, '.', '_', ':' or '-', starting with a letter or digit"
            ),
        ))
    }
}

/// An identifier written in the source, checked when the program compiles: build it in a
/// `const` (`const { IdLiteral::new("public") }`) and an invalid literal is a compile error, so
/// the id types' `from_literal` constructors need no runtime failure path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdLiteral(&'static str);

impl IdLiteral {
    /// Check `raw`; evaluated in a `const` context, an invalid id fails compilation.
    pub const fn new(raw: &'static str) -> Self {
        assert!(is_valid_id(raw), "an id literal must be a valid identifier");
        Self(raw)
    }

    /// The literal.
    pub const fn as_str(self) -> &'static str {
        self.0
    }
}

/// The workspace that holds what belongs to no brand: dead letters whose own workspace cannot
/// be read, the cross-workspace indexes, channels' refreshed tokens.
pub const SYSTEM_WORKSPACE: IdLiteral = IdLiteral::new("system");

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $kind:literal, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// A new, unique, time-ordered id.
            pub fn generate() -> Self {
                Self(format!(concat!($prefix, "_{}"), uuid::Uuid::now_v7().simple()))
            }

            /// The id a checked literal names; infallible because [`IdLiteral`] was checked.
            pub fn from_literal(literal: IdLiteral) -> Self {
                Self(literal.as_str().to_owned())
            }

            /// The id naming `text`, for ids derived from other values: `text` itself when it
            /// is a valid id, otherwise a readable prefix of it and its SHA-256. The same text
            /// always gives the same id (idempotency survives an over-long id), and different
            /// texts give different ids.
            pub fn stable(text: &str) -> Self {
                Self(stable_id(text))
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl FromStr for $name {
            type Err = Error;
            fn from_str(raw: &str) -> Result<Self, Error> {
                check_id($kind, raw)?;
                Ok(Self(raw.to_owned()))
            }
        }

        impl TryFrom<String> for $name {
            type Error = Error;
            fn try_from(raw: String) -> Result<Self, Error> {
                check_id($kind, &raw)?;
                Ok(Self(raw))
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let raw = String::deserialize(d)?;
                Self::try_from(raw).map_err(serde::de::Error::custom)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        fixed_schema!($name, {
            "type": "string",
            "pattern": ID_PATTERN,
            "description": concat!("A ", $kind, ".")
        });
    };
}

id_type!(
    /// A tenant: every document and every read is scoped to one.
    WorkspaceId, "workspace id", "ws"
);
id_type!(
    /// One source's trip through the pipeline.
    JobId, "job id", "job"
);
id_type!(
    /// An ingested source (transcript, frames, metadata).
    SourceId, "source id", "src"
);
id_type!(
    /// A citable piece of evidence: a transcript moment, a verified record or a tool result.
    EvidenceId, "evidence id", "ev"
);
id_type!(
    /// A Ryan content brief.
    BriefId, "brief id", "brief"
);
id_type!(
    /// One item of a Temi plan.
    PlanItemId, "plan item id", "item"
);
id_type!(
    /// An immutable planning snapshot.
    SnapshotId, "snapshot id", "snap"
);
id_type!(
    /// A Noni draft (one per pass).
    DraftId, "draft id", "draft"
);
id_type!(
    /// A human operator.
    OperatorId, "operator id", "op"
);
id_type!(
    /// One published stage event.
    EventId, "event id", "evt"
);
id_type!(
    /// A post on a social platform, as the platform names it.
    PostId, "post id", "post"
);
id_type!(
    /// A public trend signal.
    SignalId, "signal id", "sig"
);
id_type!(
    /// A memory-bank fact.
    FactId, "fact id", "fact"
);
id_type!(
    /// A stored document's id within its collection.
    DocId, "document id", "doc"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_parse_back() {
        let id = JobId::generate();
        assert!(id.as_str().starts_with("job_"));
        assert_eq!(id.as_str().parse::<JobId>().ok(), Some(id));
    }

    #[test]
    fn rejects_unsafe_ids() {
        for bad in ["", ".", "..", "__x__", "a/b", "é", "-lead", &"a".repeat(129)] {
            let err = bad.parse::<WorkspaceId>().expect_err(bad);
            assert_eq!(err.code, Code::InvalidId, "{bad}");
        }
        assert!("ws-1.a:b_c".parse::<WorkspaceId>().is_ok());
        assert!("a".repeat(128).parse::<WorkspaceId>().is_ok());
    }

    #[test]
    fn literals_are_checked_ids() {
        const PUBLIC: IdLiteral = IdLiteral::new("public");
        assert_eq!(WorkspaceId::from_literal(PUBLIC), "public".parse::<WorkspaceId>().expect("valid"));
        assert!(!is_valid_id("not an id") && !is_valid_id("") && !is_valid_id(&"a".repeat(129)));
        // Outside a const context an invalid literal panics; it never becomes some other id.
        assert!(std::panic::catch_unwind(|| IdLiteral::new("not an id")).is_err());
    }

    #[test]
    fn an_over_long_or_unsafe_text_gets_a_stable_valid_id() {
        let long = format!("{}.analyze.1", "j".repeat(290));
        let id = DocId::stable(&long);
        assert_eq!(id, DocId::stable(&long), "the same text, the same id");
        assert!(id.as_str().len() <= MAX_ID_LEN);
        assert_eq!(id.as_str().parse::<DocId>().ok(), Some(id.clone()));
        assert!(id.as_str().starts_with("jjjj"));
        let other = format!("{}.analyze.2", "j".repeat(290));
        assert_ne!(DocId::stable(&other), id, "texts sharing a prefix stay apart");
        assert_eq!(DocId::stable("job-1.plan.1").as_str(), "job-1.plan.1", "a valid id is kept as it is");
        for odd in ["", "../x", "é"] {
            let id = DocId::stable(odd);
            assert_eq!(id.as_str().parse::<DocId>().ok(), Some(id.clone()), "{odd}");
        }
    }

    #[test]
    fn deserialize_checks_the_pattern() {
        assert!(serde_json::from_str::<JobId>("\"job_1\"").is_ok());
        assert!(serde_json::from_str::<JobId>("\"job 1\"").is_err());
    }

    proptest::proptest! {
        #[test]
        fn parse_agrees_with_the_schema_pattern(raw in "\\PC{0,130}") {
            let re_ok = raw.len() <= MAX_ID_LEN
                && raw.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
                && raw.chars().all(|c| c.is_ascii_alphanumeric() || ".:_-".contains(c));
            proptest::prop_assert_eq!(raw.parse::<EvidenceId>().is_ok(), re_ok);
        }
    }
}
