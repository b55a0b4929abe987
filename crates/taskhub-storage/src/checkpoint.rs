//! The checkpoint: everything one orchestration turn writes, applied as one unit.

use async_trait::async_trait;
use taskhub_core::{ExecutionId, HistoryEvent, InstanceId};

use crate::error::StorageResult;
use crate::history::ETag;
use crate::instances::{Expect, InstanceRow};
use crate::ordered_checkpoint::StepObserver;
use crate::queue::{Dequeued, NewQueueMessage, QueueName, Receipt};

/// A message a checkpoint sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundMessage {
    /// Destination queue.
    pub queue: QueueName,
    /// The message.
    pub message: NewQueueMessage,
    /// `Some(visibility)`: the sender claims the message as it sends it. The message is
    /// enqueued hidden for `visibility` (its `delay` must be zero) and comes back in
    /// [`CheckpointOutcome::claimed`] as a delivery the sender holds, exactly as if the sender
    /// had dequeued it at once: the delivery counts toward its dequeue count, and its receipt
    /// deletes, extends, abandons or releases it. If the sender never does, the message
    /// becomes visible to every dequeuer when `visibility` has passed. A worker claims the
    /// activity work items its own turn schedules, so that it runs them without a dequeue and
    /// hands their results to its own sessions. A claim is never stored: an outbox re-sent
    /// after a torn checkpoint sends plain messages.
    pub claim: Option<std::time::Duration>,
}

impl OutboundMessage {
    /// A message to send visible after its `delay`, not claimed.
    #[must_use]
    pub fn new(queue: QueueName, message: NewQueueMessage) -> Self {
        Self {
            queue,
            message,
            claim: None,
        }
    }
}

/// The lease under which a checkpoint was made (invariant 1: one writer per partition).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseFence {
    /// The partition of the instance.
    pub partition: u32,
    /// The epoch of the lease the writer holds.
    pub epoch: u64,
}

impl LeaseFence {
    /// Checks the fence against the partition's `current` epoch (`None`: no such partition).
    ///
    /// # Errors
    /// [`StorageError::NotFound`](crate::StorageError::NotFound) without a partition,
    /// [`StorageError::Fenced`](crate::StorageError::Fenced) at another epoch.
    pub fn check(self, current: Option<u64>) -> StorageResult<()> {
        let current = current.ok_or_else(|| crate::StorageError::NotFound {
            what: format!("partition {} (checkpoint fence)", self.partition),
        })?;
        if current != self.epoch {
            return Err(crate::StorageError::Fenced {
                partition: self.partition,
                attempted: self.epoch,
                current,
            });
        }
        Ok(())
    }
}

/// New history for one instance.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryWrite {
    /// The execution the events belong to.
    pub execution_id: ExecutionId,
    /// The ETag the history had when it was loaded; `None` if it had no history.
    pub expected: Option<ETag>,
    /// True when `events` replace the stored history: they start a new execution (start,
    /// restart, continue-as-new) and the previous execution's events are replaced; or, under
    /// the same `execution_id` as the stored history, they replace the current execution's
    /// events (a rewind: the kept events and the rewind turn's). Either way the replace is one
    /// checkpoint, fenced and conditional on `expected` like any other: after it,
    /// `load_history` returns exactly `events` (fewer or more than before) under a new ETag,
    /// and a failed one changes nothing. False appends after the loaded events.
    pub new_execution: bool,
    /// The events to append, in order.
    pub events: Vec<HistoryEvent>,
}

/// Everything one turn commits.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointRequest {
    /// The instance.
    pub instance_id: InstanceId,
    /// The lease the turn ran under; `None` only for writers that hold no lease (tests, tools).
    pub fence: Option<LeaseFence>,
    /// New history, if any.
    pub history: Option<HistoryWrite>,
    /// The instance row after the turn, with its write condition.
    pub instance: Option<(InstanceRow, Expect)>,
    /// Messages to send.
    pub outbound: Vec<OutboundMessage>,
    /// Dequeued messages this turn consumed, to delete.
    pub consumed: Vec<(QueueName, Receipt)>,
}

/// What a committed checkpoint produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointOutcome {
    /// The history's new ETag (unchanged if the request had no history). A backend without
    /// transactions may report `None` for a request that wrote no history (a client's start,
    /// an entity batch, an activity's result), to spare a read nobody needs: a caller that
    /// holds the history's ETag keeps it then.
    pub history_etag: Option<ETag>,
    /// The instance row's new ETag, if it was written.
    pub instance_etag: Option<ETag>,
    /// The deliveries of the claimed outbound messages (see [`OutboundMessage::claim`]), in
    /// the order of `outbound`.
    pub claimed: Vec<Dequeued>,
}

/// Rejects claims a backend cannot honour: a claimed message with a `delay` (a claim hides the
/// message for the claim's visibility instead), or a zero visibility. Every backend calls it
/// before it writes anything.
///
/// # Errors
/// `InvalidArgument` naming the first such message.
pub fn check_claims(request: &CheckpointRequest) -> StorageResult<()> {
    for out in &request.outbound {
        match out.claim {
            Some(v) if v.is_zero() => {
                return Err(crate::StorageError::InvalidArgument(format!(
                    "a message claimed on {} needs a visibility timeout above zero",
                    out.queue
                )))
            }
            Some(_) if !out.message.delay.is_zero() => {
                return Err(crate::StorageError::InvalidArgument(format!(
                    "a message claimed on {} cannot also be delayed ({:?})",
                    out.queue, out.message.delay
                )))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Rejects a checkpoint whose instance row is another instance's.
///
/// # Errors
/// `InvalidArgument` naming both instances.
pub fn check_instance_row(request: &CheckpointRequest) -> StorageResult<()> {
    match &request.instance {
        Some((row, _)) if row.instance_id != request.instance_id => {
            Err(crate::StorageError::InvalidArgument(format!(
                "checkpoint of instance '{}' writes the row of instance '{}'",
                request.instance_id, row.instance_id
            )))
        }
        _ => Ok(()),
    }
}

/// Applies checkpoints.
///
/// A backend with transactions (SQLite) applies a checkpoint atomically. A backend without
/// (memory, Azure) MUST apply it in this order, so that a crash between any two steps keeps
/// invariants 1–3. The order is written once, in
/// [`run_ordered_checkpoint`](crate::ordered_checkpoint::run_ordered_checkpoint), on top of the
/// backend's [`CheckpointPrimitives`](crate::ordered_checkpoint::CheckpointPrimitives):
///
/// 0. Reject what a later step could not carry out (nothing is written).
/// 1. **Commit point.** Check the fence (the partition's epoch must equal `fence.epoch`, else
///    `Fenced`) and the history ETag (must equal `history.expected`, else `Conflict`), then
///    write the events together with `pending_outbox = outbound`. If this fails nothing else
///    happens and nothing is visible.
/// 2. Enqueue `outbound`, claimed messages hidden and returned with their receipts. (A crash here: the next loader finds `pending_outbox` and re-sends;
///    receivers de-duplicate by message ID.)
/// 3. Write the instance row.
/// 4. Delete `consumed` (a stale receipt is ignored: the message is redelivered and the
///    engine discards it as a duplicate).
/// 5. Clear `pending_outbox`, conditional on the ETag written in step 1.
///
/// Contract:
/// * A checkpoint whose fence epoch is not the partition's current epoch MUST fail with
///   `Fenced` and MUST leave history, instance row and queues unchanged.
/// * A checkpoint whose `history.expected` does not match MUST fail with `Conflict` and leave
///   everything unchanged; two checkpoints made from the same loaded history MUST NOT both
///   commit.
/// * After success, `load_history` MUST return the old events plus the new ones (or only the
///   new ones for `new_execution`, also when it keeps the stored execution ID: a rewind), the
///   outbound messages MUST be dequeueable, the consumed
///   messages MUST be gone and the instance row MUST be written.
/// * `pending_outbox` MUST be empty after a checkpoint that ran to completion.
/// * A claimed outbound message MUST NOT be dequeued by anyone before its claim's visibility
///   has passed, MUST come back in `claimed` with a receipt that `delete` accepts, and MUST be
///   redelivered after the visibility with `dequeue_count` 2 if nobody deleted it. A claim
///   with a non-zero `delay` MUST be rejected with `InvalidArgument` before anything is
///   written. A claim MUST NOT be stored in `pending_outbox`.
#[async_trait]
pub trait CheckpointStore: Send + Sync {
    /// Commits one checkpoint.
    async fn checkpoint(&self, request: CheckpointRequest) -> StorageResult<CheckpointOutcome>;

    /// Commits one checkpoint, telling `observer` after each step of the ordered checkpoint; an
    /// observer error stops it there (torn, as if the process died) and is returned. A backend
    /// that runs [`run_ordered_checkpoint`](crate::ordered_checkpoint::run_ordered_checkpoint)
    /// passes `observer` to it; a wrapper passes it on to the store it wraps. The default, for a
    /// backend whose checkpoint is one transaction (SQLite), has no steps to observe: it never
    /// calls `observer` and commits the whole checkpoint.
    async fn checkpoint_observed(
        &self,
        request: CheckpointRequest,
        observer: &dyn StepObserver,
    ) -> StorageResult<CheckpointOutcome> {
        let _ = observer;
        self.checkpoint(request).await
    }
}
