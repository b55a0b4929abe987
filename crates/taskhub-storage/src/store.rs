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
}
