//! Where OpenTelemetry data goes. Spans go to one of two exporters — OTLP/HTTP (a collector
//! that forwards to Cloud Trace and Cloud Monitoring) or Cloud Trace's own API
//! (`opentelemetry-gcloud-trace`) — and metrics go over OTLP/HTTP whenever an endpoint is set.
//! Nothing is exported unless configured, so local runs and tests never call out.

use std::fmt;
use std::str::FromStr;

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanExporter};

/// The variable that selects the span exporter (`otlp`, `cloud_trace` or `none`).
pub const TRACE_EXPORTER_VAR: &str = "HARMONIA_TRACE_EXPORTER";

/// Why telemetry export could not be configured. Each variant names what to fix.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The selector is not one of the known exporters.
    #[error("{TRACE_EXPORTER_VAR} must be otlp, cloud_trace or none")]
    UnknownTraceExporter,
    /// The OTLP endpoint is not an absolute http or https URL.
    #[error("{variable} must be an absolute http:// or https:// URL")]
    InvalidOtlpEndpoint {
        /// The variable it was read from.
        variable: &'static str,
    },
    /// OTLP span export was selected without an endpoint.
    #[error("{TRACE_EXPORTER_VAR}=otlp needs an OTLP endpoint (HARMONIA_OTLP_ENDPOINT)")]
    OtlpEndpointMissing,
    /// Cloud Trace export was selected without a project.
    #[error("{TRACE_EXPORTER_VAR}=cloud_trace needs the project (GOOGLE_CLOUD_PROJECT)")]
    ProjectMissing,
    /// The named exporter could not be built (for Cloud Trace: no Application Default
    /// Credentials, or the API unreachable).
    #[error("the {exporter} exporter could not be built")]
    Exporter {
        /// `otlp` or `cloud_trace`.
        exporter: &'static str,
    },
}

/// An OTLP/HTTP base URL (`http://collector:4318`); signals are posted under `/v1/<signal>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtlpEndpoint(String);

impl OtlpEndpoint {
    /// Parse the value of `variable` (named in the error, so start-up says what to fix).
    pub fn from_var(variable: &'static str, value: &str) -> Result<Self, Error> {
        let invalid = || Error::InvalidOtlpEndpoint { variable };
        let uri: http::Uri = value.parse().map_err(|_| invalid())?;
        let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
        if !scheme_ok || uri.authority().is_none() || uri.query().is_some() {
            return Err(invalid());
        }
        Ok(Self(value.trim_end_matches('/').to_owned()))
    }

    /// The base URL, without a trailing slash.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn signal(&self, signal: &str) -> String {
        format!("{}/v1/{signal}", self.0)
    }
}

impl fmt::Display for OtlpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Spans written straight to Cloud Trace (API v2 `BatchWriteSpans`) with the process's
/// Application Default Credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CloudTrace {
    /// The Google Cloud project the traces are written to.
    pub project: String,
}

/// The value of [`TRACE_EXPORTER_VAR`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceExporter {
    /// OTLP/HTTP to the configured endpoint.
    Otlp,
    /// Cloud Trace's API.
    CloudTrace,
    /// No span export (logs still carry trace ids).
    None,
}

impl FromStr for TraceExporter {
    type Err = Error;
    fn from_str(raw: &str) -> Result<Self, Error> {
        match raw {
            "otlp" => Ok(Self::Otlp),
            "cloud_trace" => Ok(Self::CloudTrace),
            "none" => Ok(Self::None),
            _ => Err(Error::UnknownTraceExporter),
        }
    }
}

/// Where spans go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Traces {
    /// OTLP/HTTP, to `<endpoint>/v1/traces`.
    Otlp(OtlpEndpoint),
    /// Cloud Trace's API.
    CloudTrace(CloudTrace),
}

/// What a process exports, resolved once at start-up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Export {
    /// `service.name` of everything exported (the function's name).
    pub service: String,
    /// The span exporter, if any.
    pub traces: Option<Traces>,
    /// Where metrics go (OTLP/HTTP `<endpoint>/v1/metrics`), if anywhere.
    pub metrics: Option<OtlpEndpoint>,
}

impl Export {
    /// Nothing exported.
    pub fn off(service: impl Into<String>) -> Self {
        Self { service: service.into(), traces: None, metrics: None }
    }

    /// Resolve the configuration: `exporter` (unset: OTLP when an endpoint is set, otherwise
    /// none), the OTLP endpoint (which also receives metrics) and the project (Cloud Trace
    /// writes to it). A selection that lacks what it needs is an error, never a quiet "off".
    pub fn resolve(
        service: impl Into<String>,
        exporter: Option<TraceExporter>,
        otlp: Option<OtlpEndpoint>,
        project: Option<String>,
    ) -> Result<Self, Error> {
        let exporter = exporter.unwrap_or(if otlp.is_some() { TraceExporter::Otlp } else { TraceExporter::None });
        let traces = match exporter {
            TraceExporter::None => None,
            TraceExporter::Otlp => Some(Traces::Otlp(otlp.clone().ok_or(Error::OtlpEndpointMissing)?)),
            TraceExporter::CloudTrace => {
                let project = project.filter(|p| !p.is_empty()).ok_or(Error::ProjectMissing)?;
                Some(Traces::CloudTrace(CloudTrace { project }))
            }
        };
        Ok(Self { service: service.into(), traces, metrics: otlp })
    }
}

/// The providers of an [`Export`], kept alive by the process. On a tokio runtime end them with
/// [`shutdown`](Self::shutdown); dropping also flushes and shuts them down, but waits on the
/// dropping thread.
#[derive(Default)]
pub struct Exporters {
    pub(crate) tracer: Option<SdkTracerProvider>,
    pub(crate) meter: Option<SdkMeterProvider>,
}

impl Exporters {
    /// The tracer provider, when spans are exported.
    pub fn tracer(&self) -> Option<&SdkTracerProvider> {
        self.tracer.as_ref()
    }

    /// The meter provider, when metrics are exported.
    pub fn meter(&self) -> Option<&SdkMeterProvider> {
        self.meter.as_ref()
    }

    /// Flush and shut down, waiting off the runtime's workers: the Cloud Trace processor
    /// exports its last batch as a task on this runtime, which a wait on the only worker (a
    /// one-CPU Cloud Run instance has one) would starve.
    pub async fn shutdown(mut self) {
        let (tracer, meter) = (self.tracer.take(), self.meter.take());
        let done = tokio::task::spawn_blocking(move || {
            let traces = tracer.map(|t| t.shutdown());
            let metrics = meter.map(|m| m.shutdown());
            (traces, metrics)
        })
        .await;
        match done {
            Ok((Some(Err(e)), _)) => tracing::warn!(error = %e, "spans could not be flushed at shutdown"),
            Ok((_, Some(Err(e)))) => tracing::warn!(error = %e, "metrics could not be flushed at shutdown"),
            Ok(_) => {}
            Err(_) => tracing::warn!("telemetry shutdown did not complete"),
        }
    }
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

/// Build the providers `export` asks for. Cloud Trace's exporter connects (and finds
/// credentials) here, so a misconfiguration shows at start-up; it must run inside a tokio
/// runtime, which also carries its batches.
pub async fn providers(export: &Export) -> Result<Exporters, Error> {
    let resource = Resource::builder().with_service_name(export.service.clone()).build();
    let tracer = match &export.traces {
        None => None,
        Some(Traces::Otlp(endpoint)) => Some(otlp_tracer(endpoint, resource.clone())?),
        #[cfg(feature = "cloud-trace")]
        Some(Traces::CloudTrace(cloud)) => {
            let exporter =
                opentelemetry_gcloud_trace::GcpCloudTraceExporter::new(&cloud.project, resource.clone(), false)
                    .await
                    .map_err(|_| Error::Exporter { exporter: "cloud_trace" })?;
            Some(cloud_trace_tracer(exporter, resource.clone()))
        }
        // A build without the feature `cloud-trace` has no Cloud Trace exporter to build.
        #[cfg(not(feature = "cloud-trace"))]
        Some(Traces::CloudTrace(_)) => return Err(Error::Exporter { exporter: "cloud_trace" }),
    };
    let meter = match &export.metrics {
        None => None,
        Some(endpoint) => Some(otlp_meter(endpoint, resource)?),
    };
    Ok(Exporters { tracer, meter })
}

fn otlp_tracer(endpoint: &OtlpEndpoint, resource: Resource) -> Result<SdkTracerProvider, Error> {
    use opentelemetry_otlp::WithExportConfig;
    let spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint.signal("traces"))
        .build()
        .map_err(|_| Error::Exporter { exporter: "otlp" })?;
    Ok(SdkTracerProvider::builder().with_batch_exporter(spans).with_resource(resource).build())
}

fn otlp_meter(endpoint: &OtlpEndpoint, resource: Resource) -> Result<SdkMeterProvider, Error> {
    use opentelemetry_otlp::WithExportConfig;
    let metrics = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_endpoint(endpoint.signal("metrics"))
        .build()
        .map_err(|_| Error::Exporter { exporter: "otlp" })?;
    Ok(SdkMeterProvider::builder().with_periodic_exporter(metrics).with_resource(resource).build())
}

/// The tracer provider for Cloud Trace, over any span exporter (the real one, or one a test
/// inspects). Its exporter is asynchronous (tonic), so batches are exported on the tokio
/// runtime instead of the SDK's blocking worker thread, where a tonic call would find no
/// reactor.
pub fn cloud_trace_tracer<E>(exporter: E, resource: Resource) -> SdkTracerProvider
where
    E: SpanExporter + 'static,
{
    use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;
    let processor = BatchSpanProcessor::builder(exporter, opentelemetry_sdk::runtime::Tokio).build();
    SdkTracerProvider::builder().with_span_processor(processor).with_resource(resource).build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> OtlpEndpoint {
        OtlpEndpoint::from_var("X", "http://collector:4318/").expect("endpoint")
    }

    #[test]
    fn endpoints_are_absolute_http_urls() {
        assert_eq!(endpoint().as_str(), "http://collector:4318");
        assert_eq!(endpoint().signal("traces"), "http://collector:4318/v1/traces");
        for bad in ["", "collector:4318", "ftp://collector", "/v1", "http://collector?x=1", "not a url"] {
            let error = OtlpEndpoint::from_var("OTEL_EXPORTER_OTLP_ENDPOINT", bad).expect_err(bad);
            assert!(matches!(error, Error::InvalidOtlpEndpoint { variable: "OTEL_EXPORTER_OTLP_ENDPOINT" }), "{bad}");
            assert!(error.to_string().starts_with("OTEL_EXPORTER_OTLP_ENDPOINT must be"));
        }
    }

    #[test]
    fn the_selector_knows_three_values_and_nothing_else() {
        assert_eq!("otlp".parse::<TraceExporter>().ok(), Some(TraceExporter::Otlp));
        assert_eq!("cloud_trace".parse::<TraceExporter>().ok(), Some(TraceExporter::CloudTrace));
        assert_eq!("none".parse::<TraceExporter>().ok(), Some(TraceExporter::None));
        for bad in ["", "OTLP", "cloudtrace", "zipkin"] {
            assert!(matches!(bad.parse::<TraceExporter>(), Err(Error::UnknownTraceExporter)), "{bad}");
        }
        assert!(Error::UnknownTraceExporter.to_string().contains(TRACE_EXPORTER_VAR));
    }

    #[test]
    fn unset_selector_means_otlp_with_an_endpoint_and_nothing_without() {
        let on = Export::resolve("f", None, Some(endpoint()), None).expect("resolves");
        assert_eq!(on.traces, Some(Traces::Otlp(endpoint())));
        assert_eq!(on.metrics, Some(endpoint()));
        let off = Export::resolve("f", None, None, Some("p".into())).expect("resolves");
        assert_eq!(off, Export::off("f"));
    }

    #[test]
    fn cloud_trace_takes_spans_and_leaves_metrics_on_otlp() {
        let both = Export::resolve("f", Some(TraceExporter::CloudTrace), Some(endpoint()), Some("demo".into()))
            .expect("resolves");
        assert_eq!(both.traces, Some(Traces::CloudTrace(CloudTrace { project: "demo".into() })));
        assert_eq!(both.metrics, Some(endpoint()));
        let alone = Export::resolve("f", Some(TraceExporter::CloudTrace), None, Some("demo".into())).expect("ok");
        assert_eq!(alone.metrics, None);
    }

    /// Keeps the names of the spans it exports (the SDK's in-memory exporter forgets them at
    /// shutdown, which is what this test looks past).
    #[derive(Clone, Debug, Default)]
    struct Names(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

    impl SpanExporter for Names {
        async fn export(
            &self,
            batch: Vec<opentelemetry_sdk::trace::SpanData>,
        ) -> opentelemetry_sdk::error::OTelSdkResult {
            let mut names =
                self.0.lock().map_err(|_| opentelemetry_sdk::error::OTelSdkError::InternalFailure("lock".into()))?;
            names.extend(batch.into_iter().map(|s| s.name.into_owned()));
            Ok(())
        }
    }

    /// On a single-threaded runtime, where a blocking wait would starve the Cloud Trace
    /// processor's export task, shutdown completes and the last batch is exported.
    #[tokio::test(flavor = "current_thread")]
    async fn shutdown_flushes_the_async_processor_on_a_single_worker() {
        use opentelemetry::trace::{Tracer as _, TracerProvider as _};
        let names = Names::default();
        let tracer = cloud_trace_tracer(names.clone(), Resource::builder().build());
        tracer.tracer("test").in_span("last", |_| {});
        let exporters = Exporters { tracer: Some(tracer), meter: None };
        tokio::time::timeout(std::time::Duration::from_secs(10), exporters.shutdown()).await.expect("no hang");
        assert_eq!(*names.0.lock().expect("lock"), ["last"]);
    }

    #[test]
    fn a_selection_missing_what_it_needs_is_refused() {
        assert!(matches!(Export::resolve("f", Some(TraceExporter::Otlp), None, None), Err(Error::OtlpEndpointMissing)));
        for project in [None, Some(String::new())] {
            assert!(matches!(
                Export::resolve("f", Some(TraceExporter::CloudTrace), Some(endpoint()), project),
                Err(Error::ProjectMissing)
            ));
        }
        let none = Export::resolve("f", Some(TraceExporter::None), Some(endpoint()), None).expect("ok");
        assert_eq!((none.traces, none.metrics), (None, Some(endpoint())), "metrics still go to the endpoint");
    }
}
