//! Logging and tracing for Harmonia. Events are structured (`tracing`) with ids, stages, codes
//! and timings only — never prompts, model output, transcripts, drafts, credentials or
//! provider bodies. [`subscriber`] builds the subscriber for a [`Format`] over any writer (e.g.
//! [`Memory`]), so tests can read exactly what would have been logged; [`init`] installs it
//! for a process, and [`init_with`] adds OpenTelemetry export.
//!
//! - [`export`]: what is exported where ([`Export`], resolved once at start-up) and the
//!   providers (OTLP/HTTP, or Cloud Trace's own API for spans).
//! - [`context`]: W3C trace context across process boundaries — continuing an event's trace,
//!   and reading the context a span hands on.
//! - [`genai`]: the OpenTelemetry GenAI conventions (attribute keys, the two client metrics).

pub mod context;
pub mod export;
pub mod genai;

pub use context::{continue_trace, traceparent};
pub use export::{
    CloudTrace, Error, Export, Exporters, OtlpEndpoint, TRACE_EXPORTER_VAR, TraceExporter, Traces, providers,
};

use tracing::Subscriber;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// How log lines look.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Format {
    /// Human-readable lines (local runs).
    Text,
    /// Cloud Logging JSON: `severity`, `time`, source location, message and fields, one object
    /// per line. With a project, a line written inside a span carrying a `trace_id` field also
    /// gets `logging.googleapis.com/trace` (`projects/<project>/traces/<trace id>`), which
    /// correlates it with the job's trace.
    CloudJson {
        /// The Google Cloud project the traces belong to.
        project: Option<String>,
    },
}

impl Format {
    /// `json` → Cloud Logging JSON (correlated with `project`'s traces); anything else → text.
    pub fn from_name(name: Option<&str>, project: Option<String>) -> Self {
        match name {
            Some("json") => Format::CloudJson { project },
            _ => Format::Text,
        }
    }
}

/// The output layer for `format` over `writer`.
pub fn layer<W>(format: Format, writer: W) -> Box<dyn Layer<Registry> + Send + Sync>
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    match format {
        Format::Text => {
            Box::new(tracing_subscriber::fmt::layer().with_writer(writer).with_target(false).with_ansi(false))
        }
        Format::CloudJson { project: None } => {
            Box::new(tracing_stackdriver::layer().with_source_location(true).with_writer(writer))
        }
        Format::CloudJson { project: Some(project) } => Box::new(
            tracing_stackdriver::layer().with_source_location(true).with_writer(TraceCorrelated { project, writer }),
        ),
    }
}

/// Adds Cloud Logging's trace field to each JSON line, from the innermost span that carries a
/// valid `trace_id` (the stage and invocation spans do).
struct TraceCorrelated<W> {
    project: String,
    writer: W,
}

impl<'a, W: MakeWriter<'a>> MakeWriter<'a> for TraceCorrelated<W> {
    type Writer = Line<'a, W::Writer>;
    fn make_writer(&'a self) -> Self::Writer {
        Line { project: &self.project, buffer: Vec::new(), inner: self.writer.make_writer() }
    }
}

/// One event's line, rewritten and written through when dropped (the formatter writes each
/// event through its own writer).
struct Line<'a, W: std::io::Write> {
    project: &'a str,
    buffer: Vec<u8>,
    inner: W,
}

impl<W: std::io::Write> std::io::Write for Line<'_, W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<W: std::io::Write> Drop for Line<'_, W> {
    fn drop(&mut self) {
        let bytes = std::mem::take(&mut self.buffer);
        let out = correlate(self.project, &bytes).unwrap_or(bytes);
        let _ = self.inner.write_all(&out);
        let _ = self.inner.flush();
    }
}

fn correlate(project: &str, line: &[u8]) -> Option<Vec<u8>> {
    let mut value: serde_json::Value = serde_json::from_slice(line).ok()?;
    let trace = value
        .get("spans")?
        .as_array()?
        .iter()
        .rev()
        .filter_map(|span| span.get("trace_id")?.as_str())
        .find(|id| id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()) && id.bytes().any(|b| b != b'0'))?
        .to_owned();
    value
        .as_object_mut()?
        .insert("logging.googleapis.com/trace".into(), format!("projects/{project}/traces/{trace}").into());
    let mut out = serde_json::to_vec(&value).ok()?;
    out.push(b'\n');
    Some(out)
}

/// A subscriber writing `format` to `writer`, filtered by `filter` (e.g. `info`).
pub fn subscriber<W>(format: Format, filter: &str, writer: W) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    compose(format, filter, writer, None)
}

/// The output layer for `format` plus `extra` (the OpenTelemetry layer when exporting), under
/// one filter; an unparsable filter falls back to `info`.
fn compose<W>(
    format: Format,
    filter: &str,
    writer: W,
    extra: Option<Box<dyn Layer<Registry> + Send + Sync>>,
) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let filter = EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let layers: Vec<_> = std::iter::once(layer(format, writer)).chain(extra).collect();
    Box::new(Registry::default().with(layers).with(filter))
}

/// A writer that keeps everything written to it in memory, shared by its clones: read back
/// exactly what a subscriber logged (tests, diagnostics).
#[derive(Clone, Debug, Default)]
pub struct Memory(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Memory {
    /// Everything written so far, as (lossy) UTF-8.
    pub fn text(&self) -> String {
        let bytes = self.0.lock().map(|b| b.clone()).unwrap_or_else(|poisoned| poisoned.into_inner().clone());
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl std::io::Write for Memory {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().map_err(|_| std::io::Error::other("lock"))?.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Memory {
    type Writer = Memory;
    fn make_writer(&'a self) -> Memory {
        self.clone()
    }
}

/// Install the process-wide subscriber (stderr), once; later calls change nothing.
pub fn init(format: Format, filter: &str) {
    let _ = tracing::subscriber::set_global_default(subscriber(format, filter, std::io::stderr));
}

/// Install logging and the exporters `export` asks for: spans from every `tracing` span (named
/// by its `otel.name` field when it has one) and the global meter provider the runtime's
/// metrics report to. When an exporter cannot be built, logging alone is installed — so the
/// caller can report the error — and the error is returned: a process configured to export
/// must not run without it unnoticed.
pub async fn init_with(format: Format, filter: &str, export: &Export) -> Result<Exporters, Error> {
    use opentelemetry::trace::TracerProvider as _;

    let exporters = match providers(export).await {
        Ok(exporters) => exporters,
        Err(e) => {
            init(format, filter);
            return Err(e);
        }
    };
    if let Some(meter) = exporters.meter() {
        opentelemetry::global::set_meter_provider(meter.clone());
    }
    let otel = exporters.tracer().map(|t| tracing_opentelemetry::layer().with_tracer(t.tracer("harmonia")).boxed());
    let _ = tracing::subscriber::set_global_default(compose(format, filter, std::io::stderr, otel));
    Ok(exporters)
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    #[test]
    fn cloud_json_lines_carry_severity_and_fields() {
        let buffer = Memory::default();
        let sub = subscriber(Format::CloudJson { project: None }, "info", buffer.clone());
        tracing::subscriber::with_default(sub, || {
            tracing::warn!(job = "job-1", code = "schema_violation", "stage failed");
        });
        let text = buffer.text();
        assert!(text.contains("\"severity\":\"WARNING\""), "{text}");
        assert!(text.contains("\"job\":\"job-1\""), "{text}");
        assert!(text.contains("stage failed"), "{text}");
        assert!(text.contains("logging.googleapis.com/sourceLocation"), "{text}");
        assert!(!text.contains("logging.googleapis.com/trace"), "no span, no trace: {text}");
    }

    #[test]
    fn lines_inside_a_traced_span_correlate_with_the_project_trace() {
        let buffer = Memory::default();
        let format = Format::CloudJson { project: Some("demo-project".into()) };
        let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
        tracing::subscriber::with_default(subscriber(format, "info", buffer.clone()), || {
            tracing::info!("outside");
            let stage = tracing::info_span!("stage", trace_id = trace);
            let _in = stage.enter();
            tracing::info!(job = "job-1", "inside");
        });
        let text = buffer.text();
        let lines: Vec<serde_json::Value> =
            text.lines().map(|l| serde_json::from_str(l).expect("one JSON object per line")).collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].get("logging.googleapis.com/trace").is_none());
        assert_eq!(lines[1]["logging.googleapis.com/trace"], format!("projects/demo-project/traces/{trace}"));
        assert_eq!(lines[1]["severity"], "INFO");
    }

    /// Requests received: (path, body length).
    type Received = Arc<Mutex<Vec<(String, usize)>>>;

    /// A minimal OTLP/HTTP receiver: answers 200 to every POST and records (path, body length).
    fn receiver() -> (String, Received) {
        use std::io::{BufRead, BufReader, Read};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = log.clone();
                std::thread::spawn(move || serve(BufReader::new(stream), &log));
            }
        });
        fn serve(mut reader: BufReader<std::net::TcpStream>, log: &Mutex<Vec<(String, usize)>>) {
            loop {
                let mut request = String::new();
                if reader.read_line(&mut request).unwrap_or(0) == 0 {
                    break;
                }
                let path = request.split(' ').nth(1).unwrap_or_default().to_owned();
                let mut length = 0;
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                        break;
                    }
                    let lower = header.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_err() {
                    break;
                }
                log.lock().expect("lock").push((path, length));
                let _ = reader.get_mut().write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
            }
        }
        (url, seen)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn spans_and_metrics_are_exported_over_otlp_http() {
        use opentelemetry::metrics::MeterProvider as _;
        use opentelemetry::trace::TracerProvider as _;
        let (endpoint, seen) = receiver();
        let endpoint = OtlpEndpoint::from_var("HARMONIA_OTLP_ENDPOINT", &endpoint).expect("endpoint");
        let export = Export::resolve("harmonia-test", None, Some(endpoint), None).expect("an endpoint selects OTLP");
        let exporters = providers(&export).await.expect("exporters configure");
        let (tracer, meter) = (exporters.tracer().expect("spans").clone(), exporters.meter().expect("metrics").clone());
        let otel = tracing_opentelemetry::layer().with_tracer(tracer.tracer("harmonia"));
        let sub = Registry::default().with(otel);
        tracing::subscriber::with_default(sub, || {
            let span = tracing::info_span!("stage", stage = "analyze");
            continue_trace(&span, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", true);
            span.in_scope(|| tracing::info!("inside"));
        });
        meter.meter("harmonia").u64_counter("harmonia.agent.invocations").build().add(1, &[]);
        let (t, m) = (tracer.clone(), meter.clone());
        tokio::task::spawn_blocking(move || {
            t.force_flush().expect("spans exported");
            m.force_flush().expect("metrics exported");
        })
        .await
        .expect("flush");
        let seen = seen.lock().expect("lock").clone();
        assert!(seen.iter().any(|(p, n)| p == "/v1/traces" && *n > 0), "{seen:?}");
        assert!(seen.iter().any(|(p, n)| p == "/v1/metrics" && *n > 0), "{seen:?}");
        drop(exporters);
    }

    /// The Cloud Trace path with its exporter swapped for an in-memory one. It proves the
    /// wiring — spans recorded through `tracing` reach the exporter through the tokio batch
    /// processor the gRPC exporter needs, named by `otel.name`, with their GenAI attributes, in
    /// the continued trace. It does not exercise the crate's own gRPC call: that exporter's
    /// endpoint is fixed to cloudtrace.googleapis.com and it connects when built, so no test
    /// builds it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cloud_trace_wiring_exports_named_spans_through_the_async_batch_processor() {
        use opentelemetry::trace::TracerProvider as _;
        let spans = opentelemetry_sdk::trace::InMemorySpanExporter::default();
        let resource = opentelemetry_sdk::Resource::builder().with_service_name("harmonia-analyze").build();
        let provider = export::cloud_trace_tracer(spans.clone(), resource);
        let sub = Registry::default().with(tracing_opentelemetry::layer().with_tracer(provider.tracer("harmonia")));
        tracing::subscriber::with_default(sub, || {
            let span = tracing::info_span!(
                "invoke",
                otel.name = "invoke_agent nimi",
                gen_ai.operation.name = "invoke_agent",
                gen_ai.agent.name = "nimi"
            );
            continue_trace(&span, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", true);
            span.in_scope(|| tracing::info!("inside"));
        });
        let flushed = provider.clone();
        tokio::task::spawn_blocking(move || flushed.force_flush()).await.expect("join").expect("flush");
        let exported = spans.get_finished_spans().expect("spans");
        assert_eq!(exported.len(), 1, "{exported:?}");
        let span = &exported[0];
        assert_eq!(span.name, "invoke_agent nimi");
        assert_eq!(span.span_context.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        let attribute =
            |key: &str| span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string());
        assert_eq!(attribute("gen_ai.operation.name").as_deref(), Some("invoke_agent"));
        assert_eq!(attribute("gen_ai.agent.name").as_deref(), Some("nimi"));
        tokio::task::spawn_blocking(move || provider.shutdown()).await.expect("join").expect("shutdown");
    }
}
