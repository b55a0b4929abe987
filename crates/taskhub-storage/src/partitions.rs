//! The partitions table: lease rows, ETag-conditional, and the hub's metadata.

use async_trait::async_trait;
use taskhub_core::Timestamp;

use crate::error::{StorageError, StorageResult};
use crate::history::ETag;
use crate::queue::MAX_PARTITIONS;

/// Rejects a partition a hub cannot have: [`MAX_PARTITIONS`] and up.
///
/// # Errors
/// [`StorageError::InvalidArgument`] naming the partition.
pub fn check_partition(partition: u32) -> StorageResult<()> {
    if partition >= MAX_PARTITIONS {
        return Err(StorageError::InvalidArgument(format!(
            "partition {partition}: a hub has at most {MAX_PARTITIONS} partitions"
        )));
    }
    Ok(())
}

/// Rejects a partition count a hub cannot have: 0, or over [`MAX_PARTITIONS`].
///
/// # Errors
/// [`StorageError::InvalidArgument`] naming the count.
pub fn check_partition_count(count: u32) -> StorageResult<()> {
    if count == 0 || count > MAX_PARTITIONS {
        return Err(StorageError::InvalidArgument(format!(
            "partition count {count}: it must be 1 to {MAX_PARTITIONS}"
        )));
    }
    Ok(())
}

/// The lease row of one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionRow {
    /// Partition number (0-based).
    pub partition: u32,
    /// The worker holding the lease.
    pub owner: Option<String>,
    /// A worker that asked for the lease to be handed over.
    pub next_owner: Option<String>,
    /// Incremented on every acquisition; checkpoints carry it (fencing).
    pub epoch: u64,
    /// The owner is draining the partition to hand it over.
    pub draining: bool,
    /// The partition is being removed (its messages move to live partitions).
    pub retiring: bool,
    /// An operator took the partition offline.
    pub offline: bool,
    /// Last write, by the writer's clock (informational only: expiry is judged by ETag age).
    pub updated_at: Timestamp,
    /// Orchestration turns committed on this partition since it was created, across owners:
    /// each owner adds its own at every renewal (so it lags by up to a renewal interval, and a
    /// killed owner's last interval is never added). Informational: the hub's throughput.
    pub turns: u64,
    /// The work-item doorbell: its owner adds one when it has sent work items to the shared
    /// work-item queue that no worker has claimed (more than its free activity slots), so that
    /// other workers, which see it change in the lease read they do anyway, poll that queue
    /// at once instead of after their idle back-off. Carried over by every other write (claims
    /// and handovers keep it); only its changes mean anything.
    pub doorbell: u64,
    /// The row's version; ignored on write.
    pub etag: Option<ETag>,
}

impl PartitionRow {
    /// A new row: epoch 0, no owner, live.
    #[must_use]
    pub fn unowned(partition: u32, now: Timestamp) -> Self {
        Self {
            partition,
            owner: None,
            next_owner: None,
            epoch: 0,
            draining: false,
            retiring: false,
            offline: false,
            updated_at: now,
            turns: 0,
            doorbell: 0,
            etag: None,
        }
    }
}

/// Task hub metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubInfo {
    /// The partition count new instances are placed with.
    pub partition_count: u32,
    /// When the hub was created.
    pub created_at: Timestamp,
    /// Workers an operator barred from holding partitions (they hand theirs over).
    pub prohibited_workers: Vec<String>,
}

/// The partitions table and hub metadata.
///
/// Contract:
/// * `create_hub` MUST create the hub with `partition_count` partition rows (epoch 0, no owner)
///   if it does not exist, and MUST otherwise leave it unchanged and return what is stored;
///   it MUST reject a count of 0 or over 16 with `InvalidArgument`.
/// * `list_partitions` MUST return every row with its current ETag, ordered by partition.
/// * `put_partition` MUST fail with `Conflict` unless `expected` matches the stored ETag
///   (`None` = the row must not exist), and MUST return a new, different ETag.
/// * `set_partition_count` MUST change the count stored in the hub info.
/// * `set_prohibited_workers` MUST replace the list `hub_info` returns, and MUST fail with
///   `NotFound` if the hub does not exist.
/// * `lease_table` MUST return what `hub_info` and `list_partitions` return.
/// * `renew_partitions` MUST apply each write as `put_partition` would and return each one's
///   outcome in order; a write that conflicts, fails or gets no answer MUST NOT keep the
///   others from being applied (a lease manager renews its partitions independently).
#[async_trait]
pub trait PartitionStore: Send + Sync {
    /// Creates the hub if missing; returns its info.
    async fn create_hub(&self, partition_count: u32, now: Timestamp) -> StorageResult<HubInfo>;
    /// Reads hub info (`None` if the hub does not exist).
    async fn hub_info(&self) -> StorageResult<Option<HubInfo>>;
    /// Changes the partition count for new instances.
    async fn set_partition_count(&self, partition_count: u32) -> StorageResult<()>;
    /// Replaces the list of workers barred from holding partitions.
    async fn set_prohibited_workers(&self, workers: Vec<String>) -> StorageResult<()>;
    /// Reads every partition row.
    async fn list_partitions(&self) -> StorageResult<Vec<PartitionRow>>;
    /// Writes a row if its ETag is still `expected`.
    async fn put_partition(
        &self,
        row: &PartitionRow,
        expected: Option<&ETag>,
    ) -> StorageResult<ETag>;

    /// The hub info and every partition row: what a lease manager reads on each pass. A
    /// backend that keeps both in one place (Azure: one table partition) reads them with one
    /// request; the default reads them one after the other.
    async fn lease_table(&self) -> StorageResult<LeaseTable> {
        let info = self.hub_info().await?;
        let rows = self.list_partitions().await?;
        Ok(LeaseTable { info, rows })
    }

    /// Writes several rows, each if its ETag is still the one given (a lease manager renewing
    /// what it holds). A backend that can write them in one request does (Azure: one
    /// entity-group transaction, redone row by row, all at once, if it conflicts or gets no
    /// answer); the default writes them one by one. Returns each write's outcome, in order;
    /// the outer error is for a failure that says nothing about which rows were written.
    async fn renew_partitions(
        &self,
        writes: &[(PartitionRow, ETag)],
    ) -> StorageResult<Vec<StorageResult<ETag>>> {
        let mut out = Vec::with_capacity(writes.len());
        for (row, expected) in writes {
            out.push(self.put_partition(row, Some(expected)).await);
        }
        Ok(out)
    }
}

/// What [`PartitionStore::lease_table`] reads.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseTable {
    /// The hub info (`None` if the hub does not exist).
    pub info: Option<HubInfo>,
    /// Every partition row, ordered by partition.
    pub rows: Vec<PartitionRow>,
}
