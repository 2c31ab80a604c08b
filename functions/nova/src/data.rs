//! The public trend-signal dataset: imported from JSON (an array of trend signals) or CSV
//! (`id,topic,summary,source,url,score,observed_at,provenance`), validated against the
//! trend-signal type, and stored under the `public` scope.

use harmonia_contracts::domain::TrendSignal;
use harmonia_contracts::ids::{IdLiteral, WorkspaceId};
use harmonia_contracts::{Code, Error};
use harmonia_store::{Collection, Store, Write, WriteOp, encode};
use serde_json::{Value, json};

/// Where trend signals live.
pub const TREND_SIGNALS: Collection = Collection::new("trend_signals");

/// The scope of public data (trend signals are not any tenant's). A literal checked when the
/// crate compiles, so there is no failure to fall back from.
pub fn public() -> WorkspaceId {
    WorkspaceId::from_literal(const { IdLiteral::new("public") })
}

/// The CSV header, in order.
pub const CSV_HEADER: [&str; 8] = ["id", "topic", "summary", "source", "url", "score", "observed_at", "provenance"];

fn invalid(why: &'static str) -> Error {
    Error::new(Code::InvalidDocument, why)
}

/// Parse a JSON array of trend signals.
pub fn from_json(text: &str) -> Result<Vec<TrendSignal>, Error> {
    serde_json::from_str(text).map_err(|_| invalid("trend signals must be a JSON array of trend-signal objects"))
}

/// Parse CSV (RFC 4180: quoted fields may hold commas, quotes and line breaks) with the header
/// `id,topic,summary,source,url,score,observed_at,provenance`. An empty `url` means none.
pub fn from_csv(text: &str) -> Result<Vec<TrendSignal>, Error> {
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(text.as_bytes());
    let header = reader.headers().map_err(csv_error)?;
    if header.is_empty() {
        return Err(invalid("empty CSV"));
    }
    if header.iter().ne(CSV_HEADER) {
        return Err(invalid("the CSV header must be id,topic,summary,source,url,score,observed_at,provenance"));
    }
    reader.records().map(|row| signal(&row.map_err(csv_error)?)).collect()
}

fn csv_error(e: csv::Error) -> Error {
    match e.kind() {
        csv::ErrorKind::UnequalLengths { .. } => invalid("every CSV row has 8 fields"),
        csv::ErrorKind::Utf8 { .. } => invalid("the CSV is not UTF-8 text"),
        _ => invalid("the CSV could not be read"),
    }
}

/// One row as a trend signal, validated by the trend-signal type itself. The header was
/// checked and the reader refuses rows of another length, so fields are positional.
fn signal(row: &csv::StringRecord) -> Result<TrendSignal, Error> {
    let fields: Vec<&str> = row.iter().collect();
    let [id, topic, summary, source, url, score, observed_at, provenance] = fields.as_slice() else {
        return Err(invalid("every CSV row has 8 fields"));
    };
    let mut value = json!({
        "id": id, "topic": topic, "summary": summary, "source": source,
        "score": score.parse::<u8>().map_err(|_| invalid("score must be 0-100"))?,
        "observed_at": observed_at, "provenance": provenance,
    });
    if !url.is_empty() {
        value["url"] = Value::String((*url).to_owned());
    }
    serde_json::from_value(value).map_err(|_| invalid("a CSV row is not a valid trend signal"))
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
    }

    #[test]
    fn quoted_fields_keep_commas_quotes_and_line_breaks() {
        let text = "id,topic,summary,source,url,score,observed_at,provenance\n\
                    sig-1,\"maps, offline\",\"First line, with a comma\nsecond \"\"quoted\"\" line\",Notes,,70,2026-11-26T10:00:00Z,mock\n\
                    sig-2,sync,plain,Notes,https://example.org/a,60,2026-11-26T11:00:00Z,live\n";
        let signals = from_csv(text).expect("valid CSV");
        assert_eq!(signals.len(), 2, "the embedded line break does not start a row");
        assert_eq!(signals[0].topic, "maps, offline");
        assert_eq!(signals[0].summary, "First line, with a comma\nsecond \"quoted\" line");
        assert_eq!(signals[0].url, None);
        assert_eq!(signals[1].url.as_deref(), Some("https://example.org/a"));
    }

    #[test]
    fn bad_csv_is_a_typed_error() {
        let header = "id,topic,summary,source,url,score,observed_at,provenance\n";
        let cases = [
            ("", "empty CSV"),
            ("id,topic\nx,y\n", "the CSV header must be id,topic,summary,source,url,score,observed_at,provenance"),
            (&*format!("{header}sig-1,t,s,src,,70,2026-11-26T10:00:00Z\n"), "every CSV row has 8 fields"),
            (&*format!("{header}sig-1,t,s,src,,700,2026-11-26T10:00:00Z,mock\n"), "score must be 0-100"),
            (&*format!("{header}sig-1,t,s,src,,70,yesterday,mock\n"), "a CSV row is not a valid trend signal"),
        ];
        for (text, why) in cases {
            let err = from_csv(text).expect_err(why);
            assert_eq!((err.code, err.message.as_ref()), (Code::InvalidDocument, why));
        }
    }

    #[test]
    fn public_data_has_its_own_fixed_scope() {
        assert_eq!(public().as_str(), "public");
        assert_eq!(public(), public(), "never a generated id");
    }
}
