//! A dequeued, decoded message and the buffer slot it occupies.

use std::sync::Arc;

use taskhub_core::Message;
use taskhub_storage::{QueueName, Receipt};
use tokio::sync::Semaphore;

/// Returns one permit to the prefetch buffer when dropped.
#[derive(Debug)]
pub(crate) struct BufferSlot(pub Arc<Semaphore>);

impl Drop for BufferSlot {
    fn drop(&mut self) {
        self.0.add_permits(1);
    }
}

/// One delivered control-queue message.
#[derive(Debug)]
pub(crate) struct Delivery {
    pub queue: QueueName,
    pub receipt: Receipt,
    pub message: Message,
    pub _slot: BufferSlot,
}
