//! W3C trace context (`traceparent`), parsed at the edge.

use std::fmt;
use std::str::FromStr;

use rand::RngExt;
use serde::{Deserialize, Deserializer, Serialize};

use crate::error::{Code, Error};

/// A W3C `traceparent`: `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`, lowercase,
/// with non-zero ids. New ids are random, never derived from job ids.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "String")]
pub struct TraceParent {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    flags: u8,
}

impl TraceParent {
    /// A new root context with random trace and span ids, sampled.
    pub fn new_root() -> Self {
        let mut rng = rand::rng();
        let mut trace_id = [0u8; 16];
        let mut span_id = [0u8; 8];
        while trace_id == [0; 16] {
            rng.fill(&mut trace_id);
        }
        while span_id == [0; 8] {
            rng.fill(&mut span_id);
        }
        Self { trace_id, span_id, flags: 1 }
    }

    /// A child context: same trace, new random span id.
    pub fn child(&self) -> Self {
        let mut rng = rand::rng();
        let mut span_id = [0u8; 8];
        while span_id == [0; 8] || span_id == self.span_id {
            rng.fill(&mut span_id);
        }
        Self { trace_id: self.trace_id, span_id, flags: self.flags }
    }

    /// The 32-hex-digit trace id.
    pub fn trace_id(&self) -> String {
        hex::encode(self.trace_id)
    }

    /// The 16-hex-digit span id.
    pub fn span_id(&self) -> String {
        hex::encode(self.span_id)
    }

    /// Whether the sampled flag is set.
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "00-{}-{}-{:02x}", self.trace_id(), self.span_id(), self.flags)
    }
}

impl From<TraceParent> for String {
    fn from(t: TraceParent) -> String {
        t.to_string()
    }
}

fn lower_hex<const N: usize>(part: &str) -> Option<[u8; N]> {
    if part.len() != N * 2 || !part.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    let mut out = [0u8; N];
    hex::decode_to_slice(part, &mut out).ok()?;
    Some(out)
}

impl FromStr for TraceParent {
    type Err = Error;
    fn from_str(raw: &str) -> Result<Self, Error> {
        let bad = || Error::from_code(Code::InvalidTraceparent);
        let mut parts = raw.split('-');
        let (Some(version), Some(trace), Some(span), Some(flags), None) =
            (parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        if version != "00" {
            return Err(bad());
        }
        let trace_id = lower_hex::<16>(trace).filter(|t| *t != [0; 16]).ok_or_else(bad)?;
        let span_id = lower_hex::<8>(span).filter(|s| *s != [0; 8]).ok_or_else(bad)?;
        let [flags] = lower_hex::<1>(flags).ok_or_else(bad)?;
        Ok(Self { trace_id, span_id, flags })
    }
}

impl<'de> Deserialize<'de> for TraceParent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

fixed_schema!(TraceParent, {
    "type": "string",
    "description": "W3C traceparent (version 00) with non-zero ids.",
    "pattern": "^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$"
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_random_and_round_trip() {
        let a = TraceParent::new_root();
        let b = TraceParent::new_root();
        assert_ne!(a.trace_id(), b.trace_id());
        assert_eq!(a.to_string().parse::<TraceParent>().ok(), Some(a.clone()));
        let child = a.child();
        assert_eq!(child.trace_id(), a.trace_id());
        assert_ne!(child.span_id(), a.span_id());
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert_eq!(bad.parse::<TraceParent>().err().map(|e| e.code), Some(Code::InvalidTraceparent), "{bad}");
        }
        assert!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".parse::<TraceParent>().is_ok());
    }
}

macro_rules! hex_id {
    ($(#[$doc:meta])* $name:ident, $len:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl FromStr for $name {
            type Err = Error;
            fn from_str(raw: &str) -> Result<Self, Error> {
                let ok = raw.len() == $len
                    && raw.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                    && raw.bytes().any(|b| b != b'0');
                if ok { Ok(Self(raw.to_owned())) } else { Err(Error::from_code(Code::InvalidTraceparent)) }
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        fixed_schema!($name, {
            "type": "string",
            "pattern": concat!("^(?!0{", $len, "})[0-9a-f]{", $len, "}$")
        });
    };
}

hex_id!(
    /// A W3C trace id: 32 lowercase hex digits, not all zero.
    TraceId, 32
);
hex_id!(
    /// A W3C span id: 16 lowercase hex digits, not all zero.
    SpanId, 16
);

impl TraceParent {
    /// The trace id as a typed value.
    pub fn trace(&self) -> TraceId {
        TraceId(self.trace_id())
    }

    /// The span id as a typed value.
    pub fn span(&self) -> SpanId {
        SpanId(self.span_id())
    }
}
