//! The limits, with their defaults and their check.

use std::time::Duration;

/// The limits of one endpoint's connections (see the crate's docs for what each does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once; one more is closed as soon as it is accepted. Default 1,000.
    pub max_connections: usize,
    /// How long a new connection may take to send its first request head. Default 10 s.
    pub first_request_timeout: Duration,
    /// How long a connection may stay open with no call in flight. Default 2 minutes.
    pub idle_timeout: Duration,
    /// How often an HTTP/2 connection is pinged, and how long its peer has to answer.
    /// Default 30 s.
    pub keepalive_interval: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 1_000,
            first_request_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            keepalive_interval: Duration::from_secs(30),
        }
    }
}

/// A limit that cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitsError {
    /// A limit of zero.
    #[error("{name} must be more than zero")]
    Zero {
        /// The limit's name.
        name: &'static str,
    },
}

impl Limits {
    /// Checks that every limit is usable.
    ///
    /// # Errors
    /// [`LimitsError::Zero`] naming the first limit that is zero.
    pub fn check(&self) -> Result<(), LimitsError> {
        let zero = |name| Err(LimitsError::Zero { name });
        if self.max_connections == 0 {
            return zero("max_connections");
        }
        if self.first_request_timeout.is_zero() {
            return zero("first_request_timeout");
        }
        if self.idle_timeout.is_zero() {
            return zero("idle_timeout");
        }
        if self.keepalive_interval.is_zero() {
            return zero("keepalive_interval");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_usable_and_a_zero_is_named() {
        assert_eq!(Limits::default().check(), Ok(()));
        let l = Limits {
            idle_timeout: Duration::ZERO,
            ..Limits::default()
        };
        assert_eq!(
            l.check(),
            Err(LimitsError::Zero {
                name: "idle_timeout"
            })
        );
    }
}
