//! Retry policies for activities and sub-orchestrations.

use std::time::Duration;

/// How to retry a failed activity or sub-orchestration. Waits between attempts are durable
/// timers, so a retry survives a restart of the worker.
///
/// The wait before attempt `n + 1` is `first_interval × backoff_coefficient^(n − 1)`, capped at
/// `max_interval`. Retrying stops after `max_attempts` attempts, when the failure is marked
/// non-retryable, or when the next attempt would start after `retry_timeout` from the first.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    max_attempts: u32,
    first_interval: Duration,
    backoff_coefficient: f64,
    max_interval: Duration,
    retry_timeout: Option<Duration>,
}

impl RetryPolicy {
    /// At most `max_attempts` attempts (at least 1) with `first_interval` between the first two.
    /// Back-off coefficient 1.0, no maximum interval, no timeout.
    #[must_use]
    pub fn new(max_attempts: u32, first_interval: Duration) -> Self {
        Self {
            max_attempts: max_attempts.max(1),
            first_interval,
            backoff_coefficient: 1.0,
            max_interval: Duration::MAX,
            retry_timeout: None,
        }
    }

    /// Multiplies the wait by `coefficient` after each failed attempt (values below 1 are
    /// treated as 1; NaN as 1).
    #[must_use]
    pub fn with_backoff_coefficient(mut self, coefficient: f64) -> Self {
        self.backoff_coefficient = if coefficient.is_nan() {
            1.0
        } else {
            coefficient.max(1.0)
        };
        self
    }

    /// Caps the wait between attempts.
    #[must_use]
    pub fn with_max_interval(mut self, max_interval: Duration) -> Self {
        self.max_interval = max_interval;
        self
    }

    /// Gives up when the next attempt would start later than this after the first attempt.
    #[must_use]
    pub fn with_retry_timeout(mut self, timeout: Duration) -> Self {
        self.retry_timeout = Some(timeout);
        self
    }

    /// The maximum number of attempts.
    #[must_use]
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The retry timeout, if any.
    #[must_use]
    pub fn retry_timeout(&self) -> Option<Duration> {
        self.retry_timeout
    }

    /// The wait after failed attempt `attempt` (1-based) before the next one.
    #[must_use]
    pub fn delay_after(&self, attempt: u32) -> Duration {
        let exp = i32::try_from(attempt.saturating_sub(1)).unwrap_or(i32::MAX);
        let secs = self.first_interval.as_secs_f64() * self.backoff_coefficient.powi(exp);
        let delay = Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX);
        delay.min(self.max_interval)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_backoff_is_capped() {
        let p = RetryPolicy::new(5, Duration::from_secs(1))
            .with_backoff_coefficient(2.0)
            .with_max_interval(Duration::from_secs(5));
        assert_eq!(p.delay_after(1), Duration::from_secs(1));
        assert_eq!(p.delay_after(2), Duration::from_secs(2));
        assert_eq!(p.delay_after(3), Duration::from_secs(4));
        assert_eq!(p.delay_after(4), Duration::from_secs(5));
        assert_eq!(RetryPolicy::new(0, Duration::ZERO).max_attempts(), 1);
        assert_eq!(
            p.clone().with_backoff_coefficient(f64::NAN).delay_after(3),
            Duration::from_secs(1)
        );
    }
}
