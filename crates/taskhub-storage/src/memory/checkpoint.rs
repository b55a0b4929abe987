//! The checkpoint, without transactions: the five ordered steps of
//! [`CheckpointStore`](crate::CheckpointStore), each its own critical section, with a yield
//! point between steps so that other tasks run in between, as they would against Azure.
//!
//! Where the memory backend has to choose:
//!
//! * Everything that could make a later step fail for good (an oversized outbound message, an
//!   unknown queue, an instance row for another instance) is checked before step 1, so a
//!   committed history never carries an outbox that can't be sent.
//! * A fence naming a partition that has no row fails with `NotFound` (nothing is changed).
//! * A request without `history` stores no `pending_outbox` (there is no history row to put it
//!   in); its outbound messages are sent at step 2 as usual.
//! * If the instance row's condition fails at step 3, the checkpoint returns `Conflict` with
//!   steps 1 and 2 applied and `pending_outbox` still set, just as a torn checkpoint.
//! * Step 5 clears `pending_outbox` without changing the history's ETag, so the ETag returned
//!   in the outcome stays the one a following checkpoint must name.

use async_trait::async_trait;

use super::faults::Call;
use super::history::HistoryRow;
use super::queues::{check_message, check_queue};
use super::state::State;
use super::{yield_now, MemoryStore, Op, TearAfter};
use crate::checkpoint::{CheckpointOutcome, CheckpointRequest, CheckpointStore};
use crate::error::{StorageError, StorageResult};
use crate::history::ETag;
use crate::queue::QueueStore;

impl MemoryStore {
    /// Fails the checkpoint here if the plan tears it after `step`.
    fn stop_if_torn(&self, call: &Call, step: TearAfter) -> StorageResult<()> {
        match call.tear() {
            Some(after) if after == step => Err(self.faults().tear(call, after)),
            _ => Ok(()),
        }
    }

    /// Rejects a request that a later step could not carry out.
    fn check_request(&self, request: &CheckpointRequest) -> StorageResult<()> {
        for out in &request.outbound {
            check_queue(out.queue)?;
            check_message(&out.message, self.max_delay())?;
        }
        for (queue, _) in &request.consumed {
            check_queue(*queue)?;
        }
        if let Some((row, _)) = &request.instance {
            if row.instance_id != request.instance_id {
                return Err(StorageError::InvalidArgument(format!(
                    "checkpoint of instance '{}' carries the row of instance '{}'",
                    request.instance_id, row.instance_id
                )));
            }
        }
        Ok(())
    }

    async fn run_checkpoint(
        &self,
        request: CheckpointRequest,
        call: &Call,
    ) -> StorageResult<CheckpointOutcome> {
        self.check_request(&request)?;

        // Step 1, the commit point: fence, history ETag, then events with the outbox.
        let written = self.state().commit_history(&request)?;
        self.stop_if_torn(call, TearAfter::HistoryCommitted)?;
        yield_now().await;

        // Step 2: send.
        for out in &request.outbound {
            let now = self.now();
            self.state()
                .enqueue(out.queue, vec![out.message.clone()], now);
        }
        self.stop_if_torn(call, TearAfter::OutboundSent)?;
        yield_now().await;

        // Step 3: the instance row.
        let instance_etag = match &request.instance {
            Some((row, expect)) => Some(self.state().put_instance(row, expect)?),
            None => None,
        };
        self.stop_if_torn(call, TearAfter::InstanceWritten)?;
        yield_now().await;

        // Step 4: delete what the turn consumed; a stale receipt means the message is
        // redelivered, and the engine discards it as a duplicate.
        for (queue, receipt) in &request.consumed {
            let deleted = self.state().delete_message(*queue, receipt);
            match deleted {
                Ok(()) | Err(StorageError::ReceiptExpired { .. }) => {}
                Err(other) => return Err(other),
            }
        }
        self.stop_if_torn(call, TearAfter::ConsumedDeleted)?;
        yield_now().await;

        // Step 5: clear the outbox, if the history is still the one step 1 wrote.
        let history_etag = match written {
            Written::History(etag) => {
                self.state()
                    .clear_pending_outbox(request.instance_id.as_str(), &etag);
                Some(etag)
            }
            Written::Nothing(current) => current,
        };
        Ok(CheckpointOutcome {
            history_etag,
            instance_etag,
        })
    }
}

/// What step 1 did to the history.
enum Written {
    /// Wrote it; its new ETag.
    History(ETag),
    /// The request had no history; the current ETag, if the instance has history.
    Nothing(Option<ETag>),
}

impl State {
    /// Step 1: checks the fence and the history ETag, then writes the events together with
    /// `pending_outbox = outbound`. On error nothing is changed.
    fn commit_history(&mut self, request: &CheckpointRequest) -> StorageResult<Written> {
        if let Some(fence) = request.fence {
            let current = self
                .partitions
                .get(&fence.partition)
                .map(|row| row.epoch)
                .ok_or_else(|| StorageError::NotFound {
                    what: format!("partition {}", fence.partition),
                })?;
            if current != fence.epoch {
                return Err(StorageError::Fenced {
                    partition: fence.partition,
                    attempted: fence.epoch,
                    current,
                });
            }
        }
        let key = request.instance_id.as_str();
        let Some(write) = &request.history else {
            return Ok(Written::Nothing(
                self.history.get(key).map(|row| row.etag.clone()),
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
            },
        };
        row.append(&write.events);
        row.etag = etag.clone();
        row.pending_outbox.clone_from(&request.outbound);
        self.history.insert(key.to_owned(), row);
        Ok(Written::History(etag))
    }

    /// Step 5: clears `pending_outbox` if the history still has `etag`.
    fn clear_pending_outbox(&mut self, instance: &str, etag: &ETag) {
        if let Some(row) = self.history.get_mut(instance) {
            if row.etag == *etag {
                row.pending_outbox.clear();
            }
        }
    }
}

#[async_trait]
impl CheckpointStore for MemoryStore {
    async fn checkpoint(&self, request: CheckpointRequest) -> StorageResult<CheckpointOutcome> {
        let call = self.enter(Op::Checkpoint).await?;
        let result = self.run_checkpoint(request, &call).await;
        call.finish(result)
    }
}
