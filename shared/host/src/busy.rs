//! How long this instance was busy, as Cloud Run bills an instance with request-based billing:
//! from the first request in flight to the last one's end, overlapping requests counted once,
//! each such busy period rounded up to the next 100 ms. Recorded on the global meter as
//! `harmonia.instance.busy` (seconds) with `harmonia.http.requests` (requests served), so a
//! deployment's collector (and `./infra/bench-cloud.sh`) can put a price on it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use opentelemetry::metrics::Counter;

/// Cloud Run's billing granularity.
const GRANULE: Duration = Duration::from_millis(100);

#[derive(Clone)]
struct Busy {
    /// Requests in flight, and since when the instance has had one.
    state: Arc<Mutex<(usize, Option<Instant>)>>,
    seconds: Counter<f64>,
    requests: Counter<u64>,
}

/// Ends a request's share of the busy period, also when its future is dropped.
struct InFlight(Busy);

impl Drop for InFlight {
    fn drop(&mut self) {
        let Ok(mut state) = self.0.state.lock() else { return };
        state.0 = state.0.saturating_sub(1);
        if state.0 == 0
            && let Some(since) = state.1.take()
        {
            self.0.seconds.add(billed(since.elapsed()).as_secs_f64(), &[]);
        }
    }
}

/// `busy`, rounded up to the next [`GRANULE`].
fn billed(busy: Duration) -> Duration {
    let granules = busy.as_nanos().div_ceil(GRANULE.as_nanos()).max(1);
    GRANULE.saturating_mul(u32::try_from(granules).unwrap_or(u32::MAX))
}

async fn track(axum::extract::State(busy): axum::extract::State<Busy>, request: Request, next: Next) -> Response {
    let guard = {
        if let Ok(mut state) = busy.state.lock() {
            state.0 += 1;
            state.1.get_or_insert_with(Instant::now);
        }
        busy.requests.add(1, &[]);
        InFlight(busy.clone())
    };
    let response = next.run(request).await;
    drop(guard);
    response
}

/// `app`, with its busy time and requests counted.
pub(crate) fn counted(app: Router) -> Router {
    let meter = opentelemetry::global::meter("harmonia");
    let busy = Busy {
        state: Arc::new(Mutex::new((0, None))),
        seconds: meter
            .f64_counter("harmonia.instance.busy")
            .with_unit("s")
            .with_description("Time with at least one request in flight, each period rounded up to 100 ms")
            .build(),
        requests: meter.u64_counter("harmonia.http.requests").with_description("HTTP requests served").build(),
    };
    app.layer(axum::middleware::from_fn_with_state(busy, track))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_period_is_billed_in_whole_tenths_of_a_second() {
        assert_eq!(billed(Duration::ZERO), GRANULE);
        assert_eq!(billed(Duration::from_millis(1)), GRANULE);
        assert_eq!(billed(Duration::from_millis(100)), GRANULE);
        assert_eq!(billed(Duration::from_millis(101)), Duration::from_millis(200));
        assert_eq!(billed(Duration::from_millis(1234)), Duration::from_millis(1300));
    }
}
