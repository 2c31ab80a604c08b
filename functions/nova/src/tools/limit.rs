//! `Limit`: how many items a trend tool returns, 1 to 10.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use harmonia_contracts::{Code, Error};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize};

/// How many items a tool returns: 1 to 10 (tool contract), parsed once at the edge. A value
/// outside the range is refused with `out_of_range`, never clamped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Limit(u8);

impl Limit {
    /// The smallest limit.
    pub const MIN: u8 = 1;
    /// The largest limit.
    pub const MAX: u8 = 10;
    /// The limit when a call names none.
    pub const DEFAULT: Limit = Limit(5);

    /// The limit as a count.
    pub fn get(self) -> usize {
        usize::from(self.0)
    }
}

impl Default for Limit {
    fn default() -> Self {
        Self::DEFAULT
    }
}

fn out_of_range() -> Error {
    Error::new(Code::OutOfRange, "The limit must be an integer from 1 to 10.")
}

impl TryFrom<i64> for Limit {
    type Error = Error;
    fn try_from(n: i64) -> Result<Self, Error> {
        u8::try_from(n).ok().filter(|n| (Self::MIN..=Self::MAX).contains(n)).map(Limit).ok_or_else(out_of_range)
    }
}

impl TryFrom<u64> for Limit {
    type Error = Error;
    fn try_from(n: u64) -> Result<Self, Error> {
        i64::try_from(n).map_err(|_| out_of_range()).and_then(Limit::try_from)
    }
}

impl FromStr for Limit {
    type Err = Error;
    fn from_str(raw: &str) -> Result<Self, Error> {
        let n: i64 = raw.trim().parse().map_err(|e| {
            Error::new(Code::InvalidRequest, "The limit must be an integer from 1 to 10.").with_cause(e)
        })?;
        Limit::try_from(n)
    }
}

impl<'de> Deserialize<'de> for Limit {
    /// Only a JSON integer: `"3"` is the wrong type, not a limit of three.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = i64::deserialize(d)?;
        Limit::try_from(n).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl JsonSchema for Limit {
    fn schema_name() -> Cow<'static, str> {
        "Limit".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "integer", "minimum": Limit::MIN, "maximum": Limit::MAX })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_one_to_ten_is_a_limit() {
        for n in [1_i64, 5, 10] {
            assert_eq!(Limit::try_from(n).map(Limit::get).ok(), usize::try_from(n).ok());
        }
        for n in [i64::MIN, -1, 0, 11, 255, 256, i64::MAX] {
            assert_eq!(Limit::try_from(n).map_err(|e| e.code), Err(Code::OutOfRange), "{n}");
        }
        assert_eq!(Limit::try_from(u64::MAX).map_err(|e| e.code), Err(Code::OutOfRange));
    }

    #[test]
    fn text_and_json_parse_at_the_edge() {
        assert_eq!("7".parse::<Limit>().map(Limit::get).ok(), Some(7));
        assert_eq!("0".parse::<Limit>().map_err(|e| e.code), Err(Code::OutOfRange));
        assert_eq!("three".parse::<Limit>().map_err(|e| e.code), Err(Code::InvalidRequest));
        assert_eq!(serde_json::from_value::<Limit>(json!(10)).ok(), Some(Limit(10)));
        assert!(serde_json::from_value::<Limit>(json!(11)).is_err());
        assert!(serde_json::from_value::<Limit>(json!("3")).is_err(), "a string is the wrong type");
        assert!(serde_json::from_value::<Limit>(json!(2.5)).is_err());
    }

    proptest::proptest! {
        #[test]
        fn a_limit_is_exactly_one_to_ten(n in proptest::num::i64::ANY) {
            let in_range = (1..=10).contains(&n);
            proptest::prop_assert_eq!(Limit::try_from(n).is_ok(), in_range);
            proptest::prop_assert_eq!(serde_json::from_value::<Limit>(json!(n)).is_ok(), in_range);
            proptest::prop_assert_eq!(n.to_string().parse::<Limit>().is_ok(), in_range);
        }
    }

    #[test]
    fn schema_states_the_range() {
        let schema = serde_json::to_value(schemars::schema_for!(Limit)).expect("schema");
        assert_eq!(
            (schema["type"].as_str(), schema["minimum"].as_u64(), schema["maximum"].as_u64()),
            (Some("integer"), Some(1), Some(10))
        );
    }
}
