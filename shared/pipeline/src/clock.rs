//! What time it is, as the decisions that depend on it see it: the dispatcher (what is due),
//! policy, planning and the posting-window checks. Behind a trait so that tests move time
//! instead of sleeping, and an operator can rehearse a schedule (`HARMONIA_NOW`).

use std::sync::Mutex;

use chrono::Utc;
use harmonia_contracts::domain::Timestamp;

/// A source of the current time.
pub trait Clock: Send + Sync + std::fmt::Debug + 'static {
    /// Now.
    fn now(&self) -> Timestamp;
}

/// The system's clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Utc::now()
    }
}

/// The system's clock moved by a fixed offset: it starts at a chosen time and runs at the
/// system's pace (`HARMONIA_NOW`, to rehearse a schedule).
#[derive(Clone, Copy, Debug)]
pub struct OffsetClock {
    offset: chrono::Duration,
}

impl OffsetClock {
    /// A clock that reads `at` now.
    pub fn starting_at(at: Timestamp) -> Self {
        Self { offset: at - Utc::now() }
    }
}

impl Clock for OffsetClock {
    fn now(&self) -> Timestamp {
        Utc::now() + self.offset
    }
}

/// A clock that says what it was last set to, and moves only when told.
#[derive(Debug)]
pub struct ManualClock {
    at: Mutex<Timestamp>,
}

impl ManualClock {
    /// A clock standing at `at`.
    pub fn new(at: Timestamp) -> Self {
        Self { at: Mutex::new(at) }
    }

    /// Stand at `at` from now on.
    pub fn set(&self, at: Timestamp) {
        *self.at.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = at;
    }

    /// Move on by `by`.
    pub fn advance(&self, by: chrono::Duration) {
        let mut at = self.at.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *at += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.at.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_stands_still_until_it_is_moved() {
        let start: Timestamp = "2026-12-07T14:00:00Z".parse().expect("time");
        let clock = ManualClock::new(start);
        assert_eq!((clock.now(), clock.now()), (start, start));
        clock.advance(chrono::Duration::minutes(90));
        assert_eq!(clock.now().to_rfc3339(), "2026-12-07T15:30:00+00:00");
        clock.set(start);
        assert_eq!(clock.now(), start);
        let before = Utc::now();
        assert!(SystemClock.now() >= before);
        let rehearsal = OffsetClock::starting_at(start);
        let read = rehearsal.now();
        assert!(read >= start && read - start < chrono::Duration::minutes(1), "it starts where it was set and runs");
    }
}
