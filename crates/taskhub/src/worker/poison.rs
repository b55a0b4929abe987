//! Moving messages that cannot be processed to the dead-letter store (never an endless loop).

use taskhub_storage::{DeadLetter, Dequeued, QueueName};
use tracing::{error, warn};

use super::Shared;

/// Moves a dequeued message to the dead-letter store with its reason, then deletes it from its
/// queue. If the move fails the message stays in the queue and is tried again later.
pub(crate) async fn dead_letter(shared: &Shared, queue: QueueName, msg: &Dequeued, reason: String) {
    let store = shared.hub.store();
    let letter = DeadLetter {
        id: String::new(),
        queue,
        body: msg.body.clone(),
        reason: reason.clone(),
        dequeue_count: msg.dequeue_count,
        dead_lettered_at: shared.hub.clock().now(),
    };
    match store.add_dead_letter(letter).await {
        Ok(id) => {
            error!(%queue, dead_letter = %id, %reason, "message moved to the dead-letter store");
            if let Err(e) = store.delete(queue, &msg.receipt).await {
                warn!(%queue, error = %e, "dead-lettered message could not be deleted; it will be dead-lettered again");
            }
            shared.stat(|s| s.dead_lettered += 1);
        }
        Err(e) => warn!(%queue, error = %e, "could not dead-letter a poison message; will retry"),
    }
}

/// The reason text for a message delivered too often.
pub(crate) fn too_many_deliveries(count: u32, max: u32) -> String {
    format!("delivered {count} times without being processed (max_dequeue_count is {max})")
}
