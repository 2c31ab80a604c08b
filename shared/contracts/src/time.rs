//! How times are written in documents and envelopes: RFC 3339 in UTC with exactly nine
//! fraction digits and `Z` (`2026-03-01T09:30:13.486000000Z`).
//!
//! Stores compare these strings when a query orders by a time field. With a variable fraction
//! (`…13.486Z` against `…13.4861Z`) string order is not time order — `Z` sorts after every
//! digit — so "the newest" could be the wrong document. A fixed width makes the two orders
//! agree for every year from 0000 to 9999. Reading accepts any RFC 3339 time (any fraction,
//! any offset), so documents written before this format still load, as long as it falls in
//! those years once in UTC: an offset can move `9999-12-31T23:59:59-01:00` into year 10000,
//! which this form cannot write (nor read back).
//!
//! Use it on a field with `#[serde(with = "crate::time::rfc3339")]` (or `rfc3339_option` for
//! an `Option`) and `#[schemars(with = "Timestamp")]`, which keeps the schema's `date-time`.

use chrono::{DateTime, Datelike as _, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serializer};

/// `t` as stored: RFC 3339, UTC, nine fraction digits, `Z`.
pub fn format(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Nanos, true)
}

/// Why a time was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Not RFC 3339 text.
    #[error("{0}")]
    Syntax(chrono::ParseError),
    /// An RFC 3339 time whose instant, in UTC, is before year 0000 or after year 9999.
    #[error("the time is outside the years 0000 to 9999 in UTC")]
    OutOfRange,
}

/// Any RFC 3339 time, converted to UTC; refused when that is outside the years 0000 to 9999,
/// so that every time read can be written with [`format`] and read back.
pub fn parse(s: &str) -> Result<DateTime<Utc>, Error> {
    let t = DateTime::parse_from_rfc3339(s).map_err(Error::Syntax)?.with_timezone(&Utc);
    if !(0..=9999).contains(&t.year()) {
        return Err(Error::OutOfRange);
    }
    Ok(t)
}

/// Serde for a `DateTime<Utc>` field, written with [`format`] and read with [`parse`].
pub mod rfc3339 {
    use super::*;

    /// Write `t` with [`format`](super::format).
    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format(t))
    }

    /// Read any RFC 3339 time.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        super::parse(&s).map_err(|e| serde::de::Error::custom(format_args!("not an RFC 3339 time: {e}")))
    }
}

/// Serde for an `Option<DateTime<Utc>>` field (`null` or absent is `None`); pair it with
/// `#[serde(default)]` when the field may be absent.
pub mod rfc3339_option {
    use super::*;

    /// Write `Some(t)` with [`format`](super::format), `None` as `null`.
    pub fn serialize<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_some(&super::format(t)),
            None => s.serialize_none(),
        }
    }

    /// Read `null` or any RFC 3339 time.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
        let s = <Option<std::borrow::Cow<'de, str>>>::deserialize(d)?;
        s.map(|s| super::parse(&s))
            .transpose()
            .map_err(|e| serde::de::Error::custom(format_args!("not an RFC 3339 time: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde::Serialize;

    use super::*;

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct At {
        #[serde(with = "rfc3339")]
        at: DateTime<Utc>,
        #[serde(default, with = "rfc3339_option", skip_serializing_if = "Option::is_none")]
        maybe: Option<DateTime<Utc>>,
    }

    fn at(s: &str) -> DateTime<Utc> {
        parse(s).expect("a time")
    }

    #[test]
    fn every_time_is_written_with_nine_fraction_digits() {
        assert_eq!(format(&at("2026-03-01T09:30:13Z")), "2026-03-01T09:30:13.000000000Z");
        assert_eq!(format(&at("2026-03-01T09:30:13.486Z")), "2026-03-01T09:30:13.486000000Z");
        assert_eq!(format(&at("2026-03-01T09:30:13.4861+00:00")), "2026-03-01T09:30:13.486100000Z");
        assert_eq!(format(&at("2026-03-01T10:30:13.000000001+01:00")), "2026-03-01T09:30:13.000000001Z");
    }

    #[test]
    fn older_documents_with_any_fraction_or_offset_still_load() {
        for (old, want) in [
            (r#"{"at":"2026-03-01T09:30:13.486Z"}"#, "2026-03-01T09:30:13.486000000Z"),
            (r#"{"at":"2026-03-01T09:30:13.486100Z"}"#, "2026-03-01T09:30:13.486100000Z"),
            (r#"{"at":"2026-03-01T11:30:13+02:00","maybe":null}"#, "2026-03-01T09:30:13.000000000Z"),
        ] {
            let v: At = serde_json::from_str(old).expect(old);
            assert_eq!(format(&v.at), want);
            assert_eq!(v.maybe, None);
        }
        assert!(serde_json::from_str::<At>(r#"{"at":"yesterday"}"#).is_err());
        assert!(serde_json::from_str::<At>(r#"{"at":"2026-03-01 09:30:13"}"#).is_err(), "RFC 3339 needs the T");
    }

    #[test]
    fn only_times_in_years_0000_to_9999_in_utc_are_read() {
        for edge in ["0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z", "0000-01-01T00:00:00-01:00"] {
            let t = parse(edge).expect(edge);
            assert_eq!(parse(&format(&t)), Ok(t), "{edge} is written and read back");
        }
        for outside in ["9999-12-31T23:59:59-01:00", "0000-01-01T00:00:00+01:00"] {
            assert_eq!(parse(outside), Err(Error::OutOfRange), "{outside}");
        }
        assert!(matches!(parse("yesterday"), Err(Error::Syntax(_))));
    }

    #[test]
    fn an_optional_time_round_trips() {
        let v = At { at: at("2026-03-01T09:30:13Z"), maybe: Some(at("2026-03-02T00:00:00.5Z")) };
        let json = serde_json::to_string(&v).expect("json");
        assert_eq!(json, r#"{"at":"2026-03-01T09:30:13.000000000Z","maybe":"2026-03-02T00:00:00.500000000Z"}"#);
        assert_eq!(serde_json::from_str::<At>(&json).expect("back"), v);
    }

    proptest! {
        /// The property stores rely on: string order of written times is time order.
        #[test]
        fn string_order_is_time_order(a in 0i64..253_402_300_799, an in 0u32..1_000_000_000,
                                      b in 0i64..253_402_300_799, bn in 0u32..1_000_000_000) {
            let (x, y) = (
                DateTime::from_timestamp(a, an).expect("in range"),
                DateTime::from_timestamp(b, bn).expect("in range"),
            );
            prop_assert_eq!(format(&x).cmp(&format(&y)), x.cmp(&y));
            prop_assert_eq!(parse(&format(&x)).expect("parses"), x);
        }
    }
}
