//! Emptying the hub in place (`ClearStore`): one transaction deletes every row of the data
//! tables, in the schema's lock order (`histories`, `history_events`, `instances`,
//! `queue_messages`, then `dead_letters` and `payloads`). `hub`, `partitions`, `fences` and
//! the `versions` sequence stay, so leases and epochs are untouched and no ETag or receipt is
//! handed out twice.

use async_trait::async_trait;
use taskhub_storage::{ClearStore, Cleared, StorageResult};

use crate::errors::PgResultExt;
use crate::store::PostgresStore;

const WHAT: &str = "clearing the task hub";

#[async_trait]
impl ClearStore for PostgresStore {
    async fn clear_hub(&self) -> StorageResult<Cleared> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.ctx(WHAT)?;
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
