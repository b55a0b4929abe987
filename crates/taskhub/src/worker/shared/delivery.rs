//! A dequeued, decoded message and the slots it occupies (a prefetch-buffer slot, its
//! partition's in-flight count, its orphan guard).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use taskhub_core::Message;
use taskhub_storage::{Dequeued, QueueName, Receipt};
use tokio::sync::OwnedSemaphorePermit;

use super::held_item::HeldItem;
use super::orphans::OrphanGuard;

/// One slot of the prefetch buffer, held by a delivery (or, for an activity result handed over
/// in process, the activity slot it ran in): its permit goes back when dropped.
#[derive(Debug)]
pub(crate) struct BufferSlot {
    permit: Option<OwnedSemaphorePermit>,
}

impl BufferSlot {
    pub(crate) fn new(permit: OwnedSemaphorePermit) -> Self {
        Self {
            permit: Some(permit),
        }
    }

    /// Gives the permit back now: the delivery waits on something outside this worker (a
    /// remote executor's decision) and must not keep other messages from being fetched.
    pub(crate) fn free(&mut self) {
        self.permit = None;
    }
}

/// Counts a partition's fetched, unfinished messages (a drain waits for zero).
#[derive(Debug)]
pub(crate) struct InFlightSlot(Arc<AtomicUsize>);

impl InFlightSlot {
    pub(crate) fn new(counter: Arc<AtomicUsize>) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        Self(counter)
    }
}

impl Drop for InFlightSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One message for an instance's session: dequeued from a control queue, or an activity's
/// result handed over in-process (see [`local`](crate::worker::activity::local)).
#[derive(Debug)]
pub(crate) struct Delivery {
    /// The queue `receipt` belongs to: the control queue, or the work-item queue for an
    /// activity result handed over in-process (consuming it deletes the work item).
    pub queue: QueueName,
    pub receipt: Receipt,
    /// The partition whose control queue the message is for (and whose lease it is processed
    /// under).
    pub partition: u32,
    pub message: Message,
    /// The lease epoch under which it was dequeued: it is processed only under that epoch.
    pub epoch: u64,
    /// The message as dequeued (body and delivery count, for the dead-letter store).
    pub raw: Dequeued,
    pub _slot: BufferSlot,
    pub _in_flight: InFlightSlot,
    pub _orphan: OrphanGuard,
    /// For an activity result handed over in process: its work item, kept hidden until the
    /// turn takes it (which updates `receipt`).
    pub held: Option<Arc<HeldItem>>,
}

impl Delivery {
    /// The control queue the message belongs to: where a copy of it goes when it is sent again.
    pub(crate) fn home(&self) -> QueueName {
        QueueName::Control(self.partition)
    }

    /// True for an activity result handed over in-process: its receipt is the work item's.
    pub(crate) fn is_local(&self) -> bool {
        self.queue == QueueName::WorkItems
    }
}
