//! The public trend-signal dataset: imported from JSON (an array of trend signals) or CSV
//! (`id,topic,summary,source,url,score,observed_at,provenance`), validated against the
//! trend-signal type, and stored under the `public` scope.

use harmonia_contracts::domain::TrendSignal;
use harmonia_contracts::ids::WorkspaceId;
use harmonia_contracts::{Code, Error};
use harmonia_store::{Collection, Store, Write, WriteOp, encode};

/// Where trend signals live.
pub const TREND_SIGNALS: Collection = Collection::new("trend_signals");

/// The scope of public data (trend signals are not any tenant's).
pub fn public() -> WorkspaceId {
    "public".parse().unwrap_or_else(|_| WorkspaceId::generate())
}

fn invalid(why: &'static str) -> Error {
    Error::new(Code::InvalidDocument, why)
}

/// Parse a JSON array of trend signals.
pub fn from_json(text: &str) -> Result<Vec<TrendSignal>, Error> {
    serde_json::from_str(text).map_err(|_| invalid("trend signals must be a JSON array of trend-signal objects"))
}

/// Split one CSV line (RFC 4180 quoting).
fn fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    out.push(field);
    out
}

/// Parse CSV with the header `id,topic,summary,source,url,score,observed_at,provenance`.
pub fn from_csv(text: &str) -> Result<Vec<TrendSignal>, Error> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = lines.next().ok_or_else(|| invalid("empty CSV"))?;
    if fields(header) != ["id", "topic", "summary", "source", "url", "score", "observed_at", "provenance"] {
        return Err(invalid("the CSV header must be id,topic,summary,source,url,score,observed_at,provenance"));
    }
    lines
        .map(|line| {
            let f = fields(line);
            let [id, topic, summary, source, url, score, observed_at, provenance] = f.as_slice() else {
                return Err(invalid("every CSV row has 8 fields"));
            };
            let value = serde_json::json!({
                "id": id, "topic": topic, "summary": summary, "source": source,
                "url": if url.is_empty() { serde_json::Value::Null } else { url.clone().into() },
                "score": score.parse::<u8>().map_err(|_| invalid("score must be 0-100"))?,
                "observed_at": observed_at, "provenance": provenance,
            });
            let mut value = value;
            if value["url"].is_null() {
                value.as_object_mut().map(|o| o.remove("url"));
            }
            serde_json::from_value(value).map_err(|_| invalid("a CSV row is not a valid trend signal"))
        })
        .collect()
}

/// Store signals (replacing any with the same id).
pub async fn import(store: &dyn Store, signals: &[TrendSignal]) -> Result<usize, Error> {
    for chunk in signals.chunks(200) {
        let writes = chunk
            .iter()
            .map(|s| {
                Ok(Write {
                    collection: TREND_SIGNALS,
                    id: s.id.as_str().parse()?,
                    op: WriteOp::Upsert(encode(s).map_err(Error::from)?),
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        store.commit(&public(), writes).await.map_err(Error::from)?;
    }
    Ok(signals.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_samples_parse_in_both_formats() {
        let json = from_json(include_str!("../../../examples/trend-signals.json")).expect("json");
        let csv = from_csv(include_str!("../../../examples/trend-signals.csv")).expect("csv");
        assert!(json.len() >= 5 && csv.len() >= 3);
        assert!(from_csv("id,topic\nx,y").is_err());
        assert_eq!(fields("a,\"b, c\",\"d \"\"e\"\"\""), ["a", "b, c", "d \"e\""]);
    }
}
