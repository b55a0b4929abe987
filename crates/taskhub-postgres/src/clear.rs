//! Emptying the hub in place (`ClearStore`): one transaction deletes every row of the data
//! tables. `hub`, `partitions`, `fences` and the `versions` sequence stay, so leases and epochs
//! are untouched and no ETag or receipt is handed out twice.
//!
//! The transaction first takes the data tables whole (`LOCK TABLE ... IN EXCLUSIVE MODE`: plain
//! reads go on, every write and row lock waits), so it deletes one state of the hub, and it
//! never waits on row locks that a writer holds while waiting on rows it already deleted (a
//! group-committed batch of checkpoints locks many instances' rows, so row-by-row deletes in
//! table order could wait in a cycle). The tables are taken in the order a checkpoint takes
//! them (`histories`, `history_events`, `queue_messages`, `instances`; then `dead_letters` and
//! `payloads`, which no checkpoint touches). A writer that takes them in another order can still
//! meet the clear in a deadlock; PostgreSQL then aborts one of the two (`Busy`): the clear tries
//! again, up to [`ATTEMPTS`] times, and a checkpoint is retried by its caller.

use async_trait::async_trait;
use taskhub_storage::{ClearStore, Cleared, StorageError, StorageResult};

use crate::errors::PgResultExt;
use crate::store::PostgresStore;

const WHAT: &str = "clearing the task hub";

/// How many times a clear that lost a deadlock (`Busy`) runs before the error is returned.
const ATTEMPTS: usize = 5;

const LOCK: &str = "LOCK TABLE histories, history_events, queue_messages, instances, \
                    dead_letters, payloads IN EXCLUSIVE MODE";

#[async_trait]
impl ClearStore for PostgresStore {
    async fn clear_hub(&self) -> StorageResult<Cleared> {
        let mut attempt = 1;
        loop {
            match self.clear_once().await {
                Err(StorageError::Busy { .. }) if attempt < ATTEMPTS => attempt += 1,
                other => return other,
            }
        }
    }
}

impl PostgresStore {
    async fn clear_once(&self) -> StorageResult<Cleared> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.ctx(WHAT)?;
        // Whole-table deletes of a large hub may run past the connection's statement timeout;
        // the lock still waits at most `lock_timeout` for the checkpoints in flight.
        tx.batch_execute("SET LOCAL statement_timeout = 0")
            .await
            .ctx(WHAT)?;
        tx.execute(LOCK, &[]).await.ctx(WHAT)?;
        let histories = tx.execute("DELETE FROM histories", &[]).await.ctx(WHAT)?;
        tx.execute("DELETE FROM history_events", &[])
            .await
            .ctx(WHAT)?;
        let instances = tx.execute("DELETE FROM instances", &[]).await.ctx(WHAT)?;
        let messages = tx
            .execute("DELETE FROM queue_messages", &[])
            .await
            .ctx(WHAT)?;
        let dead_letters = tx
            .execute("DELETE FROM dead_letters", &[])
            .await
            .ctx(WHAT)?;
        let payloads = tx.execute("DELETE FROM payloads", &[]).await.ctx(WHAT)?;
        tx.commit().await.ctx(WHAT)?;
        Ok(Cleared {
            instances,
            histories,
            messages,
            payloads,
            dead_letters,
        })
    }
}
