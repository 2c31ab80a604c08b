//! The content hash that names an exact version of a document (what a decision approves).

/// Lowercase hex SHA-256 of the canonical JSON of `value` (object keys sorted, no spaces).
pub fn content_hash<T: serde::Serialize>(value: &T) -> String {
    use sha2::Digest;
    // The hashed documents are plain data (string keys, no custom serialisers), so turning them
    // into a JSON value cannot fail; hashing something else instead would hide that bug.
    let value = serde_json::to_value(value).expect("a hashed document serialises to JSON");
    let mut canonical = String::new();
    write_canonical(&value, &mut canonical);
    hex::encode(sha2::Sha256::digest(canonical.as_bytes()))
}

// Sorted explicitly: another crate may switch serde_json to insertion order.
fn write_canonical(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut keys: Vec<_> = map.keys().collect();
            keys.sort_unstable();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}
