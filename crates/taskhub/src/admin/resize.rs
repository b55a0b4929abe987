//! Live partition-count changes (scale-out-design.md "Adding/Removing Partitions"). Raising
//! the count creates the new lease rows (workers claim them) and sends new instances to the
//! new layout; existing instances stay where their row says. Lowering it marks the removed
//! partitions retiring: their owner moves their instances and messages to live partitions and
//! retires each queue once it has been empty for `partition_retire_grace`.

use taskhub_storage::{PartitionRow, MAX_PARTITIONS};

use super::HubAdmin;
use crate::error::TaskhubError;

impl HubAdmin {
    /// Changes the partition count of a live hub to `count` (1 to 16).
    ///
    /// # Errors
    /// [`TaskhubError::InvalidSetting`] for a count out of range, or a storage error.
    pub async fn set_partition_count(&self, count: u32) -> Result<(), TaskhubError> {
        if count == 0 || count > MAX_PARTITIONS {
            return Err(TaskhubError::InvalidSetting {
                name: "partition_count".to_owned(),
                reason: format!("{count}: must be 1 to {MAX_PARTITIONS}"),
            });
        }
        let store = self.hub.store();
        let rows = store.list_partitions().await?;
        // New rows first, so that no instance is ever placed on a partition without one.
        for p in 0..count {
            if !rows.iter().any(|r| r.partition == p) {
                let row = PartitionRow::unowned(p, self.hub.clock().now());
                match store.put_partition(&row, None).await {
                    Ok(_) | Err(taskhub_storage::StorageError::Conflict { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        // Partitions coming back: live again (an operator's offline flag on a partition that
        // was not retiring stays).
        for row in rows.iter().filter(|r| r.partition < count && r.retiring) {
            self.update(row.partition, |r| PartitionRow {
                retiring: false,
                offline: false,
                ..r.clone()
            })
            .await?;
        }
        store.set_partition_count(count).await?;
        for row in rows.iter().filter(|r| r.partition >= count && !r.retiring) {
            self.update(row.partition, |r| PartitionRow {
                retiring: true,
                ..r.clone()
            })
            .await?;
        }
        self.hub.set_partition_count(count);
        Ok(())
    }
}
