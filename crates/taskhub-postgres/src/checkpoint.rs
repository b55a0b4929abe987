//! The checkpoint: one orchestration turn's writes in ONE transaction (READ COMMITTED).
//!
//! Its first statement reads the partition's fence `FOR SHARE`: a lease write that moves the
//! epoch waits for this transaction, and if the epoch is not the checkpoint's, the
//! transaction stops there with `Fenced` — so a stale owner's commit is rejected by the
//! database itself, with no window between check and write. Then, in the lock order of
//! [`schema`](crate::schema): the history (its ETag checked in the statement that moves the
//! head; the event rows' key (instance, execution, sequence) is a second guard), the
//! instance row with its condition, the outbound messages (one statement; a claimed one
//! inserted as held, its receipt returned) and the deletes of the consumed messages (one
//! statement; a stale receipt is ignored). Nothing is left in a pending outbox.

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Transaction};
use taskhub_storage::{
    CheckpointOutcome, CheckpointRequest, CheckpointStore, LeaseFence, StorageError, StorageResult,
};

use crate::errors::PgResultExt;
use crate::history::{head_etag, write_in};
use crate::instances::put_in;
use crate::queues::{check_messages, delete_many, enqueue_claimed, Inserts};
use crate::store::PostgresStore;

const WHAT: &str = "checkpoint";

/// The first statement of a checkpoint: the fence, read with a shared row lock.
pub const FENCE_SQL: &str = "SELECT epoch FROM fences WHERE partition = $1 FOR SHARE";

async fn check_fence(tx: &Transaction<'_>, fence: LeaseFence) -> StorageResult<()> {
    let stmt = tx.prepare_cached(FENCE_SQL).await.ctx(WHAT)?;
    let row = tx
        .query_opt(&stmt, &[&i64::from(fence.partition)])
        .await
        .ctx(WHAT)?;
    let Some(row) = row else {
        return Err(StorageError::NotFound {
            what: format!("partition {} (checkpoint fence)", fence.partition),
        });
    };
    let current: i64 = row.get(0);
    let current = u64::try_from(current).unwrap_or(0);
    if current != fence.epoch {
        return Err(StorageError::Fenced {
            partition: fence.partition,
            attempted: fence.epoch,
            current,
        });
    }
    Ok(())
}

/// Applies a checkpoint inside `tx` (the caller commits).
pub(crate) async fn checkpoint_in(
    tx: &Transaction<'_>,
    request: &CheckpointRequest,
) -> StorageResult<CheckpointOutcome> {
    if let Some(fence) = request.fence {
        check_fence(tx, fence).await?;
    }
    let history_etag = match &request.history {
        Some(write) => Some(write_in(tx, &request.instance_id, write).await?),
        None => head_etag(tx, &request.instance_id).await?,
    };
    let instance_etag = match &request.instance {
        Some((row, expect)) => {
            if row.instance_id != request.instance_id {
                return Err(StorageError::InvalidArgument(format!(
                    "checkpoint of instance '{}' writes the row of instance '{}'",
                    request.instance_id, row.instance_id
                )));
            }
            Some(put_in(tx, row, expect).await?)
        }
        None => None,
    };
    let mut inserts = Inserts::default();
    let mut claimed = Vec::new();
    for out in &request.outbound {
        match out.claim {
            Some(visibility) => {
                claimed.push(enqueue_claimed(tx, out.queue, &out.message, visibility).await?);
            }
            None => inserts.push(out.queue, &out.message),
        }
    }
    inserts.run(tx).await?;
    // A stale receipt: the message was redelivered; the engine discards the duplicate.
    delete_many(tx, &request.consumed).await?;
    Ok(CheckpointOutcome {
        history_etag,
        instance_etag,
        claimed,
    })
}

#[async_trait]
impl CheckpointStore for PostgresStore {
    async fn checkpoint(&self, request: CheckpointRequest) -> StorageResult<CheckpointOutcome> {
        for out in &request.outbound {
            check_messages(out.queue, std::iter::once(&out.message))?;
        }
        taskhub_storage::checkpoint::check_claims(&request)?;
        let mut client = self.client().await?;
        let tx = client.transaction().await.ctx(WHAT)?;
        let outcome = checkpoint_in(&tx, &request).await?;
        tx.commit().await.ctx(WHAT)?;
        Ok(outcome)
    }
}
