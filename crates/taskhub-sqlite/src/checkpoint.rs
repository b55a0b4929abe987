//! The checkpoint: one orchestration turn's writes, applied in ONE transaction (DESIGN §4.4).
//!
//! Inside the writer's transaction (in a savepoint of its own only when its batch is re-run
//! after a request failed), in this order: the fence check, the history ETag check and write,
//! the instance row write with its condition, the outbound enqueues (a claimed one inserted as
//! held, with its receipt returned), and the deletes of consumed messages (a stale receipt is
//! ignored). Any failure rolls the whole request back. Nothing is ever left in a pending outbox: the outbound
//! messages commit with the history, so `load_history` always returns an empty one.

use async_trait::async_trait;
use taskhub_storage::{
    CheckpointOutcome, CheckpointRequest, CheckpointStore, LeaseFence, StorageResult,
};

use crate::codec::etag_out;
use crate::history::{sentinel, write_in};
use crate::instances::put_in;
use crate::partitions::epoch;
use crate::queues::{delete_in, enqueue_claimed_in, enqueue_in};
use crate::store::SqliteStore;
use crate::writer::Tx;

fn check_fence(tx: &Tx<'_>, fence: LeaseFence) -> StorageResult<()> {
    fence.check(epoch(tx.conn, fence.partition)?)
}

/// Applies a checkpoint inside the writer's transaction.
pub(crate) fn checkpoint_in(
    tx: &Tx<'_>,
    request: &CheckpointRequest,
) -> StorageResult<CheckpointOutcome> {
    if let Some(fence) = request.fence {
        check_fence(tx, fence)?;
    }
    let history_etag = match &request.history {
        Some(write) => Some(write_in(tx, &request.instance_id, write)?),
        None => sentinel(tx.conn, &request.instance_id)?.map(|s| etag_out(s.etag)),
    };
    let instance_etag = match &request.instance {
        Some((row, expect)) => {
            taskhub_storage::checkpoint::check_instance_row(request)?;
            Some(put_in(tx, row, expect)?)
        }
        None => None,
    };
    let mut claimed = Vec::new();
    for out in &request.outbound {
        match out.claim {
            Some(visibility) => {
                claimed.push(enqueue_claimed_in(tx, out.queue, &out.message, visibility)?)
            }
            None => enqueue_in(tx, out.queue, std::slice::from_ref(&out.message))?,
        }
    }
    for (queue, receipt) in &request.consumed {
        // A stale receipt: the message was redelivered, and the engine will discard the
        // duplicate by its message ID.
        delete_in(tx, *queue, receipt)?;
    }
    Ok(CheckpointOutcome {
        history_etag,
        instance_etag,
        claimed,
    })
}

#[async_trait]
impl CheckpointStore for SqliteStore {
    async fn checkpoint(&self, request: CheckpointRequest) -> StorageResult<CheckpointOutcome> {
        for out in &request.outbound {
            taskhub_storage::check_messages(self, out.queue, [&out.message])?;
        }
        taskhub_storage::checkpoint::check_claims(&request)?;
        self.write(move |tx| checkpoint_in(tx, &request)).await
    }
}
