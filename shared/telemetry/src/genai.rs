//! The OpenTelemetry GenAI semantic conventions Harmonia follows: attribute keys, operation
//! names, and the two client metrics (`gen_ai.client.token.usage`,
//! `gen_ai.client.operation.duration`) with their recommended bucket boundaries.
//!
//! Span names and attributes are written where the spans are opened (tracing field names
//! must be literals); the metrics are recorded only through [`record`], so their names and
//! labels live in one place. Labels are names from closed sets (operation, provider, model,
//! agent, stage, error code) — never a workspace, a job or any content.

use opentelemetry::KeyValue;
use opentelemetry::metrics::Histogram;

/// `gen_ai.operation.name` of an agent invocation.
pub const INVOKE_AGENT: &str = "invoke_agent";
/// `gen_ai.operation.name` of a model call (Gemini's `generateContent` shape, which every
/// backend speaks).
pub const GENERATE_CONTENT: &str = "generate_content";
/// `gen_ai.operation.name` of a tool execution.
pub const EXECUTE_TOOL: &str = "execute_tool";

/// Metric: tokens per model call, by `gen_ai.token.type`.
pub const TOKEN_USAGE: &str = "gen_ai.client.token.usage";
/// Metric: duration of an operation, in seconds.
pub const OPERATION_DURATION: &str = "gen_ai.client.operation.duration";

/// Attribute keys.
pub mod key {
    /// The operation (`invoke_agent`, `generate_content`, `execute_tool`).
    pub const OPERATION_NAME: &str = "gen_ai.operation.name";
    /// Who serves the model (`gcp.vertex_ai`, `gcp.gemini`, `harmonia.offline`, …).
    pub const PROVIDER_NAME: &str = "gen_ai.provider.name";
    /// The model asked for.
    pub const REQUEST_MODEL: &str = "gen_ai.request.model";
    /// The agent (a Harmonia role).
    pub const AGENT_NAME: &str = "gen_ai.agent.name";
    /// `input` or `output`.
    pub const TOKEN_TYPE: &str = "gen_ai.token.type";
    /// The stable error code of a failed operation.
    pub const ERROR_TYPE: &str = "error.type";
    /// The pipeline stage the operation ran for.
    pub const STAGE: &str = "harmonia.stage";
}

/// Bucket boundaries the conventions recommend for token counts.
const TOKEN_BOUNDARIES: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0, 16777216.0,
    67108864.0,
];

/// Bucket boundaries the conventions recommend for durations (seconds).
const DURATION_BOUNDARIES: [f64; 14] =
    [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

/// One finished GenAI operation, as the metrics label it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Operation<'a> {
    /// [`INVOKE_AGENT`] or [`GENERATE_CONTENT`].
    pub name: &'static str,
    /// `gen_ai.provider.name`.
    pub provider: &'a str,
    /// `gen_ai.request.model`.
    pub model: &'a str,
    /// `gen_ai.agent.name`.
    pub agent: &'a str,
    /// The pipeline stage it served, if any (a grounded search's child call serves none).
    pub stage: Option<&'a str>,
    /// The stable error code when it failed.
    pub error: Option<&'a str>,
    /// How long it took, in seconds.
    pub seconds: f64,
    /// Tokens read and written (model calls only).
    pub tokens: Option<(u64, u64)>,
}

struct Instruments {
    tokens: Histogram<u64>,
    duration: Histogram<f64>,
}

/// The instruments of the current global meter provider. Looked up per record (the SDK
/// deduplicates them), so a provider installed after start-up is used.
fn instruments() -> Instruments {
    let meter = opentelemetry::global::meter("harmonia");
    Instruments {
        tokens: meter
            .u64_histogram(TOKEN_USAGE)
            .with_unit("{token}")
            .with_description("Number of input and output tokens used")
            .with_boundaries(TOKEN_BOUNDARIES.to_vec())
            .build(),
        duration: meter
            .f64_histogram(OPERATION_DURATION)
            .with_unit("s")
            .with_description("GenAI operation duration")
            .with_boundaries(DURATION_BOUNDARIES.to_vec())
            .build(),
    }
}

/// Record `operation` in `gen_ai.client.operation.duration` and, for a model call, its tokens
/// in `gen_ai.client.token.usage` (one point per token type).
pub fn record(operation: &Operation<'_>) {
    let mut labels = vec![
        KeyValue::new(key::OPERATION_NAME, operation.name),
        KeyValue::new(key::PROVIDER_NAME, operation.provider.to_owned()),
        KeyValue::new(key::REQUEST_MODEL, operation.model.to_owned()),
        KeyValue::new(key::AGENT_NAME, operation.agent.to_owned()),
    ];
    if let Some(stage) = operation.stage {
        labels.push(KeyValue::new(key::STAGE, stage.to_owned()));
    }
    if let Some(code) = operation.error {
        labels.push(KeyValue::new(key::ERROR_TYPE, code.to_owned()));
    }
    let instruments = instruments();
    instruments.duration.record(operation.seconds, &labels);
    if let Some((input, output)) = operation.tokens {
        for (kind, count) in [("input", input), ("output", output)] {
            let mut labels = labels.clone();
            labels.push(KeyValue::new(key::TOKEN_TYPE, kind));
            instruments.tokens.record(count, &labels);
        }
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
    use opentelemetry_sdk::metrics::{InMemoryMetricExporter, SdkMeterProvider};

    use super::*;

    /// Sorted (key, value) labels of a point.
    type Labels = Vec<(String, String)>;

    /// (metric, unit, labels, sum) of every histogram point exported.
    fn points(exporter: &InMemoryMetricExporter) -> Vec<(String, String, Labels, f64)> {
        let mut out = Vec::new();
        for resource in exporter.get_finished_metrics().expect("metrics") {
            for scope in resource.scope_metrics() {
                for metric in scope.metrics() {
                    let mut push = |labels: Labels, sum: f64| {
                        out.push((metric.name().to_owned(), metric.unit().to_owned(), labels, sum));
                    };
                    let labels = |kvs: &mut dyn Iterator<Item = &KeyValue>| {
                        let mut l: Vec<_> = kvs.map(|kv| (kv.key.to_string(), kv.value.to_string())).collect();
                        l.sort();
                        l
                    };
                    match metric.data() {
                        AggregatedMetrics::U64(MetricData::Histogram(h)) => {
                            for p in h.data_points() {
                                push(labels(&mut p.attributes()), p.sum() as f64);
                            }
                        }
                        AggregatedMetrics::F64(MetricData::Histogram(h)) => {
                            for p in h.data_points() {
                                push(labels(&mut p.attributes()), p.sum());
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        out
    }

    #[test]
    fn a_model_call_records_duration_and_both_token_types_with_enum_labels() {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder().with_periodic_exporter(exporter.clone()).build();
        opentelemetry::global::set_meter_provider(provider.clone());
        let call = Operation {
            name: GENERATE_CONTENT,
            provider: "harmonia.offline",
            model: "offline",
            agent: "nimi",
            stage: Some("analyze"),
            error: None,
            seconds: 0.25,
            tokens: Some((120, 30)),
        };
        record(&call);
        record(&Operation { name: INVOKE_AGENT, error: Some("schema_violation"), tokens: None, ..call });
        // A grounded search's child call serves no stage: the label is absent, not empty.
        record(&Operation { stage: None, seconds: 0.5, tokens: Some((7, 3)), ..call });
        provider.force_flush().expect("flush");
        let points = points(&exporter);
        let base = |op: &str| {
            vec![
                ("gen_ai.agent.name".to_owned(), "nimi".to_owned()),
                ("gen_ai.operation.name".to_owned(), op.to_owned()),
                ("gen_ai.provider.name".to_owned(), "harmonia.offline".to_owned()),
                ("gen_ai.request.model".to_owned(), "offline".to_owned()),
                ("harmonia.stage".to_owned(), "analyze".to_owned()),
            ]
        };
        let with = |mut l: Vec<(String, String)>, k: &str, v: &str| {
            l.push((k.to_owned(), v.to_owned()));
            l.sort();
            l
        };
        let unstaged = |op: &str| base(op).into_iter().filter(|(k, _)| k != "harmonia.stage").collect::<Vec<_>>();
        let expect = [
            (OPERATION_DURATION, "s", unstaged(GENERATE_CONTENT), 0.5),
            (TOKEN_USAGE, "{token}", with(unstaged(GENERATE_CONTENT), "gen_ai.token.type", "input"), 7.0),
            (TOKEN_USAGE, "{token}", with(unstaged(GENERATE_CONTENT), "gen_ai.token.type", "output"), 3.0),
            (OPERATION_DURATION, "s", base(GENERATE_CONTENT), 0.25),
            (OPERATION_DURATION, "s", with(base(INVOKE_AGENT), "error.type", "schema_violation"), 0.25),
            (TOKEN_USAGE, "{token}", with(base(GENERATE_CONTENT), "gen_ai.token.type", "input"), 120.0),
            (TOKEN_USAGE, "{token}", with(base(GENERATE_CONTENT), "gen_ai.token.type", "output"), 30.0),
        ];
        for (name, unit, labels, sum) in expect {
            assert!(
                points.iter().any(|p| p.0 == name && p.1 == unit && p.2 == labels && (p.3 - sum).abs() < 1e-9),
                "{name} {labels:?} = {sum} in {points:?}"
            );
        }
        assert_eq!(points.len(), 7, "nothing else was recorded: {points:?}");
    }
}
