//! A dequeued, decoded message and the buffer slot it occupies.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use taskhub_core::Message;
use taskhub_storage::{Dequeued, QueueName, Receipt};
use tokio::sync::OwnedSemaphorePermit;

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

/// Deliveries dropped unfinished because their worker is being abandoned (its handle was
/// dropped, or its shutdown timed out): they are given back afterwards, so their messages are
/// visible again at once instead of after their visibility timeout.
#[derive(Debug, Default)]
pub(crate) struct Orphans {
    abandoning: AtomicBool,
    dropped: Mutex<Vec<(QueueName, Receipt)>>,
}

impl Orphans {
    /// From now on, a delivery dropped is an orphan to give back.
    pub(crate) fn abandon_all(&self) {
        self.abandoning.store(true, Ordering::SeqCst);
    }

    /// The orphans so far (each once).
    pub(crate) fn take(&self) -> Vec<(QueueName, Receipt)> {
        std::mem::take(&mut *self.dropped.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Records its delivery as an orphan if dropped once the worker is being abandoned.
#[derive(Debug)]
pub(crate) struct OrphanGuard {
    orphans: Arc<Orphans>,
    queue: QueueName,
    receipt: Receipt,
}

impl OrphanGuard {
    pub(crate) fn new(orphans: Arc<Orphans>, queue: QueueName, receipt: Receipt) -> Self {
        Self {
            orphans,
            queue,
            receipt,
        }
    }
}

impl Drop for OrphanGuard {
    fn drop(&mut self) {
        if self.orphans.abandoning.load(Ordering::SeqCst) {
            self.orphans
                .dropped
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((self.queue, self.receipt.clone()));
        }
    }
}

/// One message for an instance's session: dequeued from a control queue, or an activity's
/// result handed over in-process (see [`local`](super::local)).
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
    pub held: Option<Arc<super::held_item::HeldItem>>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_deliveries_dropped_while_abandoning_are_orphans() {
        let orphans = Arc::new(Orphans::default());
        let q = QueueName::Control(1);
        drop(OrphanGuard::new(orphans.clone(), q, Receipt("done".into())));
        let held = OrphanGuard::new(orphans.clone(), q, Receipt("held".into()));
        orphans.abandon_all();
        drop(held);
        assert_eq!(orphans.take(), [(q, Receipt("held".into()))]);
        assert!(orphans.take().is_empty(), "each orphan is given back once");
    }
}
