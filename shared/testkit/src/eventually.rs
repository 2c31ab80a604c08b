//! Waiting for a condition by polling it, never by sleeping for a guessed duration.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

/// How long [`eventually`] polls before it gives up. It is a safety net that turns a hang into
/// a failure with a description, not a timing assertion: it is generous so that a slow,
/// loaded machine never fails a correct test.
pub const DEADLINE: Duration = Duration::from_secs(300);

/// The first pause between polls; it doubles up to [`MAX_PAUSE`], so a condition that holds
/// quickly is seen quickly and a slow one is not polled in a tight loop.
const FIRST_PAUSE: Duration = Duration::from_millis(5);
const MAX_PAUSE: Duration = Duration::from_millis(200);

/// What a probe of [`eventually`] returns: either the value waited for, or why not yet.
pub trait Probe<T> {
    /// `Ok(value)` when the condition holds, `Err(why)` (used in the failure message) if not.
    fn check(self) -> Result<T, String>;
}

impl<T> Probe<T> for Option<T> {
    fn check(self) -> Result<T, String> {
        self.ok_or_else(|| "not yet".to_owned())
    }
}

impl<T, E: Display> Probe<T> for Result<T, E> {
    fn check(self) -> Result<T, String> {
        self.map_err(|e| e.to_string())
    }
}

/// Poll `probe` until it yields a value (`Some` or `Ok`) and return that value; panic naming
/// `what` (and the probe's last answer) if it has not by [`DEADLINE`].
pub async fn eventually<T, P, F, Fut>(what: impl Display, probe: F) -> T
where
    P: Probe<T>,
    F: FnMut() -> Fut,
    Fut: Future<Output = P>,
{
    eventually_within(DEADLINE, what, probe).await
}

/// [`eventually`] with another safety net than [`DEADLINE`].
pub async fn eventually_within<T, P, F, Fut>(deadline: Duration, what: impl Display, mut probe: F) -> T
where
    P: Probe<T>,
    F: FnMut() -> Fut,
    Fut: Future<Output = P>,
{
    let give_up = tokio::time::Instant::now() + deadline;
    let mut pause = FIRST_PAUSE;
    loop {
        let last = match probe().await.check() {
            Ok(value) => return value,
            Err(why) => why,
        };
        if tokio::time::Instant::now() >= give_up {
            panic!("{what}: still not the case after {} s (last answer: {last})", deadline.as_secs_f64());
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[tokio::test]
    async fn returns_the_first_value_the_probe_yields() {
        let calls = AtomicU32::new(0);
        let n = eventually("the third call", || async {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            (n >= 3).then_some(n)
        })
        .await;
        assert_eq!(n, 3);
    }

    #[tokio::test]
    async fn a_result_probe_retries_errors() {
        let calls = AtomicU32::new(0);
        let v: u32 = eventually("an ok", || async {
            if calls.fetch_add(1, Ordering::SeqCst) == 0 { Err("down") } else { Ok(7) }
        })
        .await;
        assert_eq!(v, 7);
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "the queue drains: still not the case after 1 s (last answer: 3 left)")]
    async fn panics_with_the_description_and_the_last_answer_at_the_deadline() {
        let _: () =
            eventually_within(Duration::from_secs(1), "the queue drains", || async { Err::<(), _>("3 left") }).await;
    }
}
