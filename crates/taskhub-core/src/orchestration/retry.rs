//! Retry policies for activities and sub-orchestrations. A policy may carry a predicate on the
//! failure ([`RetryPolicy::with_retry_if`]), asked after the attempts and non-retryable checks.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::orchestration::error::TaskError;

/// The predicate of [`RetryPolicy::with_retry_if`].
type RetryPredicate = Arc<dyn Fn(&TaskError) -> bool + Send + Sync>;

/// How to retry a failed activity or sub-orchestration. Waits between attempts are durable
/// timers, so a retry survives a restart of the worker.
///
/// The wait before attempt `n + 1` is `first_interval × backoff_coefficient^(n − 1)`, capped at
/// `max_interval`. Retrying stops after `max_attempts` attempts, when the failure is marked
/// non-retryable, when the policy's predicate ([`with_retry_if`](Self::with_retry_if)) rejects
/// the failure, or when the next attempt would start after `retry_timeout` from the first.
///
/// ```
/// use std::time::Duration;
/// use taskhub_core::*;
///
/// async fn charge(ctx: OrchestrationContext, amount: u64) -> Result<String, OrchestrationError> {
///     // Up to 5 attempts, 1 s, 2 s, 4 s, 8 s apart, but only for failures the payment
///     // service calls transient: a declined card fails at once.
///     let policy = RetryPolicy::new(5, Duration::from_secs(1))
///         .with_backoff_coefficient(2.0)
///         .with_retry_if(|err| err.error_type() != Some("CardDeclined"));
///     Ok(ctx.call_activity_with_retry("Charge", amount, policy).await?)
/// }
/// # let mut registry = Registry::new();
/// # registry.orchestration("Charge", charge);
/// ```
#[derive(Clone)]
pub struct RetryPolicy {
    max_attempts: u32,
    first_interval: Duration,
    backoff_coefficient: f64,
    max_interval: Duration,
    retry_timeout: Option<Duration>,
    retry_if: Option<RetryPredicate>,
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_attempts", &self.max_attempts)
            .field("first_interval", &self.first_interval)
            .field("backoff_coefficient", &self.backoff_coefficient)
            .field("max_interval", &self.max_interval)
            .field("retry_timeout", &self.retry_timeout)
            .field("retry_if", &self.retry_if.as_ref().map(|_| "<predicate>"))
            .finish()
    }
}

/// Policies are equal if their numbers are, and both have no predicate or the same one (the
/// same `Arc`: a clone of one policy equals it; two closures are never compared by behaviour).
impl PartialEq for RetryPolicy {
    fn eq(&self, other: &Self) -> bool {
        let same_predicate = match (&self.retry_if, &other.retry_if) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        self.max_attempts == other.max_attempts
            && self.first_interval == other.first_interval
            && self.backoff_coefficient == other.backoff_coefficient
            && self.max_interval == other.max_interval
            && self.retry_timeout == other.retry_timeout
            && same_predicate
    }
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
            retry_if: None,
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

    /// Retries only failures `predicate` accepts (DTFx's `RetryOptions.Handle`). It is asked
    /// after a failed attempt that would otherwise be retried (attempts left, the failure not
    /// marked non-retryable), before the back-off timer; `false` ends the retries at once with
    /// that failure. Match on what the failure carries: [`TaskError::error_type`] (for an
    /// activity's or orchestration's own error, the short name of its Rust type, or the type set
    /// with `with_type`), [`TaskError::message`], [`TaskError::details`],
    /// [`TaskError::task_name`].
    ///
    /// The predicate runs in orchestration code, on replay too: it must decide from the error
    /// alone (no clock, no I/O, no state that changes between runs), so a replay takes the same
    /// decisions as the first run.
    #[doc(alias = "handle")]
    #[must_use]
    pub fn with_retry_if(
        mut self,
        predicate: impl Fn(&TaskError) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.retry_if = Some(Arc::new(predicate));
        self
    }

    /// True if the policy's predicate accepts `err` for a retry (always, without a predicate).
    #[must_use]
    pub fn accepts(&self, err: &TaskError) -> bool {
        self.retry_if.as_ref().is_none_or(|p| p(err))
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
