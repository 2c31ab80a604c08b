//! Scheduling on the embedded store, with a clock the tests move.
