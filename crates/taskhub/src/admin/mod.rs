//! Operating a task hub (table-partitioning-service.md "Monitoring" and "Manual Control"):
//! partition status, stale-lease detection, bump, offline/online, prohibited workers, live
//! partition-count changes, and a scale recommendation.

mod partitions;
mod resize;
mod scale;
mod unmatched;

pub use partitions::PartitionStatus;
pub use scale::{QueueSample, ScaleAction, ScaleRecommendation};
pub use unmatched::{UnmatchedName, UnmatchedSource, UnmatchedWork, WorkKind};

use crate::hub::TaskHub;

/// Admin operations on a task hub (from [`TaskHub::admin`]).
#[derive(Debug, Clone)]
pub struct HubAdmin {
    pub(crate) hub: TaskHub,
}

impl TaskHub {
    /// Admin operations on this hub.
    #[must_use]
    pub fn admin(&self) -> HubAdmin {
        HubAdmin { hub: self.clone() }
    }
}
