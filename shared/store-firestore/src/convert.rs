//! JSON <-> Firestore value conversion. Integers stay integers (beyond `i64` is refused),
//! other numbers become doubles; non-JSON Firestore types read back as corrupt data.

use chrono::{DateTime, Utc};
use firestore::gcloud_sdk::google::firestore::v1 as fs;
use firestore::gcloud_sdk::prost_types::Timestamp;
use harmonia_store::Error;
use serde_json::{Map, Number, Value};
use std::collections::HashMap;

use fs::value::ValueType;

pub(crate) fn to_firestore(value: &Value) -> Result<fs::Value, Error> {
    let value_type = match value {
        Value::Null => ValueType::NullValue(0),
        Value::Bool(b) => ValueType::BooleanValue(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => ValueType::IntegerValue(i),
            (None, Some(_), _) => {
                return Err(Error::Invalid("integers above 2^63-1 cannot be stored"));
            }
            (None, None, Some(f)) => ValueType::DoubleValue(f),
            _ => return Err(Error::Invalid("unsupported number")),
        },
        Value::String(s) => ValueType::StringValue(s.clone()),
        Value::Array(items) => {
            ValueType::ArrayValue(fs::ArrayValue { values: items.iter().map(to_firestore).collect::<Result<_, _>>()? })
        }
        Value::Object(map) => ValueType::MapValue(fs::MapValue { fields: map_fields(map)? }),
    };
    Ok(fs::Value { value_type: Some(value_type) })
}

fn map_fields(map: &Map<String, Value>) -> Result<HashMap<String, fs::Value>, Error> {
    map.iter().map(|(k, v)| Ok((k.clone(), to_firestore(v)?))).collect()
}

/// The stored fields of a document: version, write time and data.
pub(crate) fn to_firestore_map(
    data: &Map<String, Value>,
    version: u64,
    now: DateTime<Utc>,
) -> Result<HashMap<String, fs::Value>, Error> {
    let version = i64::try_from(version).map_err(|_| Error::Corrupt)?;
    let nanos = i32::try_from(now.timestamp_subsec_nanos()).unwrap_or(0);
    Ok(HashMap::from([
        ("v".to_owned(), fs::Value { value_type: Some(ValueType::IntegerValue(version)) }),
        (
            "u".to_owned(),
            fs::Value { value_type: Some(ValueType::TimestampValue(Timestamp { seconds: now.timestamp(), nanos })) },
        ),
        (
            "d".to_owned(),
            fs::Value { value_type: Some(ValueType::MapValue(fs::MapValue { fields: map_fields(data)? })) },
        ),
    ]))
}

pub(crate) fn from_firestore(value: fs::Value) -> Result<Value, Error> {
    Ok(match value.value_type {
        None | Some(ValueType::NullValue(_)) => Value::Null,
        Some(ValueType::BooleanValue(b)) => Value::Bool(b),
        Some(ValueType::IntegerValue(i)) => Value::Number(i.into()),
        Some(ValueType::DoubleValue(f)) => Value::Number(Number::from_f64(f).ok_or(Error::Corrupt)?),
        Some(ValueType::StringValue(s)) => Value::String(s),
        Some(ValueType::ArrayValue(a)) => {
            Value::Array(a.values.into_iter().map(from_firestore).collect::<Result<_, _>>()?)
        }
        Some(ValueType::MapValue(m)) => Value::Object(from_firestore_map(m)?),
        Some(_) => return Err(Error::Corrupt),
    })
}

pub(crate) fn from_firestore_map(map: fs::MapValue) -> Result<Map<String, Value>, Error> {
    // Sorted so that data read back is independent of the wire's map order.
    let mut entries: Vec<_> = map.fields.into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries.into_iter().map(|(k, v)| Ok((k, from_firestore(v)?))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_round_trips_through_firestore_values() {
        let value = json!({"s": "x", "i": -3, "f": 2.5, "b": false, "n": null, "a": [1, {"k": "v"}], "m": {}});
        let back = from_firestore(to_firestore(&value).expect("to")).expect("from");
        assert_eq!(back, value);
        assert!(to_firestore(&json!(u64::MAX)).is_err());
    }
}
