//! Moving messages that cannot be processed to the dead-letter store (never an endless loop),
//! with a reason, in one step: the store keeps the letter and deletes the message together, and
//! a repeat with the stale receipt stores nothing. A malformed message goes at once; one over
//! `max_dequeue_count` when its processing fails again, or at dequeue when no session of its
//! instance is alive in this worker (so a message that only waited behind a slow session, and
//! was then applied, is not dead-lettered).

use taskhub_storage::{DeadLetter, DeadLetterStore, Dequeued, QueueName, StorageError};
use tracing::{debug, error, warn};

use crate::hub::TaskHub;
use crate::worker::shared::lifecycle::Lifecycle;

/// Moves a dequeued message to the dead-letter store with its reason, in one step
/// ([`move_to_dead_letters`](taskhub_storage::DeadLetterStore::move_to_dead_letters)): the
/// letter is stored and the message deleted together, so a crash or a lost answer never
/// leaves the message behind to be dead-lettered a second time. If the move fails the message
/// stays in the queue and is tried again at its next delivery; if the receipt is stale the
/// message was moved already (the answer was lost) or redelivered, and nothing is stored.
pub(crate) async fn dead_letter(
    hub: &TaskHub,
    lifecycle: &Lifecycle,
    queue: QueueName,
    msg: &Dequeued,
    reason: String,
) {
    if super::schema_watch::schema_moved(hub, lifecycle).await {
        // The hub moved to a newer build's schema: this build may be what fails the message.
        // It goes back uncounted for a worker of that build, never to the dead letters.
        let _ = hub
            .store()
            .release(queue, &msg.receipt, std::time::Duration::ZERO)
            .await;
        return;
    }
    let store: &dyn DeadLetterStore = hub.store().as_ref();
    let letter = DeadLetter {
        id: String::new(),
        queue,
        body: msg.body.clone(),
        reason: reason.clone(),
        dequeue_count: msg.dequeue_count,
        dead_lettered_at: hub.clock().now(),
    };
    match store
        .move_to_dead_letters(queue, &msg.receipt, letter)
        .await
    {
        Ok(id) => {
            error!(%queue, dead_letter = %id, %reason, "message moved to the dead-letter store");
            lifecycle.stat(|s| s.dead_lettered += 1);
            crate::telemetry::record::dead_letter(queue);
        }
        Err(StorageError::ReceiptExpired { .. }) => {
            debug!(%queue, "a message to dead-letter was moved already or redelivered");
        }
        Err(e) => warn!(%queue, error = %e, "could not dead-letter a poison message; will retry"),
    }
}

/// The reason text for a message delivered too often.
pub(crate) fn too_many_deliveries(count: u32, max: u32) -> String {
    format!("delivered {count} times without being processed (max_dequeue_count is {max})")
}
