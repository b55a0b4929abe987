//! The ordered checkpoint, written once: the steps of [`CheckpointStore`](crate::CheckpointStore)
//! for backends without transactions, on top of a backend's [`CheckpointPrimitives`].
//!
//! A backend without transactions (memory, Azure) implements the primitives — each one a
//! separate storage operation with no atomicity across them — and calls
//! [`run_ordered_checkpoint`] from its `checkpoint`. The order, and so invariants 1–3 under a
//! crash between any two steps, lives here and nowhere else:
//!
//! 0. [`validate`](CheckpointPrimitives::validate): reject what a later step could not do.
//! 1. The commit point: [`prepare`](CheckpointPrimitives::prepare) (writes that stay invisible
//!    until the commit), [`check_fence`](CheckpointPrimitives::check_fence), then
//!    [`commit`](CheckpointPrimitives::commit): the events with `pending_outbox = outbound`,
//!    conditional on the loaded history ETag.
//! 2. [`send`](CheckpointPrimitives::send) each outbound message.
//! 3. [`write_instance`](CheckpointPrimitives::write_instance).
//! 4. [`delete_consumed`](CheckpointPrimitives::delete_consumed) (a stale receipt is ignored).
//! 5. [`clear_outbox`](CheckpointPrimitives::clear_outbox), conditional on step 1's ETag (only
//!    when there was an outbox; a failure leaves it for the next loader to re-send).
//!
//! After each step the driver tells a [`StepObserver`]; an observer that returns an error stops
//! the checkpoint right there, as if the process had died, and the driver returns that error.
//! This is how fault injection tears a checkpoint of any backend after step N
//! ([`CheckpointStore::checkpoint_observed`](crate::CheckpointStore::checkpoint_observed)), and
//! how a test can pause a real worker process in the middle of one.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use async_trait::async_trait;
use taskhub_core::InstanceId;

use crate::checkpoint::{CheckpointOutcome, CheckpointRequest, LeaseFence, OutboundMessage};
use crate::error::{StorageError, StorageResult};
use crate::history::ETag;
use crate::instances::{Expect, InstanceRow};
use crate::queue::{Dequeued, QueueName, Receipt};

/// A point of the ordered checkpoint, reported to a [`StepObserver`] once it is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CheckpointStep {
    /// Step 0: the request is valid; nothing was written.
    Validated,
    /// Inside step 1: the fence was checked (if the request has one) and the rows that stay
    /// invisible until the commit were written; the commit itself was not. On a backend whose
    /// fence and history live in different tables (Azure) this is the window in which a
    /// writer paused past its lease still holds a fence that looked current.
    FenceChecked,
    /// Step 1: the history and `pending_outbox` are committed; nothing was sent.
    HistoryCommitted,
    /// Step 2: the outbound messages are enqueued; the instance row is not written.
    OutboundSent,
    /// Step 3: the instance row is written; consumed messages are not deleted.
    InstanceWritten,
    /// Step 4: consumed messages are deleted; `pending_outbox` is not cleared.
    ConsumedDeleted,
    /// Step 5: `pending_outbox` is cleared; the checkpoint is complete.
    OutboxCleared,
}

impl CheckpointStep {
    /// Every step, in order.
    pub const ALL: [Self; 7] = [
        Self::Validated,
        Self::FenceChecked,
        Self::HistoryCommitted,
        Self::OutboundSent,
        Self::InstanceWritten,
        Self::ConsumedDeleted,
        Self::OutboxCleared,
    ];

    /// The position of the step in [`ALL`](Self::ALL) (0 to 6).
    #[must_use]
    pub fn index(self) -> usize {
        Self::ALL.iter().position(|s| *s == self).unwrap_or(0)
    }

    /// The step at `index` of [`ALL`](Self::ALL).
    #[must_use]
    pub fn from_index(index: usize) -> Option<Self> {
        Self::ALL.get(index).copied()
    }
}

/// Told after each step of an ordered checkpoint.
pub trait StepObserver: Send + Sync {
    /// Called once `step` of the checkpoint of `request` is done. `Err` stops the checkpoint
    /// here, leaving the earlier steps applied (a torn checkpoint), and the checkpoint returns
    /// that error. It may block (a test pauses its own process here).
    ///
    /// # Errors
    /// The error the checkpoint returns, if it is to stop here.
    fn after(&self, step: CheckpointStep, request: &CheckpointRequest) -> StorageResult<()>;
}

/// An observer that lets every checkpoint run to the end.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl StepObserver for NoObserver {
    fn after(&self, _step: CheckpointStep, _request: &CheckpointRequest) -> StorageResult<()> {
        Ok(())
    }
}

/// Two observers, the first one first; the first error stops the checkpoint.
#[derive(Clone, Copy)]
pub struct BothObservers<'a>(pub &'a dyn StepObserver, pub &'a dyn StepObserver);

impl StepObserver for BothObservers<'_> {
    fn after(&self, step: CheckpointStep, request: &CheckpointRequest) -> StorageResult<()> {
        self.0.after(step, request)?;
        self.1.after(step, request)
    }
}

/// The storage operations an ordered checkpoint is made of, one per step (see the
/// [module docs](self)). Each is a separate operation: the driver assumes no atomicity across
/// two of them. Implemented by the memory backend and by Azure.
#[async_trait]
pub trait CheckpointPrimitives: Send + Sync {
    /// What [`prepare`](Self::prepare) hands to [`commit`](Self::commit).
    type Prepared: Send;

    /// Step 0: rejects a request a later step could not carry out (an oversized or unknown
    /// outbound message, an unknown queue, a row of another instance), so that a committed
    /// history never carries an outbox that cannot be sent. Writes nothing.
    ///
    /// # Errors
    /// `InvalidArgument` (or the backend's equivalent) for such a request.
    async fn validate(&self, request: &CheckpointRequest) -> StorageResult<()>;

    /// Step 1, before the fence check: writes what the commit needs written first and what no
    /// reader sees until the commit names it (Azure: event rows beyond one batch, under keys
    /// no committed row uses). Called only for a request with history.
    ///
    /// # Errors
    /// A storage error; nothing visible was changed.
    async fn prepare(&self, request: &CheckpointRequest) -> StorageResult<Self::Prepared>;

    /// Step 1: the partition's current epoch must be `fence.epoch`.
    ///
    /// # Errors
    /// `Fenced` if it is not, `NotFound` if the partition has no row.
    async fn check_fence(&self, fence: LeaseFence) -> StorageResult<()>;

    /// Step 1, the commit point: the events and `pending_outbox = request.outbound`, written
    /// only if the history's ETag is still `history.expected` (and, on a backend that can check
    /// both at once, the fence still current). Returns the history's new ETag. Called only for
    /// a request with history.
    ///
    /// # Errors
    /// `Conflict` if the history changed, `Fenced` if the backend saw a newer writer; nothing
    /// is changed then.
    async fn commit(
        &self,
        request: &CheckpointRequest,
        prepared: Self::Prepared,
    ) -> StorageResult<ETag>;

    /// Step 2: enqueues one outbound message; for a claimed one (see
    /// [`OutboundMessage::claim`]), hidden for the claim's visibility, returning the delivery
    /// the sender now holds.
    ///
    /// # Errors
    /// A storage error.
    async fn send(&self, message: &OutboundMessage) -> StorageResult<Option<Dequeued>>;

    /// Step 3: writes the instance row under its condition; returns its new ETag.
    ///
    /// # Errors
    /// `Conflict` if the condition fails.
    async fn write_instance(&self, row: &InstanceRow, expect: &Expect) -> StorageResult<ETag>;

    /// Step 4: deletes one consumed message.
    ///
    /// # Errors
    /// `ReceiptExpired` for a stale receipt (the driver ignores it), or a storage error.
    async fn delete_consumed(&self, queue: QueueName, receipt: &Receipt) -> StorageResult<()>;

    /// Step 5: clears the instance's `pending_outbox` if its history still has the ETag
    /// `committed` (the one [`commit`](Self::commit) returned); returns the history's ETag
    /// afterwards.
    ///
    /// # Errors
    /// `Conflict` if the history moved on, or a storage error (the driver ignores both: the
    /// outbox stays for the next loader to re-send).
    async fn clear_outbox(&self, instance: &InstanceId, committed: &ETag) -> StorageResult<ETag>;

    /// The history ETag to report for a request that wrote no history. A backend may answer
    /// `None` (the history did not change: its holder keeps the ETag it has).
    ///
    /// # Errors
    /// A storage error.
    async fn history_etag(&self, request: &CheckpointRequest) -> StorageResult<Option<ETag>>;
}

/// Runs one checkpoint in the order of the [module docs](self), telling `observer` after each
/// step, with a yield point between steps so that other tasks interleave with it as they
/// would between separate storage calls.
///
/// # Errors
/// The first failing step's error (steps before it stay applied, as in a crash), or the
/// observer's error at the step where it stopped the checkpoint.
pub async fn run_ordered_checkpoint<P>(
    primitives: &P,
    request: &CheckpointRequest,
    observer: &dyn StepObserver,
) -> StorageResult<CheckpointOutcome>
where
    P: CheckpointPrimitives + ?Sized,
{
    crate::checkpoint::check_claims(request)?;
    primitives.validate(request).await?;
    observer.after(CheckpointStep::Validated, request)?;

    // Step 1, the commit point.
    let prepared = match &request.history {
        Some(_) => Some(primitives.prepare(request).await?),
        None => None,
    };
    if let Some(fence) = request.fence {
        primitives.check_fence(fence).await?;
    }
    observer.after(CheckpointStep::FenceChecked, request)?;
    let committed = match prepared {
        Some(prepared) => Some(primitives.commit(request, prepared).await?),
        None => None,
    };
    observer.after(CheckpointStep::HistoryCommitted, request)?;
    yield_now().await;

    // Step 2: send. A crash from here to step 5: the next loader re-sends the outbox.
    let mut claimed = Vec::new();
    for out in &request.outbound {
        if let Some(delivery) = primitives.send(out).await? {
            claimed.push(delivery);
        }
    }
    observer.after(CheckpointStep::OutboundSent, request)?;
    yield_now().await;

    // Step 3: the instance row.
    let instance_etag = match &request.instance {
        Some((row, expect)) => Some(primitives.write_instance(row, expect).await?),
        None => None,
    };
    observer.after(CheckpointStep::InstanceWritten, request)?;
    yield_now().await;

    // Step 4: a stale receipt means the message is redelivered, and the engine discards it
    // as a duplicate.
    for (queue, receipt) in &request.consumed {
        match primitives.delete_consumed(*queue, receipt).await {
            Ok(()) | Err(StorageError::ReceiptExpired { .. }) => {}
            Err(other) => return Err(other),
        }
    }
    observer.after(CheckpointStep::ConsumedDeleted, request)?;
    yield_now().await;

    // Step 5: clear the outbox if the history is still the one step 1 wrote.
    let history_etag = match committed {
        Some(etag) if !request.outbound.is_empty() => Some(
            primitives
                .clear_outbox(&request.instance_id, &etag)
                .await
                .unwrap_or(etag),
        ),
        Some(etag) => Some(etag),
        None => primitives.history_etag(request).await?,
    };
    observer.after(CheckpointStep::OutboxCleared, request)?;
    Ok(CheckpointOutcome {
        history_etag,
        instance_etag,
        claimed,
    })
}

/// Returns `Pending` once, so that other tasks run between two steps of a checkpoint.
struct YieldNow {
    yielded: bool,
}

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

fn yield_now() -> YieldNow {
    YieldNow { yielded: false }
}
