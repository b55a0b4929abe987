//! The checkpoint: one orchestration turn's writes in ONE transaction (READ COMMITTED).
//!
//! Its first statement reads the partition's fence `FOR SHARE`: a lease write that moves the
//! epoch waits for this transaction, and if the epoch is not the checkpoint's, the
//! transaction stops there with `Fenced` — so a stale owner's commit is rejected by the
//! database itself, with no window between check and write. Then, in the lock order of
//! [`schema`](crate::schema): the history (its ETag checked in the statement that moves the
//! head; the event rows' key (instance, execution, sequence) is a second guard), the
//! outbound messages (one statement for the plain ones, new rows that lock nothing; a claimed
//! one inserted as held, its receipt returned), the instance row with its condition, and the
//! deletes of the consumed messages (one statement; a stale receipt is ignored). Nothing is
//! left in a pending outbox.

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Transaction};
use taskhub_storage::{
    CheckpointOutcome, CheckpointRequest, CheckpointStep, CheckpointStore, LeaseFence,
    StepObserver, StorageResult,
};

use crate::errors::PgResultExt;
use crate::history::{head_etag, write_in};
use crate::instances::put_in;

use crate::queues::{delete_many, enqueue_claimed, Inserts};
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
    // A negative epoch (never written) counts as 0, as it always did.
    fence.check(row.map(|r| u64::try_from(r.get::<_, i64>(0)).unwrap_or(0)))
}

/// Applies a checkpoint inside `tx` (the caller commits), telling `observer` after each step
/// (all inside the transaction: nothing is visible before the commit, and an observer error
/// rolls everything back).
pub(crate) async fn checkpoint_in(
    tx: &Transaction<'_>,
    request: &CheckpointRequest,
    observer: &dyn StepObserver,
) -> StorageResult<CheckpointOutcome> {
    if let Some(fence) = request.fence {
        check_fence(tx, fence).await?;
    }
    observer.after(CheckpointStep::FenceChecked, request)?;
    let history_etag = match &request.history {
        Some(write) => Some(write_in(tx, &request.instance_id, write).await?),
        None => head_etag(tx, &request.instance_id).await?,
    };
    observer.after(CheckpointStep::HistoryCommitted, request)?;
    // New rows only: inserting them locks nothing another transaction waits for.
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
    observer.after(CheckpointStep::OutboundSent, request)?;
    let instance_etag = match &request.instance {
        Some((row, expect)) => {
            taskhub_storage::checkpoint::check_instance_row(request)?;
            Some(put_in(tx, row, expect).await?)
        }
        None => None,
    };
    observer.after(CheckpointStep::InstanceWritten, request)?;
    // A stale receipt: the message was redelivered; the engine discards the duplicate.
    delete_many(tx, &request.consumed).await?;
    observer.after(CheckpointStep::ConsumedDeleted, request)?;
    Ok(CheckpointOutcome {
        history_etag,
        instance_etag,
        claimed,
    })
}

impl PostgresStore {
    /// Rejects what the transaction could not carry out, before it starts.
    fn validate(&self, request: &CheckpointRequest) -> StorageResult<()> {
        for out in &request.outbound {
            taskhub_storage::check_messages(self, out.queue, [&out.message])?;
        }
        taskhub_storage::checkpoint::check_instance_row(request)?;
        taskhub_storage::checkpoint::check_claims(request)
    }

    /// Wakes other processes for the plain outbound messages visible at once.
    fn announce_outbound(&self, request: &CheckpointRequest) {
        for out in &request.outbound {
            if out.claim.is_none() && out.message.delay.is_zero() {
                self.announce(out.queue);
            }
        }
    }
}

#[async_trait]
impl CheckpointStore for PostgresStore {
    /// The same transaction as [`checkpoint_observed`](Self::checkpoint_observed), pipelined
    /// (see `pipeline.rs`) and group-committed with the checkpoints queued at
    /// the same time (see `writer.rs`).
    async fn checkpoint(&self, request: CheckpointRequest) -> StorageResult<CheckpointOutcome> {
        self.validate(&request)?;
        self.record_pool();
        let outbound: Vec<_> = request
            .outbound
            .iter()
            .filter(|o| o.claim.is_none() && o.message.delay.is_zero())
            .map(|o| o.queue)
            .collect();
        let outcome = crate::writer::submit(&self.writer, request).await?;
        for queue in outbound {
            self.announce(queue);
        }
        Ok(outcome)
    }

    /// The steps of the ordered checkpoint, all inside one transaction (`OutboxCleared`: after
    /// the commit). A worker stopped at any of them holds the fence `FOR SHARE` until the
    /// server ends its idle transaction (see [`IDLE_IN_TRANSACTION_TIMEOUT`](crate::store::IDLE_IN_TRANSACTION_TIMEOUT)),
    /// so a new owner's lease waits at most that long, and the stopped worker's commit fails.
    async fn checkpoint_observed(
        &self,
        request: CheckpointRequest,
        observer: &dyn StepObserver,
    ) -> StorageResult<CheckpointOutcome> {
        self.validate(&request)?;
        observer.after(CheckpointStep::Validated, &request)?;
        let mut client = self.client().await?;
        let tx = client.transaction().await.ctx(WHAT)?;
        let outcome = checkpoint_in(&tx, &request, observer).await?;
        tx.commit().await.ctx(WHAT)?;
        self.announce_outbound(&request);
        observer.after(CheckpointStep::OutboxCleared, &request)?;
        Ok(outcome)
    }
}
