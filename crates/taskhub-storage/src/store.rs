//! The whole task hub as one trait object.

use crate::checkpoint::CheckpointStore;
use crate::clear::ClearStore;
use crate::dead_letters::DeadLetterStore;
use crate::history::HistoryStore;
use crate::instances::InstanceStore;
use crate::partitions::PartitionStore;
use crate::payloads::PayloadStore;
use crate::processes::ProcessStore;
use crate::queue::{QueueName, QueueStore};

/// What a backend calls when messages may have become visible in a queue because another
/// process wrote them (see [`TaskHubStore::watch_queues`]): it wakes that queue's idle poller.
pub type QueueWake = std::sync::Arc<dyn Fn(QueueName) + Send + Sync>;

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
    + ClearStore
    + ProcessStore
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

    /// True when a checkpoint is applied all or nothing (one transaction: SQLite). Such a
    /// backend MUST NOT send a checkpoint's outbound messages, delete its consumed messages or
    /// write its history when its instance-row condition fails (the conformance case
    /// `atomic_checkpoint_with_a_failed_row_condition_changes_nothing`). The runtime then
    /// commits an entity's batch and the messages it sends in one checkpoint; otherwise it
    /// commits the batch first and sends its messages in a second step. False by default
    /// (the ordered checkpoint sends before it writes the row).
    fn atomic_checkpoints(&self) -> bool {
        false
    }

    /// True when [`QueueStats::oldest_enqueued_at`](crate::QueueStats) counts held (invisible)
    /// messages too. By default a backend that keeps time itself is taken to peek at visible
    /// messages only (Azure Storage); one that owns time and sees every message (PostgreSQL,
    /// on the server's clock) says so. The conformance case `stats_reports_oldest_enqueue_time`
    /// asks it.
    fn stats_count_held_messages(&self) -> bool {
        !self.owns_time()
    }

    /// Registers `wake`, which a backend that hears of other processes' writes (PostgreSQL's
    /// `LISTEN/NOTIFY`) calls with a queue that may have new visible messages, so a message
    /// from another process is picked up at once rather than at the next poll. A hint only:
    /// it may come late, twice or not at all, and polling stays the fallback. The runtime
    /// registers one per opened task hub. The default never calls it.
    fn watch_queues(&self, wake: QueueWake) {
        let _ = wake;
    }
}
