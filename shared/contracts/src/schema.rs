//! JSON Schemas generated from the types, checked in under `schemas/`, and validation.
//!
//! schemars marks `u32`/`u64`/`i64` only with a `format` that validators ignore, so the
//! [`IntegerBounds`] transform writes the real `minimum`/`maximum` into every integer
//! schema. [`SchemaValidator`] validates a JSON value against a type's schema (with formats
//! enforced) and then deserialises it; a failure carries the schema location only, never the
//! offending value.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::path::Path;

use schemars::generate::SchemaSettings;
use schemars::transform::{Transform, transform_subschemas};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::domain;
use crate::error::{AgentContractError, Code, Error, ErrorBody};
use crate::event::event_schemas;
use crate::tool::ToolEnvelope;

/// Adds the true bounds of fixed-width integers that schemars only names by `format`.
#[derive(Clone, Copy, Debug, Default)]
pub struct IntegerBounds;

impl Transform for IntegerBounds {
    fn transform(&mut self, schema: &mut Schema) {
        let bounds: Option<(Value, Value)> = match schema.get("format").and_then(Value::as_str) {
            Some("uint32") => Some((0.into(), u32::MAX.into())),
            Some("uint64" | "uint") => Some((0.into(), u64::MAX.into())),
            Some("int32") => Some((i32::MIN.into(), i32::MAX.into())),
            Some("int64" | "int") => Some((i64::MIN.into(), i64::MAX.into())),
            _ => None,
        };
        if let Some((min, max)) = bounds {
            let obj = schema.ensure_object();
            obj.entry("minimum").or_insert(min);
            obj.entry("maximum").or_insert(max);
        }
        transform_subschemas(self, schema);
    }
}

fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12().with_transform(IntegerBounds).into_generator()
}

/// The root schema of `T`, with integer bounds.
pub fn schema_for<T: JsonSchema + ?Sized>() -> Value {
    generator().into_root_schema_for::<T>().to_value()
}

/// Every checked-in schema, by file stem (`schemas/<name>.schema.json`).
pub fn all_schemas() -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    macro_rules! add {
        ($($name:literal => $ty:ty),* $(,)?) => {
            $( out.insert($name.to_owned(), schema_for::<$ty>()); )*
        };
    }
    add! {
        "error-body" => ErrorBody,
        "agent-contract-error" => AgentContractError,
        "tool-envelope" => ToolEnvelope,
        "workspace" => domain::Workspace,
        "workspace-config" => domain::WorkspaceConfig,
        "workspace-version" => domain::WorkspaceVersion,
        "job" => domain::Job,
        "source-input" => domain::SourceInput,
        "source" => domain::StoredSource,
        "analysis" => domain::Analysis,
        "strategy" => domain::Strategy,
        "planning-snapshot" => domain::PlanningSnapshot,
        "plan" => domain::Plan,
        "draft" => domain::Draft,
        "review" => domain::Review,
        "policy-result" => domain::PolicyResult,
        "approval" => domain::Approval,
        "publication" => domain::Publication,
        "schedule" => domain::Schedule,
        "publication-claim" => domain::PublicationClaim,
        "publication-receipt" => domain::PublicationReceipt,
        "verification" => domain::Verification,
        "post-metrics" => domain::PostMetrics,
        "trend-signal" => domain::TrendSignal,
        "memory-fact" => domain::MemoryFact,
        "research-evidence" => domain::ResearchEvidence,
        "activity-record" => domain::ActivityRecord,
    }
    for (name, schema) in event_schemas(&mut generator()) {
        out.insert(name, schema.to_value());
    }
    out
}

fn render(schema: &Value) -> String {
    let mut text = serde_json::to_string_pretty(schema).unwrap_or_default();
    text.push('\n');
    text
}

/// Write every schema and `error-codes.md` into `schemas_dir` and `docs_dir`.
pub fn export(schemas_dir: &Path, docs_dir: &Path) -> std::io::Result<usize> {
    std::fs::create_dir_all(schemas_dir)?;
    std::fs::create_dir_all(docs_dir)?;
    for entry in std::fs::read_dir(schemas_dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "json") {
            std::fs::remove_file(path)?;
        }
    }
    let schemas = all_schemas();
    for (name, schema) in &schemas {
        std::fs::write(schemas_dir.join(format!("{name}.schema.json")), render(schema))?;
    }
    std::fs::write(docs_dir.join("error-codes.md"), Code::table_markdown())?;
    Ok(schemas.len())
}

/// Names of files under `schemas_dir`/`docs_dir` that differ from what [`export`] would write.
pub fn drift(schemas_dir: &Path, docs_dir: &Path) -> Vec<String> {
    let mut drifted = Vec::new();
    let schemas = all_schemas();
    for (name, schema) in &schemas {
        let file = format!("{name}.schema.json");
        if std::fs::read_to_string(schemas_dir.join(&file)).ok().as_deref() != Some(render(schema).as_str()) {
            drifted.push(file);
        }
    }
    if let Ok(entries) = std::fs::read_dir(schemas_dir) {
        // Folders are not generated here: `a2ui/` holds the A2UI renderer's own schemas and
        // Harmonia's catalog (checked against the renderer package by infra/console/build.sh).
        for entry in entries.flatten().filter(|e| !e.file_type().is_ok_and(|t| t.is_dir())) {
            let file = entry.file_name().to_string_lossy().into_owned();
            let known = file.strip_suffix(".schema.json").is_some_and(|stem| schemas.contains_key(stem));
            if !known {
                drifted.push(file);
            }
        }
    }
    if std::fs::read_to_string(docs_dir.join("error-codes.md")).ok() != Some(Code::table_markdown()) {
        drifted.push("error-codes.md".to_owned());
    }
    drifted
}

/// Where a value broke its schema: locations and a description written from the schema, never
/// the value itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer into the schema.
    pub schema_path: String,
    /// JSON pointer to the offending place in the value; for an unknown or a missing key, to
    /// that key (so a config file's author can find it).
    pub instance_path: String,
    /// What is wrong, in words taken from the schema (its limits or allowed values); empty when
    /// the value matched the schema but could not be deserialised.
    pub problem: String,
}

impl Violation {
    fn of(err: &jsonschema::ValidationError<'_>) -> Self {
        use jsonschema::error::ValidationErrorKind as K;
        let mut instance_path = err.instance_path().to_string();
        let mut key = |name: &str| {
            instance_path.push('/');
            instance_path.push_str(&name.replace('~', "~0").replace('/', "~1"));
        };
        let problem = match err.kind() {
            K::AdditionalProperties { unexpected } | K::UnevaluatedProperties { unexpected } => {
                if let Some(first) = unexpected.first() {
                    key(first);
                }
                "is not a known key".to_owned()
            }
            K::Required { property } => {
                if let Some(name) = property.as_str() {
                    key(name);
                }
                "is required".to_owned()
            }
            K::Enum { options } => match options.as_array() {
                Some(values) => {
                    let names: Vec<String> =
                        values.iter().map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned)).collect();
                    format!("must be one of: {}", names.join(", "))
                }
                None => "is not one of the allowed values".to_owned(),
            },
            K::Constant { expected_value } => format!("must be {expected_value}"),
            // Documented enums are a `oneOf` of constants: name the constants.
            K::OneOfNotValid { context } => {
                let names: Vec<String> = context
                    .iter()
                    .flatten()
                    .filter_map(|e| match e.kind() {
                        K::Constant { expected_value } => {
                            Some(expected_value.as_str().map_or_else(|| expected_value.to_string(), str::to_owned))
                        }
                        _ => None,
                    })
                    .collect();
                if names.is_empty() {
                    "does not match the schema".to_owned()
                } else {
                    format!("must be one of: {}", names.join(", "))
                }
            }
            K::Type { kind } => match kind {
                jsonschema::error::TypeKind::Single(t) => format!("must be of type {t}"),
                jsonschema::error::TypeKind::Multiple(set) => {
                    let names: Vec<String> = set.iter().map(|t| t.to_string()).collect();
                    format!("must be of type {}", names.join(" or "))
                }
            },
            K::MinLength { limit: 1 } => "must not be empty".to_owned(),
            K::MinLength { limit } => format!("must be at least {limit} characters long"),
            K::MaxLength { limit } => format!("must be at most {limit} characters long"),
            K::MinItems { limit: 1 } => "must have at least one entry".to_owned(),
            K::MinItems { limit } => format!("must have at least {limit} entries"),
            K::MaxItems { limit } => format!("must have at most {limit} entries"),
            K::Minimum { limit } | K::ExclusiveMinimum { limit } => format!("must be at least {limit}"),
            K::Maximum { limit } | K::ExclusiveMaximum { limit } => format!("must be at most {limit}"),
            K::Pattern { .. } | K::Format { .. } => "is not in the expected form".to_owned(),
            K::UniqueItems => "must not repeat an entry".to_owned(),
            _ => "does not match the schema".to_owned(),
        };
        Self { schema_path: err.schema_path().to_string(), instance_path, problem }
    }
}

/// A compiled validator for `T`'s schema that also deserialises.
pub struct SchemaValidator<T> {
    validator: jsonschema::Validator,
    _type: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for SchemaValidator<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaValidator").field("type", &std::any::type_name::<T>()).finish()
    }
}

impl<T: JsonSchema + DeserializeOwned> SchemaValidator<T> {
    /// Compile `T`'s schema.
    pub fn new() -> Result<Self, Error> {
        Self::from_schema(&schema_for::<T>())
    }

    /// Compile a given schema (for example a role's output schema) for values of `T`.
    pub fn from_schema(schema: &Value) -> Result<Self, Error> {
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .build(schema)
            .map_err(|e| Error::new(Code::Internal, "a built-in JSON Schema does not compile").with_cause(e))?;
        Ok(Self { validator, _type: PhantomData })
    }

    /// Validate against the schema, then deserialise.
    pub fn parse(&self, value: &Value) -> Result<T, Violation> {
        if let Some(err) = self.validator.iter_errors(value).next() {
            return Err(Violation::of(&err));
        }
        serde_json::from_value(value.clone()).map_err(|_| Violation {
            schema_path: String::new(),
            instance_path: String::new(),
            problem: String::new(),
        })
    }

    /// Like [`parse`](Self::parse), as an `invalid_document` error.
    pub fn parse_document(&self, value: &Value) -> Result<T, Error> {
        self.parse(value).map_err(|_| Error::from_code(Code::InvalidDocument))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{ActivityRecord, PostMetrics};
    use serde_json::json;

    fn workspace_root() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    #[test]
    fn checked_in_schemas_match_the_types() {
        let root = workspace_root();
        let drifted = drift(&root.join("schemas"), &root.join("docs"));
        assert!(
            drifted.is_empty(),
            "schemas drifted: {drifted:?}; run `cargo run -p harmonia-contracts --bin harmonia-schemas`"
        );
    }

    #[test]
    fn every_schema_compiles_and_objects_deny_unknown_fields() {
        for (name, schema) in all_schemas() {
            assert!(jsonschema::validator_for(&schema).is_ok(), "{name}");
            let text = schema.to_string();
            assert!(!text.contains("\"additionalProperties\":true"), "{name}");
        }
    }

    #[test]
    fn integer_bounds_are_really_enforced() {
        let metrics = json!({
            "post": "post-1", "job": "job-1", "platform": "x",
            "published_at": "2026-01-01T00:00:00Z", "measured_at": "2026-01-02T00:00:00Z",
            "impressions": 10, "reactions": 1, "comments": 0, "shares": 0, "clicks": 0,
            "source": "analytics export", "provenance": "mock"
        });
        let v = SchemaValidator::<PostMetrics>::new().expect("compiles");
        assert!(v.parse(&metrics).is_ok());
        let mut negative = metrics.clone();
        negative["impressions"] = json!(-1);
        assert!(v.parse(&negative).is_err());
        let mut fractional = metrics.clone();
        fractional["impressions"] = json!(1.5);
        assert!(v.parse(&fractional).is_err());

        let record = json!({
            "tenant": "ws-1", "job": "job-1", "operation": "invoke", "agent": "nimi", "stage": "analyze",
            "model": "offline", "started_at": "2026-01-01T00:00:00Z", "ended_at": "2026-01-01T00:00:01Z",
            "duration_us": 1000, "usage": {"input_tokens": 1, "output_tokens": 2},
            "outcome": {"status": "success"},
            "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "span_id": "00f067aa0ba902b7",
            "parent_span_id": "00f067aa0ba902b8"
        });
        let v = SchemaValidator::<ActivityRecord>::new().expect("compiles");
        assert!(v.parse(&record).is_ok());
        let mut too_big = record.clone();
        too_big["usage"]["input_tokens"] = json!(u64::from(u32::MAX) + 1);
        let err = v.parse(&too_big).expect_err("u32 overflow");
        assert!(err.schema_path.contains("maximum"), "{}", err.schema_path);
        let mut extra = record.clone();
        extra["prompt"] = json!("secret");
        assert!(v.parse(&extra).is_err());
        let mut no_trace = record.clone();
        no_trace.as_object_mut().map(|o| o.remove("trace_id"));
        assert!(v.parse(&no_trace).is_err());
        let mut bad_time = record;
        bad_time["started_at"] = json!("yesterday");
        assert!(v.parse(&bad_time).is_err(), "formats are enforced");
    }

    #[test]
    fn tool_envelope_schema_agrees_with_the_type() {
        let v = SchemaValidator::<ToolEnvelope>::new().expect("compiles");
        let error = json!({"code":"not_found","category":"not_found","message":"x","retryable":false});
        assert!(v.parse(&json!({"status":"success","data":{},"error":null,"evidence":[]})).is_ok());
        assert!(v.parse(&json!({"status":"error","data":null,"error":error,"evidence":[]})).is_ok());
        assert!(v.parse(&json!({"status":"success","data":{},"error":error,"evidence":[]})).is_err());
        assert!(v.parse(&json!({"status":"error","data":null,"error":error,"evidence":[],"x":1})).is_err());
    }
}
