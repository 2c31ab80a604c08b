//! How a job's spans become one trace tree. Every stage event is created in a short exported
//! producer span (`create {topic}`) whose context becomes the event's `traceparent`; the stage
//! consuming the event (`process {topic}`) continues it. A job's first event is created under
//! an `ingest` span, and a human decision's under a `decision` span that continues the event
//! that asked for it. So every span of a job has an exported parent, up to one root.

use harmonia_contracts::event::{EventPayload, StageEvent};
use harmonia_contracts::trace::TraceParent;

/// The exported context of `span`, when OpenTelemetry is installed.
fn context_of(span: &tracing::Span) -> Option<TraceParent> {
    harmonia_telemetry::traceparent(span).and_then(|t| t.parse().ok())
}

/// Point `span` at `parent` (a context received from elsewhere), when there is one.
fn continue_from(span: &tracing::Span, parent: Option<&TraceParent>) {
    if let Some(t) = parent {
        harmonia_telemetry::continue_trace(span, &t.trace_id(), &t.span_id(), t.sampled());
    }
}

/// Start `span` as the origin of what follows — under `parent` when the work continues a trace
/// (the caller's, or the job's), otherwise as a new root — and return the context events
/// created under it continue. Without OpenTelemetry nothing is exported, and the context is
/// `parent`, or a new random root.
pub(crate) fn origin(span: &tracing::Span, parent: Option<&TraceParent>) -> TraceParent {
    continue_from(span, parent);
    context_of(span).unwrap_or_else(|| parent.cloned().unwrap_or_else(TraceParent::new_root))
}

/// Give `event` the context of its own exported `create {topic}` span, a child of the current
/// span (the stage, ingest or decision emitting it). The span ends at once: it marks the
/// event's creation, and its id is what the consuming stage's span names as parent. If the
/// current span belongs to another trace (or there is none), the span continues the event's
/// own trace instead, so the event never changes trace.
pub(crate) fn created<P: EventPayload>(topic_prefix: &str, event: &mut StageEvent<P>) {
    let span = tracing::info_span!(
        "create",
        otel.name = %format_args!("create {}", P::TOPIC),
        otel.kind = "producer",
        "messaging.operation.type" = "create",
        messaging.operation.name = "create",
        messaging.destination.name = %format_args!("{topic_prefix}{}", P::TOPIC),
        harmonia.stage = %event.stage,
        job = %event.job,
        pass = event.pass.get(),
    );
    let current = context_of(&tracing::Span::current());
    if current.is_none_or(|c| c.trace_id() != event.traceparent.trace_id()) {
        continue_from(&span, Some(&event.traceparent));
    }
    if let Some(context) = context_of(&span) {
        event.traceparent = context;
    }
}
