//! Emptying the hub in place (`ClearStore`), object by object (Azure Storage has no
//! transaction across them): Clear Messages on every queue, then every row of the History,
//! Instances and DeadLetters tables (entity-group batches of deletes, one PartitionKey each),
//! then every blob of the container (payloads and the overflow of rows and outboxes). The
//! Partitions table and the container itself (which marks the hub as existing) stay. ETags
//! and pop receipts are the service's, never repeated.
//!
//! The order narrows what a worker running meanwhile can leave behind: the queues first, so no
//! message is taken after its instance is gone (a start taken then would create an instance
//! whose later messages the clear removes: Running for ever); then History before Instances,
//! so a turn or row repair in flight finds its history ETag gone and conflicts (a row without
//! history is never repaired back), where a history left without its row would be repaired
//! into an instance again. A turn that commits before the History table is cleared may leave
//! messages it sent: they find no instance and wait for a start that never comes, then go to
//! the dead letters as any message for an unknown instance does (a sub-orchestration start
//! among them creates its child, whole).

use std::collections::BTreeMap;

use async_trait::async_trait;
use taskhub_storage::{ClearStore, Cleared, QueueName, QueueStore, StorageResult, MAX_PARTITIONS};

use crate::http::{status_error, Req, Service};
use crate::store::AzureStore;
use crate::tables::BatchOp;

/// Matches every row (PartitionKeys are never below the empty string).
const EVERY_ROW: &str = "PartitionKey ge ''";

impl AzureStore {
    /// Clear Messages on one queue; returns the approximate count it held. A queue that does
    /// not exist (a partition the hub never had) holds none.
    async fn clear_queue(&self, queue: QueueName) -> StorageResult<u64> {
        let held = self.stats(queue).await?.length;
        let name = self.queue_name(queue)?;
        let req = Req::new(Service::Queue, "DELETE", format!("/{name}/messages"));
        let resp = self.http.send(&req).await?;
        if resp.ok() || resp.status == 404 {
            Ok(held)
        } else {
            Err(status_error(&resp, &format!("queue {name}")))
        }
    }

    /// Deletes every row of `table`, a page of the query at a time (memory stays bounded
    /// however large the hub), each page in batches of one PartitionKey. Returns how many
    /// PartitionKeys it saw (rows come sorted by them, so a key split over two pages counts
    /// once) and how many rows `counted` picked.
    async fn clear_table(
        &self,
        table: &str,
        counted: impl Fn(&str) -> bool + Send + Sync,
    ) -> StorageResult<(u64, u64)> {
        let (mut keys, mut rows_counted) = (0u64, 0u64);
        let mut last_key: Option<String> = None;
        let mut next = None;
        loop {
            let (rows, cont) = self
                .tables
                .query_page_of(
                    table,
                    EVERY_ROW,
                    Some("PartitionKey,RowKey"),
                    None,
                    next.as_ref(),
                )
                .await?;
            let mut by_key: BTreeMap<String, Vec<BatchOp>> = BTreeMap::new();
            for row in &rows {
                let (pk, rk) = (row.str("PartitionKey"), row.str("RowKey"));
                if last_key.as_deref() != Some(pk) {
                    keys += 1;
                    last_key = Some(pk.to_owned());
                }
                if counted(rk) {
                    rows_counted += 1;
                }
                by_key
                    .entry(pk.to_owned())
                    .or_default()
                    .push(BatchOp::Delete(pk.to_owned(), rk.to_owned()));
            }
            for ops in by_key.into_values() {
                for batch in self.tables.split(table, ops)? {
                    self.tables.delete_all(table, &batch).await?;
                }
            }
            match cont {
                Some(c) => next = Some(c),
                None => return Ok((keys, rows_counted)),
            }
        }
    }

    /// Deletes every blob of the container, a page of the listing at a time; returns how many
    /// payloads were among them.
    async fn clear_blobs(&self) -> StorageResult<u64> {
        let mut payloads = 0;
        let mut marker = None;
        loop {
            let (names, next) = self.blobs.list_page("", marker.as_deref()).await?;
            for blob in names {
                if self.blobs.delete(&blob).await? && blob.starts_with("payloads/") {
                    payloads += 1;
                }
            }
            match next {
                Some(next) => marker = Some(next),
                None => return Ok(payloads),
            }
        }
    }
}

#[async_trait]
impl ClearStore for AzureStore {
    async fn clear_hub(&self) -> StorageResult<Cleared> {
        let mut cleared = Cleared::default();
        let mut queues: Vec<QueueName> = (0..MAX_PARTITIONS).map(QueueName::Control).collect();
        queues.push(QueueName::WorkItems);
        for q in queues {
            cleared.messages += self.clear_queue(q).await?;
        }
        let history = self.names.history.clone();
        cleared.histories = self.clear_table(&history, |_| false).await?.0;
        let instances = self.names.instances.clone();
        cleared.instances = self.clear_table(&instances, |_| false).await?.0;
        let dead_letters = self.names.dead_letters.clone();
        // Letter rows only: their index rows (`m-...`) name them.
        cleared.dead_letters = self
            .clear_table(&dead_letters, |rk| !rk.starts_with('m'))
            .await?
            .1;
        cleared.payloads = self.clear_blobs().await?;
        Ok(cleared)
    }
}
