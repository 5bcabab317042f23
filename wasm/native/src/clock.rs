//! The core's time base: microseconds since the endpoint was created.

use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    start: Instant,
}

impl Clock {
    pub(crate) fn new() -> Clock {
        Clock {
            start: Instant::now(),
        }
    }

    /// Microseconds since `new`; monotonic.
    pub(crate) fn now_us(&self) -> u64 {
        // u64 microseconds last 584,000 years: the cast cannot truncate.
        self.start.elapsed().as_micros() as u64
    }

    /// How long to wait before `deadline_us` (None = no deadline), capped.
    pub(crate) fn wait_until(&self, deadline_us: Option<u64>, max_wait: Duration) -> Duration {
        match deadline_us {
            Some(at) => max_wait.min(Duration::from_micros(at.saturating_sub(self.now_us()))),
            None => max_wait,
        }
    }
}
