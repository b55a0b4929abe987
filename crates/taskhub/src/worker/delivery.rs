//! A dequeued, decoded message and the buffer slot it occupies.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use taskhub_core::Message;
use taskhub_storage::{Dequeued, QueueName, Receipt};
use tokio::sync::Semaphore;

/// Returns one permit to the prefetch buffer when dropped.
#[derive(Debug)]
pub(crate) struct BufferSlot(pub Arc<Semaphore>);

impl Drop for BufferSlot {
    fn drop(&mut self) {
        self.0.add_permits(1);
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

/// One delivered control-queue message.
#[derive(Debug)]
pub(crate) struct Delivery {
    pub queue: QueueName,
    pub receipt: Receipt,
    pub message: Message,
    /// The lease epoch under which it was dequeued: it is processed only under that epoch.
    pub epoch: u64,
    /// The message as dequeued (body and delivery count, for the dead-letter store).
    pub raw: Dequeued,
    pub _slot: BufferSlot,
    pub _in_flight: InFlightSlot,
}
