//! A file's rows, read from CSV or JSON into one shape: each row's location (for errors) and
//! its non-empty fields by column name. Columns are checked against the format's spec here,
//! so a format module only validates values.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use chrono::{DateTime, Utc};
use harmonia_contracts::{Code, Error};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Format, MAX_IMPORT_ROWS};

/// The columns a format defines.
pub(super) struct Spec {
    /// Columns every file has.
    pub(super) required: &'static [&'static str],
    /// Columns a file may have.
    pub(super) optional: &'static [&'static str],
}

impl Spec {
    fn column(&self, name: &str) -> Option<&'static str> {
        self.required.iter().chain(self.optional).copied().find(|c| *c == name)
    }
}

/// Where a row is in its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Location {
    /// A CSV row starting on this line (1-based; the header is line 1).
    Line(u64),
    /// The n-th object of a JSON array (1-based).
    Item(usize),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Line(n) => write!(f, "line {n}"),
            Location::Item(n) => write!(f, "item {n}"),
        }
    }
}

/// One row: its location and its non-empty fields.
pub(super) struct Row {
    pub(super) at: Location,
    fields: BTreeMap<&'static str, String>,
}

impl Row {
    /// A row error naming the row and the column.
    pub(super) fn invalid(&self, column: &str, why: &str) -> Error {
        Error::new(Code::ImportInvalidRow, format!("At {}, column `{column}`: {why}.", self.at))
    }

    /// The field, when present and not empty.
    pub(super) fn get(&self, column: &str) -> Option<&str> {
        self.fields.get(column).map(String::as_str)
    }

    /// The field, which must be present and not empty.
    pub(super) fn required(&self, column: &str) -> Result<&str, Error> {
        self.get(column).ok_or_else(|| self.invalid(column, "a value is required"))
    }

    /// The field must be empty: it does not apply to this kind of row.
    pub(super) fn absent(&self, column: &str, why: &str) -> Result<(), Error> {
        match self.get(column) {
            Some(_) => Err(self.invalid(column, why)),
            None => Ok(()),
        }
    }

    /// Text of 1 to `max` characters.
    pub(super) fn text(&self, column: &str, max: usize) -> Result<String, Error> {
        let value = self.required(column)?;
        if value.trim().is_empty() || value.chars().count() > max {
            return Err(self.invalid(column, &format!("text of 1 to {max} characters is expected")));
        }
        Ok(value.to_owned())
    }

    /// Optional text of 1 to `max` characters.
    pub(super) fn optional_text(&self, column: &str, max: usize) -> Result<Option<String>, Error> {
        self.get(column).map(|_| self.text(column, max)).transpose()
    }

    /// A whole number from 0.
    pub(super) fn count(&self, column: &str) -> Result<u64, Error> {
        self.required(column)?.trim().parse().map_err(|_| self.invalid(column, "a whole number from 0 is expected"))
    }

    /// An RFC 3339 time with an offset (for example 2026-11-02T14:00:00Z), read as every stored
    /// time is (`harmonia_contracts::time::parse`: in years 0000 to 9999 once in UTC), so the
    /// record it goes into reads back.
    pub(super) fn time(&self, column: &str) -> Result<DateTime<Utc>, Error> {
        harmonia_contracts::time::parse(self.required(column)?.trim())
            .map_err(|_| self.invalid(column, "an RFC 3339 time such as 2026-11-02T14:00:00Z is expected"))
    }

    /// A value parsed by `FromStr` (identifiers, dates).
    pub(super) fn parsed<T: std::str::FromStr>(&self, column: &str, expected: &str) -> Result<T, Error> {
        self.required(column)?.trim().parse().map_err(|_| self.invalid(column, expected))
    }

    /// A snake_case enum value (platform, provenance), read by its serde name.
    pub(super) fn named<T: DeserializeOwned>(&self, column: &str, expected: &str) -> Result<T, Error> {
        let value = Value::String(self.required(column)?.trim().to_owned());
        serde_json::from_value(value).map_err(|_| self.invalid(column, expected))
    }
}

/// Every row of `text` made a record by `record`, the first bad row being the error; two rows
/// whose `key` is the same are refused as naming the same `what`. The one reading every import
/// format shares, so each differs only in its columns and its records.
pub(super) fn records<T, K: Ord + Clone>(
    text: &str,
    format: Format,
    spec: &Spec,
    record: impl Fn(&Row) -> Result<T, Error>,
    key: impl Fn(&T) -> K,
    what: &str,
) -> Result<Vec<T>, Error> {
    let rows = rows(text, format, spec)?;
    let records = rows.iter().map(record).collect::<Result<Vec<_>, _>>()?;
    unique(records.iter().zip(&rows).map(|(r, row)| (key(r), row.at)), what)?;
    Ok(records)
}

/// The rows of `text` in `format`, with their columns checked against `spec`.
fn rows(text: &str, format: Format, spec: &Spec) -> Result<Vec<Row>, Error> {
    let rows = match format {
        Format::Csv => csv_rows(text, spec)?,
        Format::Json => json_rows(text, spec)?,
    };
    if rows.is_empty() {
        return Err(Error::new(Code::ImportMalformed, "The import file has no rows."));
    }
    Ok(rows)
}

fn too_many() -> Error {
    Error::new(Code::ImportTooLarge, format!("An import file may hold at most {MAX_IMPORT_ROWS} rows."))
}

fn csv_rows(text: &str, spec: &Spec) -> Result<Vec<Row>, Error> {
    // Spreadsheet exports often start with a byte-order mark; it is not part of the first name.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(text.as_bytes());
    let header = reader.headers().map_err(|e| csv_error(&e))?.clone();
    if header.iter().all(str::is_empty) {
        return Err(Error::new(Code::ImportMalformed, "The import file has no header row."));
    }
    let mut columns = Vec::with_capacity(header.len());
    let mut seen = HashMap::new();
    for name in header.iter() {
        let name = name.trim();
        let column = spec.column(name).ok_or_else(|| unknown_column("The header", name, spec))?;
        if seen.insert(column, ()).is_some() {
            return Err(Error::new(Code::ImportMalformed, format!("The header names column `{column}` twice.")));
        }
        columns.push(column);
    }
    if let Some(missing) = spec.required.iter().find(|c| !seen.contains_key(*c)) {
        return Err(Error::new(
            Code::ImportMissingColumn,
            format!("The header lacks the required column `{missing}`."),
        ));
    }
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| csv_error(&e))?;
        if rows.len() == MAX_IMPORT_ROWS {
            return Err(too_many());
        }
        let line = record.position().map_or(0, csv::Position::line);
        let fields = columns
            .iter()
            .zip(record.iter())
            .filter(|(_, value)| !value.is_empty())
            .map(|(column, value)| (*column, value.to_owned()))
            .collect();
        rows.push(Row { at: Location::Line(line), fields });
    }
    Ok(rows)
}

/// A column name is what the operator must fix, so it is named; only names up to 64
/// characters are, so a file's content cannot be reflected through a long "name".
fn unknown_column(place: &str, name: &str, spec: &Spec) -> Error {
    let known: Vec<&str> = spec.required.iter().chain(spec.optional).copied().collect();
    let named = if name.chars().count() <= 64 { format!(" `{name}`") } else { String::new() };
    Error::new(
        Code::ImportUnknownColumn,
        format!("{place} has a column{named} that this format does not define (known: {}).", known.join(", ")),
    )
}

fn csv_error(e: &csv::Error) -> Error {
    match e.kind() {
        csv::ErrorKind::UnequalLengths { pos, expected_len, len } => {
            let at = pos.as_ref().map_or_else(|| "a row".to_owned(), |p| format!("line {}", p.line()));
            Error::new(
                Code::ImportInvalidRow,
                format!("At {at}, the row has {len} fields where the header has {expected_len}."),
            )
        }
        _ => Error::new(Code::ImportMalformed, "The import file is not readable CSV."),
    }
}

fn json_rows(text: &str, spec: &Spec) -> Result<Vec<Row>, Error> {
    let items: Vec<Value> = serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(text)).map_err(|e| {
        Error::new(Code::ImportMalformed, "The import file is not a JSON array of objects.").with_cause(e)
    })?;
    if items.len() > MAX_IMPORT_ROWS {
        return Err(too_many());
    }
    items
        .into_iter()
        .enumerate()
        .map(|(n, item)| {
            let at = Location::Item(n + 1);
            let Value::Object(object) = item else {
                return Err(Error::new(Code::ImportInvalidRow, format!("At {at}, the entry is not a JSON object.")));
            };
            let mut fields = BTreeMap::new();
            for (name, value) in object {
                let column =
                    spec.column(&name).ok_or_else(|| unknown_column(&format!("The object at {at}"), &name, spec))?;
                let text = match value {
                    Value::Null => continue,
                    Value::String(s) => s,
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    Value::Array(_) | Value::Object(_) => {
                        return Err(Error::new(
                            Code::ImportInvalidRow,
                            format!("At {at}, column `{column}`: a string or a number is expected."),
                        ));
                    }
                };
                if !text.is_empty() {
                    fields.insert(column, text);
                }
            }
            Ok(Row { at, fields })
        })
        .collect()
}

/// Refuse two rows naming the same record, naming both rows.
fn unique<K: Ord + Clone>(rows: impl IntoIterator<Item = (K, Location)>, what: &str) -> Result<(), Error> {
    let mut seen: BTreeMap<K, Location> = BTreeMap::new();
    for (key, at) in rows {
        if let Some(first) = seen.insert(key.clone(), at) {
            return Err(Error::new(
                Code::ImportDuplicateRow,
                format!("The rows at {first} and {at} name the same {what}."),
            ));
        }
    }
    Ok(())
}
