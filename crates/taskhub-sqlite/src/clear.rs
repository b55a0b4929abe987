//! Emptying the hub in place (`ClearStore`): one transaction deletes every row of the data
//! tables. `hub`, `partitions` and `counters` stay, so leases and epochs are untouched and no
//! ETag or receipt is handed out twice; `AUTOINCREMENT` keeps message and letter IDs rising.

use async_trait::async_trait;
use taskhub_storage::{ClearStore, Cleared, StorageResult};

use crate::errors::SqlResultExt;
use crate::store::SqliteStore;
use crate::writer::Tx;

/// Deletes every row of `table`; returns how many.
fn delete_all(tx: &Tx<'_>, table: &'static str) -> StorageResult<u64> {
    let n = tx
        .conn
        .execute(&format!("DELETE FROM {table}"), [])
        .ctx(table)?;
    Ok(n as u64)
}

#[async_trait]
impl ClearStore for SqliteStore {
    async fn clear_hub(&self) -> StorageResult<Cleared> {
        self.write(|tx| {
            delete_all(tx, "history_chunks")?;
            let histories = crate::history::delete_all_heads(tx.conn)?;
            delete_all(tx, "history_index")?;
            Ok(Cleared {
                histories,
                instances: delete_all(tx, "instances")?,
                messages: delete_all(tx, "queue_messages")?,
                payloads: delete_all(tx, "payloads")?,
                dead_letters: delete_all(tx, "dead_letters")?,
            })
        })
        .await
    }
}
