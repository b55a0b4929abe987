//! A clock whose wall time is off by a fixed amount, for tests of what must not compare two
//! machines' clocks.

use std::time::Duration;

use taskhub::Timestamp;
use taskhub_storage::{Clock, SystemClock};

/// The system clock with its wall time moved by `ahead_ms` (negative: behind). Monotonic
/// time and sleeps are the system's.
#[derive(Debug)]
pub struct SkewedClock {
    pub system: SystemClock,
    pub ahead_ms: i64,
}

impl SkewedClock {
    /// The system clock, its wall time `ahead_ms` milliseconds ahead (negative: behind).
    pub fn new(ahead_ms: i64) -> Self {
        Self {
            system: SystemClock::new(),
            ahead_ms,
        }
    }
}

impl Clock for SkewedClock {
    fn now(&self) -> Timestamp {
        let ms = self
            .system
            .now()
            .as_millis()
            .saturating_add_signed(self.ahead_ms);
        Timestamp::from_millis(ms)
    }
    fn monotonic(&self) -> Duration {
        self.system.monotonic()
    }
    fn sleep(&self, d: Duration) -> taskhub_storage::Sleep {
        self.system.sleep(d)
    }
}
