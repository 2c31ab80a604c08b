//! The caller's W3C trace context.

use std::convert::Infallible;

use axum::extract::FromRequestParts;
use axum::http::HeaderMap;
use axum::http::request::Parts;
use harmonia_contracts::trace::TraceParent;

/// The request's `traceparent`, so the work it starts joins the caller's trace; a new root
/// when the header is absent or malformed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace(pub TraceParent);

/// The `traceparent` of `headers`, or a new root.
pub fn traceparent(headers: &HeaderMap) -> TraceParent {
    let Some(value) = headers.get("traceparent") else { return TraceParent::new_root() };
    match value.to_str().ok().and_then(|v| v.parse().ok()) {
        Some(parent) => parent,
        None => {
            // W3C Trace Context: a receiver that cannot parse `traceparent` starts a new trace
            // rather than refusing the request; the log line keeps the restart visible.
            tracing::debug!(event = "traceparent_ignored", "malformed traceparent header; starting a new trace");
            TraceParent::new_root()
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Trace {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(traceparent(&parts.headers)))
    }
}
