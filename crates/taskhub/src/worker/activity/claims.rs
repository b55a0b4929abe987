//! Work items claimed by the turn that schedules them.
//!
//! A turn that schedules activities claims their work items as its checkpoint sends them
//! ([`OutboundMessage::claim`]): each is enqueued hidden for the work-item visibility timeout
//! and comes back from the checkpoint as a delivery this worker holds, which it runs at once,
//! in the activity slot reserved for it before the checkpoint. Its result then goes to the
//! session in process ([`local`](super::local)), and the turn that records it deletes the work
//! item. Per activity that is one put and one delete: no Get, and no poll of the work-item
//! queue to wait for. With several workers, each runs the activities of the orchestrations it
//! holds, so results are handed over in process on every worker, not one time in N.
//!
//! Only as many work items are claimed as there are free activity slots; the rest are sent
//! visible, for any worker's poller, so activities still spread over the workers once this
//! one is busy (lower `max_concurrent_activities` to spread CPU-heavy activities sooner); such
//! a turn rings the [doorbell](crate::worker::shared::doorbell), so that idle workers poll for them after
//! their next lease read rather than after their work-item back-off. If
//! the worker dies before it deletes a claimed item, the item becomes visible when its
//! visibility timeout has passed and another worker runs it, as with an item it had dequeued.

use std::sync::Arc;
use std::time::Duration;

use taskhub_storage::{Dequeued, OutboundMessage, QueueName};
use tokio::sync::OwnedSemaphorePermit;
use tracing::warn;

use super::activities;
use crate::worker::shared::Shared;

/// The activity slots reserved for a turn's claimed work items.
pub(crate) struct Claims {
    slots: Vec<OwnedSemaphorePermit>,
    /// Some of the turn's work items were left unclaimed, for any worker's poller: once they
    /// are sent, ring the doorbell (see [`doorbell`](crate::worker::shared::doorbell)).
    overflow: bool,
    /// Monotonic time before the checkpoint: the claimed items are hidden from no earlier.
    reserved_at: Duration,
}

impl Claims {
    /// Claims as many of `outbound`'s work items as there are free activity slots, and
    /// reserves those slots. Nothing is claimed while the worker stops. Call right before the
    /// checkpoint.
    pub(crate) fn reserve(shared: &Shared, outbound: &mut [OutboundMessage]) -> Self {
        let reserved_at = shared.hub.clock().monotonic();
        let mut slots = Vec::new();
        let visibility = shared.hub.settings().work_item_visibility_timeout;
        if !shared.lifecycle.stopping() {
            for out in outbound
                .iter_mut()
                .filter(|o| o.queue == QueueName::WorkItems && o.message.delay.is_zero())
            {
                let Ok(slot) = shared.slots.activities.clone().try_acquire_owned() else {
                    break;
                };
                out.claim = Some(visibility);
                slots.push(slot);
            }
        }
        let overflow = outbound
            .iter()
            .any(|o| o.queue == QueueName::WorkItems && o.claim.is_none());
        Self {
            slots,
            overflow,
            reserved_at,
        }
    }

    /// Runs the claimed deliveries of a committed checkpoint, each in its reserved slot. If
    /// the worker began to stop meanwhile, it gives them back instead (visible at once, the
    /// claim not counted), so that a shutdown neither waits for them nor leaves them hidden.
    pub(crate) async fn start(self, shared: &Arc<Shared>, claimed: Vec<Dequeued>) {
        if self.overflow {
            shared.doorbell.ring();
        }
        if shared.lifecycle.stopping() {
            for d in claimed {
                if let Err(e) = shared
                    .hub
                    .store()
                    .release(QueueName::WorkItems, &d.receipt, Duration::ZERO)
                    .await
                {
                    warn!(error = %e, "could not give back a claimed work item at shutdown; it is visible again after its visibility timeout");
                }
            }
            return;
        }
        for (delivery, slot) in claimed.into_iter().zip(self.slots) {
            activities::spawn_claimed(shared, delivery, slot, self.reserved_at);
        }
    }
}
