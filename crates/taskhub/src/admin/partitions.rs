//! Partition status and manual control of lease rows.

use std::time::Duration;

use taskhub_storage::{PartitionRow, QueueName, StorageError};

use super::HubAdmin;
use crate::error::TaskhubError;

/// One partition as an operator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionStatus {
    /// The lease row.
    pub row: PartitionRow,
    /// Messages in the control queue, visible or not.
    pub queue_length: u64,
    /// Age of the oldest message, by this machine's clock.
    pub oldest_message_age: Option<Duration>,
    /// Time since the row was last written, by this machine's clock (monitoring only: lease
    /// expiry itself never compares clocks).
    pub lease_age: Duration,
}

impl HubAdmin {
    /// Every partition with its queue statistics.
    ///
    /// # Errors
    /// A storage error.
    pub async fn partitions(&self) -> Result<Vec<PartitionStatus>, TaskhubError> {
        let store = self.hub.store();
        let now = self.hub.clock().now();
        let mut out = Vec::new();
        for row in store.list_partitions().await? {
            let stats = store.stats(QueueName::Control(row.partition)).await?;
            out.push(PartitionStatus {
                queue_length: stats.length,
                oldest_message_age: stats.oldest_enqueued_at.map(|t| now.saturating_since(t)),
                lease_age: now.saturating_since(row.updated_at),
                row,
            });
        }
        Ok(out)
    }

    /// Partitions whose lease is older than `threshold`, or that nobody holds (offline ones
    /// excepted): what a monitor alerts on.
    ///
    /// # Errors
    /// A storage error.
    pub async fn stale(&self, threshold: Duration) -> Result<Vec<PartitionStatus>, TaskhubError> {
        Ok(self
            .partitions()
            .await?
            .into_iter()
            .filter(|p| !p.row.offline && (p.row.owner.is_none() || p.lease_age > threshold))
            .collect())
    }

    /// Bumps a partition: a new epoch and no owner, so the current owner's checkpoints are
    /// fenced and it drops the partition at its next pass; any worker then claims it.
    ///
    /// # Errors
    /// [`TaskhubError::UnknownPartition`], or a storage error.
    pub async fn bump(&self, partition: u32) -> Result<PartitionRow, TaskhubError> {
        self.update(partition, |row| PartitionRow {
            owner: None,
            next_owner: None,
            draining: false,
            epoch: row.epoch + 1,
            ..row.clone()
        })
        .await
    }

    /// Takes a partition offline (its owner drains and releases it; nobody claims it) or
    /// back online.
    ///
    /// # Errors
    /// [`TaskhubError::UnknownPartition`], or a storage error.
    pub async fn set_offline(
        &self,
        partition: u32,
        offline: bool,
    ) -> Result<PartitionRow, TaskhubError> {
        self.update(partition, |row| PartitionRow {
            offline,
            ..row.clone()
        })
        .await
    }

    /// Bars a worker from holding partitions (it hands its partitions over), or lifts the bar.
    /// Returns the list after the change.
    ///
    /// # Errors
    /// A storage error (`NotFound` if the hub does not exist).
    pub async fn set_prohibited(
        &self,
        worker: &str,
        prohibited: bool,
    ) -> Result<Vec<String>, TaskhubError> {
        let store = self.hub.store();
        let mut list = store
            .hub_info()
            .await?
            .map(|i| i.prohibited_workers)
            .unwrap_or_default();
        list.retain(|w| w != worker);
        if prohibited {
            list.push(worker.to_owned());
        }
        store.set_prohibited_workers(list.clone()).await?;
        Ok(list)
    }

    /// Workers barred from holding partitions.
    ///
    /// # Errors
    /// A storage error.
    pub async fn prohibited(&self) -> Result<Vec<String>, TaskhubError> {
        Ok(self
            .hub
            .store()
            .hub_info()
            .await?
            .map(|i| i.prohibited_workers)
            .unwrap_or_default())
    }

    /// Rewrites one lease row with `change`, ETag-conditionally, re-reading on conflict.
    pub(crate) async fn update(
        &self,
        partition: u32,
        change: impl Fn(&PartitionRow) -> PartitionRow,
    ) -> Result<PartitionRow, TaskhubError> {
        let store = self.hub.store();
        for _ in 0..10 {
            let rows = store.list_partitions().await?;
            let count = rows.len();
            let row = rows.into_iter().find(|r| r.partition == partition).ok_or(
                TaskhubError::UnknownPartition {
                    partition,
                    rows: count,
                },
            )?;
            let new = PartitionRow {
                updated_at: self.hub.clock().now(),
                etag: None,
                ..change(&row)
            };
            match store.put_partition(&new, row.etag.as_ref()).await {
                Ok(etag) => {
                    return Ok(PartitionRow {
                        etag: Some(etag),
                        ..new
                    })
                }
                Err(StorageError::Conflict { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(TaskhubError::Contended(partition))
    }
}
