//! The runtime status of an orchestration instance.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Where an instance is in its life, as stored in the instances table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum OrchestrationStatus {
    /// Started by a client but no turn has run yet.
    Pending,
    /// At least one turn has run and the orchestration has not finished.
    Running,
    /// Suspended by a client; messages are kept until it is resumed.
    Suspended,
    /// Returned successfully.
    Completed,
    /// Returned an error, panicked, or was found nondeterministic.
    Failed,
    /// Terminated by a client.
    Terminated,
    /// Ended by continue-as-new (the state of an old execution; the instance goes on).
    ContinuedAsNew,
}

impl OrchestrationStatus {
    /// Every status, in declaration order.
    pub const ALL: [Self; 7] = [
        Self::Pending,
        Self::Running,
        Self::Suspended,
        Self::Completed,
        Self::Failed,
        Self::Terminated,
        Self::ContinuedAsNew,
    ];

    /// True once the instance will not run again by itself.
    #[must_use]
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Terminated)
    }

    /// True for Pending, Running and Suspended: the states a default start refuses to replace.
    #[must_use]
    pub fn is_active(self) -> bool {
        matches!(self, Self::Pending | Self::Running | Self::Suspended)
    }

    /// The status name as stored.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Running => "Running",
            Self::Suspended => "Suspended",
            Self::Completed => "Completed",
            Self::Failed => "Failed",
            Self::Terminated => "Terminated",
            Self::ContinuedAsNew => "ContinuedAsNew",
        }
    }
}

impl fmt::Display for OrchestrationStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing an unknown status name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown orchestration status {0:?} (expected one of Pending, Running, Suspended, Completed, Failed, Terminated, ContinuedAsNew)")]
pub struct UnknownStatus(pub String);

impl FromStr for OrchestrationStatus {
    type Err = UnknownStatus;
    fn from_str(s: &str) -> Result<Self, UnknownStatus> {
        Self::ALL
            .into_iter()
            .find(|v| v.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownStatus(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_case_insensitively() {
        for s in OrchestrationStatus::ALL {
            assert_eq!(
                s.as_str()
                    .to_lowercase()
                    .parse::<OrchestrationStatus>()
                    .unwrap(),
                s
            );
        }
        assert!("bogus"
            .parse::<OrchestrationStatus>()
            .unwrap_err()
            .to_string()
            .contains("bogus"));
        assert!(OrchestrationStatus::Suspended.is_active());
        assert!(!OrchestrationStatus::ContinuedAsNew.is_terminal());
    }
}
