//! Logging for Harmonia. Events are structured (`tracing`) with ids, stages, codes and
//! timings only — never prompts, model output, transcripts, drafts, credentials or provider
//! bodies. [`subscriber`] builds the subscriber for a [`Format`] over any writer (e.g. [`Memory`]), so tests can
//! read exactly what would have been logged; [`init`] installs it for a process.

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

/// Where OpenTelemetry traces and metrics go: an OTLP/HTTP endpoint (a collector that forwards
/// to Cloud Trace and Cloud Monitoring). Off unless configured, so nothing calls out locally
/// or in tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Otlp {
    /// Base URL, e.g. `http://localhost:4318`.
    pub endpoint: String,
    /// `service.name` of the exported data (the function's name).
    pub service: String,
}

/// Keeps the exporters alive; flushes and shuts them down when dropped.
#[derive(Default)]
pub struct Exporters {
    tracer: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
    meter: Option<opentelemetry_sdk::metrics::SdkMeterProvider>,
}

impl Drop for Exporters {
    fn drop(&mut self) {
        if let Some(t) = self.tracer.take() {
            let _ = t.shutdown();
        }
        if let Some(m) = self.meter.take() {
            let _ = m.shutdown();
        }
    }
}

/// The OpenTelemetry providers exporting to `otlp`: spans in batches to `<endpoint>/v1/traces`,
/// metrics periodically to `<endpoint>/v1/metrics`, both OTLP/HTTP protobuf.
pub fn providers(
    otlp: &Otlp,
) -> Option<(opentelemetry_sdk::trace::SdkTracerProvider, opentelemetry_sdk::metrics::SdkMeterProvider)> {
    use opentelemetry_otlp::WithExportConfig;
    let resource = opentelemetry_sdk::Resource::builder().with_service_name(otlp.service.clone()).build();
    let base = otlp.endpoint.trim_end_matches('/');
    let spans =
        opentelemetry_otlp::SpanExporter::builder().with_http().with_endpoint(format!("{base}/v1/traces")).build();
    let metrics =
        opentelemetry_otlp::MetricExporter::builder().with_http().with_endpoint(format!("{base}/v1/metrics")).build();
    let (Ok(spans), Ok(metrics)) = (spans, metrics) else {
        return None;
    };
    let tracer = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(spans)
        .with_resource(resource.clone())
        .build();
    let meter = opentelemetry_sdk::metrics::SdkMeterProvider::builder()
        .with_periodic_exporter(metrics)
        .with_resource(resource)
        .build();
    Some((tracer, meter))
}

/// Install logging and, when `otlp` is set, OpenTelemetry trace export (spans become Cloud
/// Trace spans) and the global meter provider the runtime's metrics report to.
pub fn init_with(format: Format, filter: &str, otlp: Option<Otlp>) -> Exporters {
    use opentelemetry::trace::TracerProvider as _;

    let Some((tracer, meter)) = otlp.as_ref().and_then(providers) else {
        let configured = otlp.is_some();
        init(format, filter);
        if configured {
            tracing::warn!("OpenTelemetry export could not be configured; continuing with logs only");
        }
        return Exporters::default();
    };
    opentelemetry::global::set_meter_provider(meter.clone());
    let otel = tracing_opentelemetry::layer().with_tracer(tracer.tracer("harmonia")).boxed();
    let _ = tracing::subscriber::set_global_default(compose(format, filter, std::io::stderr, Some(otel)));
    Exporters { tracer: Some(tracer), meter: Some(meter) }
}

/// Make `span` continue a W3C trace received from elsewhere (an event's `traceparent`), so the
/// spans exported for it join the job's trace. Ids are hex (32 and 16 digits); malformed ids or
/// a subscriber without OpenTelemetry leave the span as it was.
pub fn continue_trace(span: &tracing::Span, trace_id: &str, parent_span_id: &str, sampled: bool) {
    use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let (Ok(trace), Ok(parent)) = (TraceId::from_hex(trace_id), SpanId::from_hex(parent_span_id)) else {
        return;
    };
    let flags = if sampled { TraceFlags::SAMPLED } else { TraceFlags::default() };
    let remote = SpanContext::new(trace, parent, flags, true, TraceState::default());
    if remote.is_valid() {
        let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
    }
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
        let (tracer, meter) =
            providers(&Otlp { endpoint, service: "harmonia-test".into() }).expect("exporters configure");
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
        let _ = (tracer.shutdown(), meter.shutdown());
    }
}
