//! W3C trace context across process boundaries. A stage event carries the `traceparent` of
//! the exported span that created it; the span handling the event continues it
//! ([`continue_trace`]), and the events it creates carry their own creating span's context
//! ([`traceparent`]). So every span of a job has an exported parent, and the job is one tree.

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Make `span` continue a W3C trace received from elsewhere (an event's `traceparent`), so the
/// spans exported for it join the job's trace. Ids are hex (32 and 16 digits); malformed ids or
/// a subscriber without OpenTelemetry leave the span as it was. Call it before the span is
/// entered or its context read: a started span keeps its parent.
pub fn continue_trace(span: &tracing::Span, trace_id: &str, parent_span_id: &str, sampled: bool) {
    let (Ok(trace), Ok(parent)) = (TraceId::from_hex(trace_id), SpanId::from_hex(parent_span_id)) else {
        return;
    };
    let flags = if sampled { TraceFlags::SAMPLED } else { TraceFlags::default() };
    let remote = SpanContext::new(trace, parent, flags, true, TraceState::default());
    if remote.is_valid() {
        let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
    }
}

/// The W3C `traceparent` (`00-<trace id>-<span id>-<flags>`) of `span` as OpenTelemetry
/// exports it, to hand on to whatever continues from it. `None` when the span is disabled or
/// the subscriber has no OpenTelemetry layer (nothing is exported then, and callers keep the
/// ids they generate themselves). Reading the context starts the span, so set its parent first.
pub fn traceparent(span: &tracing::Span) -> Option<String> {
    let context = span.context();
    let span = context.span();
    let ids = span.span_context();
    ids.is_valid().then(|| format!("00-{}-{}-{:02x}", ids.trace_id(), ids.span_id(), ids.trace_flags().to_u8()))
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    #[test]
    fn a_continued_span_hands_on_its_own_exported_id_in_the_same_trace() {
        let spans = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
        let sub = tracing_subscriber::Registry::default()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        let handed_on = tracing::subscriber::with_default(sub, || {
            let span = tracing::info_span!("stage");
            continue_trace(&span, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", true);
            traceparent(&span)
        });
        let exported = spans.get_finished_spans().expect("spans");
        assert_eq!(exported.len(), 1);
        let ids = &exported[0].span_context;
        assert_eq!(handed_on, Some(format!("00-4bf92f3577b34da6a3ce929d0e0e4736-{}-01", ids.span_id())));
        assert_eq!(exported[0].parent_span_id.to_string(), "00f067aa0ba902b7");
    }

    #[test]
    fn without_opentelemetry_there_is_no_context_to_hand_on() {
        let sub = tracing_subscriber::Registry::default();
        let handed_on = tracing::subscriber::with_default(sub, || traceparent(&tracing::info_span!("stage")));
        assert_eq!(handed_on, None);
    }
}
