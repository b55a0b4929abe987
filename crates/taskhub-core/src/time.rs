//! Timestamps as stored in history: milliseconds since the Unix epoch.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// A point in time, in whole milliseconds since the Unix epoch (UTC).
///
/// The core never reads a clock: the runtime passes timestamps in, which keeps replay pure.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(transparent)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The Unix epoch.
    pub const EPOCH: Self = Self(0);

    /// A timestamp `ms` milliseconds after the Unix epoch.
    #[must_use]
    pub const fn from_millis(ms: u64) -> Self {
        Self(ms)
    }

    /// Milliseconds since the Unix epoch.
    #[must_use]
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// Converts a `SystemTime`, clamping times before the epoch to the epoch.
    #[must_use]
    pub fn from_system_time(t: SystemTime) -> Self {
        let ms = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
        Self(u64::try_from(ms).unwrap_or(u64::MAX))
    }

    /// The same instant as a `SystemTime`.
    #[must_use]
    pub fn to_system_time(self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.0)
    }

    /// This timestamp moved forward by `d` (saturating).
    #[must_use]
    pub fn saturating_add(self, d: Duration) -> Self {
        let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        Self(self.0.saturating_add(ms))
    }

    /// The time from `earlier` to `self`, or zero if `earlier` is later.
    #[must_use]
    pub fn saturating_since(self, earlier: Self) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ms", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_saturates() {
        let t = Timestamp::from_millis(1_700_000_000_123);
        assert_eq!(Timestamp::from_system_time(t.to_system_time()), t);
        assert_eq!(
            t.saturating_add(Duration::from_secs(1)).as_millis(),
            1_700_000_001_123
        );
        assert_eq!(Timestamp::EPOCH.saturating_since(t), Duration::ZERO);
        assert_eq!(
            Timestamp::from_millis(u64::MAX)
                .saturating_add(Duration::MAX)
                .as_millis(),
            u64::MAX
        );
    }
}
