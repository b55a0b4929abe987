//! The whole task hub as one trait object.

use crate::checkpoint::CheckpointStore;
use crate::dead_letters::DeadLetterStore;
use crate::history::HistoryStore;
use crate::instances::InstanceStore;
use crate::partitions::PartitionStore;
use crate::payloads::PayloadStore;
use crate::queue::QueueStore;

/// Every task hub object of one backend. Code that needs only part of it should bound on the
/// narrow trait instead (`QueueStore`, `HistoryStore`, ...).
pub trait TaskHubStore:
    QueueStore
    + HistoryStore
    + InstanceStore
    + PayloadStore
    + DeadLetterStore
    + PartitionStore
    + CheckpointStore
{
    /// A short backend name for logs and benchmark output (`memory`, `sqlite`, `azure`).
    fn backend_name(&self) -> &'static str;

    /// True when the backend keeps time itself (Azure Storage: visibility timeouts, delays
    /// and enqueue times run on the service's clock), so the [`Clock`](crate::Clock) it was
    /// built with does not move its messages. The conformance suite then waits real, short
    /// durations instead of advancing its manual clock. False by default.
    fn owns_time(&self) -> bool {
        false
    }
}
