//! Emptying a task hub: every instance and everything that belongs to it goes, the hub and
//! its partitions stay.

use async_trait::async_trait;

use crate::error::StorageResult;

/// What [`ClearStore::clear_hub`] removed, by kind of object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cleared {
    /// Instance rows (orchestrations and entities).
    pub instances: u64,
    /// Histories (one per instance, every execution of it).
    pub histories: u64,
    /// Queue messages of every queue, visible, held and delayed. Approximate where the
    /// service only counts approximately (Azure Storage's queue length).
    pub messages: u64,
    /// Large payloads (blobs of the payload store).
    pub payloads: u64,
    /// Dead letters.
    pub dead_letters: u64,
}

/// Emptying the hub in place (`DeleteTaskHub` over gRPC): the storage itself stays, so the
/// processes serving the hub carry on.
///
/// Contract:
/// * `clear_hub` MUST remove every instance row, every history (every execution, pending
///   outboxes with it), every message of every queue (control queues and the work-item queue,
///   visible, held or delayed), every large payload and every dead letter.
/// * It MUST leave the hub info and the partition rows exactly as they were (owners, epochs,
///   ETags): leases held now stay valid, and a checkpoint fenced by one still commits.
/// * It MUST NOT hand out again an ETag or receipt issued before it: a checkpoint conditional
///   on a history or instance-row ETag read before the clear MUST fail with `Conflict`, and a
///   receipt of a message dequeued before it MUST NOT delete a message enqueued after.
/// * The store MUST work normally afterwards (enqueue, dequeue, checkpoints, rows).
/// * It need not be atomic with other writes: a write racing the clear may survive it. A
///   backend with transactions clears in one.
#[async_trait]
pub trait ClearStore: Send + Sync {
    /// Empties the hub; returns what was removed.
    async fn clear_hub(&self) -> StorageResult<Cleared>;
}
