//! The checkpoint, without transactions: the memory backend's [`CheckpointPrimitives`], each
//! its own critical section, run in order by the shared driver
//! ([`run_ordered_checkpoint`]), which yields between steps so that other tasks run in between,
//! as they would against Azure.
//!
//! Where the memory backend has to choose:
//!
//! * Everything that could make a later step fail for good (an oversized outbound message, an
//!   unknown queue, an instance row for another instance) is checked at step 0, so a
//!   committed history never carries an outbox that can't be sent.
//! * A fence naming a partition that has no row fails with `NotFound` (nothing is changed).
//! * The commit checks the fence again under the same lock as the history write, so a
//!   checkpoint never commits under a stale epoch here (Azure cannot check both at once).
//! * A request without `history` stores no `pending_outbox` (there is no history row to put it
//!   in); its outbound messages are sent at step 2 as usual.
//! * If the instance row's condition fails at step 3, the checkpoint returns `Conflict` with
//!   steps 1 and 2 applied and `pending_outbox` still set, just as a torn checkpoint.
//! * Step 5 clears `pending_outbox` without changing the history's ETag, so the ETag returned
//!   in the outcome stays the one a following checkpoint must name.

use async_trait::async_trait;
use taskhub_core::InstanceId;

use super::history::HistoryRow;
use super::queues::check_queue;
use super::state::State;
use super::{MemoryStore, Op};
use crate::checkpoint::{
    CheckpointOutcome, CheckpointRequest, CheckpointStore, LeaseFence, OutboundMessage,
};
use crate::error::{StorageError, StorageResult};
use crate::history::ETag;
use crate::instances::{Expect, InstanceRow};
use crate::ordered_checkpoint::{
    run_ordered_checkpoint, BothObservers, CheckpointPrimitives, NoObserver, StepObserver,
};
use crate::queue::{Dequeued, QueueName, Receipt};

/// The memory backend's steps, for the driver (a view, so that the primitives are not public
/// methods of the store that bypass its fault plan).
struct Primitives<'a>(&'a MemoryStore);

#[async_trait]
impl CheckpointPrimitives for Primitives<'_> {
    type Prepared = ();

    async fn validate(&self, request: &CheckpointRequest) -> StorageResult<()> {
        for out in &request.outbound {
            crate::queue::check_messages(self.0, out.queue, [&out.message])?;
        }
        for (queue, _) in &request.consumed {
            check_queue(*queue)?;
        }
        crate::checkpoint::check_instance_row(request)?;
        Ok(())
    }

    async fn prepare(&self, _request: &CheckpointRequest) -> StorageResult<()> {
        Ok(())
    }

    async fn check_fence(&self, fence: LeaseFence) -> StorageResult<()> {
        self.0.state().check_fence(fence)
    }

    async fn commit(&self, request: &CheckpointRequest, (): ()) -> StorageResult<ETag> {
        let now = self.0.now();
        self.0.state().commit_history(request, now.wall)
    }

    async fn send(&self, out: &OutboundMessage) -> StorageResult<Option<Dequeued>> {
        let now = self.0.now();
        let mut state = self.0.state();
        Ok(match out.claim {
            Some(visibility) => {
                Some(state.enqueue_claimed(out.queue, out.message.clone(), visibility, now))
            }
            None => {
                state.enqueue(out.queue, vec![out.message.clone()], now);
                None
            }
        })
    }

    async fn write_instance(&self, row: &InstanceRow, expect: &Expect) -> StorageResult<ETag> {
        self.0.state().put_instance(row, expect)
    }

    async fn delete_consumed(&self, queue: QueueName, receipt: &Receipt) -> StorageResult<()> {
        self.0.state().delete_message(queue, receipt)
    }

    async fn clear_outbox(&self, instance: &InstanceId, committed: &ETag) -> StorageResult<ETag> {
        self.0
            .state()
            .clear_pending_outbox(instance.as_str(), committed);
        Ok(committed.clone())
    }

    async fn history_etag(&self, request: &CheckpointRequest) -> StorageResult<Option<ETag>> {
        Ok(self
            .0
            .state()
            .history
            .get(request.instance_id.as_str())
            .map(|row| row.etag.clone()))
    }
}

impl State {
    /// The partition's epoch must be the fence's.
    fn check_fence(&self, fence: LeaseFence) -> StorageResult<()> {
        fence.check(self.partitions.get(&fence.partition).map(|row| row.epoch))
    }

    /// Step 1: checks the fence and the history ETag, then writes the events together with
    /// `pending_outbox = outbound`. On error nothing is changed.
    fn commit_history(
        &mut self,
        request: &CheckpointRequest,
        now: taskhub_core::Timestamp,
    ) -> StorageResult<ETag> {
        if let Some(fence) = request.fence {
            self.check_fence(fence)?;
        }
        let key = request.instance_id.as_str();
        let Some(write) = &request.history else {
            return Err(StorageError::InvalidArgument(
                "a history commit without history".to_owned(),
            ));
        };
        let stored = self.history.get(key);
        if stored.map(|row| &row.etag) != write.expected.as_ref() {
            return Err(StorageError::Conflict {
                what: format!("history of instance '{}'", request.instance_id),
            });
        }
        if let Some(row) = stored {
            if !write.new_execution && row.execution_id != write.execution_id {
                return Err(StorageError::InvalidArgument(format!(
                    "checkpoint appends to execution '{}' of instance '{}', whose current execution is '{}'",
                    write.execution_id, request.instance_id, row.execution_id
                )));
            }
        }
        let etag = self.new_etag();
        let mut row = match self.history.remove(key) {
            Some(row) if !write.new_execution => row,
            _ => HistoryRow {
                execution_id: write.execution_id.clone(),
                events: Vec::new(),
                etag: etag.clone(),
                pending_outbox: Vec::new(),
                pending_since: None,
            },
        };
        row.append(&write.events);
        row.etag = etag.clone();
        // A claim is the sender's, not the outbox's: a re-send sends plain messages.
        row.pending_outbox = request
            .outbound
            .iter()
            .map(|o| OutboundMessage::new(o.queue, o.message.clone()))
            .collect();
        row.pending_since = Some(now);
        self.history.insert(key.to_owned(), row);
        Ok(etag)
    }

    /// Step 5: clears `pending_outbox` if the history still has `etag`.
    fn clear_pending_outbox(&mut self, instance: &str, etag: &ETag) {
        if let Some(row) = self.history.get_mut(instance) {
            if row.etag == *etag {
                row.pending_outbox.clear();
                row.pending_since = None;
            }
        }
    }
}

#[async_trait]
impl CheckpointStore for MemoryStore {
    async fn checkpoint(&self, request: CheckpointRequest) -> StorageResult<CheckpointOutcome> {
        self.checkpoint_observed(request, &NoObserver).await
    }

    /// The store's own fault plan tears the checkpoint first, then `observer` may.
    async fn checkpoint_observed(
        &self,
        request: CheckpointRequest,
        observer: &dyn StepObserver,
    ) -> StorageResult<CheckpointOutcome> {
        let call = self.enter(Op::Checkpoint).await?;
        let tearing = self.faults().tearing(&call);
        let result = run_ordered_checkpoint(
            &Primitives(self),
            &request,
            &BothObservers(&tearing, observer),
        )
        .await;
        call.finish(result)
    }
}
