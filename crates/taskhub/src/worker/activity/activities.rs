//! The activity dispatcher: every worker competes for the one work-item queue and runs
//! activities up to `max_concurrent_activities` at once (each as [`run`] says),
//! keeping their messages hidden while they run.
//! A result for a partition this worker holds goes to its session in process (see
//! [`local`](super::local)); any other is sent to its orchestration's control queue in the same
//! checkpoint that deletes the work item.

use std::sync::Arc;
use std::time::Duration;

use taskhub_storage::{Dequeued, QueueName};
use tokio::sync::OwnedSemaphorePermit;

use super::run;
use crate::worker::shared::poll::{Interrupt, Poller};
use crate::worker::shared::Shared;

/// Polls the work-item queue until the worker stops.
pub(crate) async fn poll_work_items(shared: Arc<Shared>) {
    let queue = QueueName::WorkItems;
    let mut poller = Poller::new(&shared.hub, &shared.placement.name, queue);
    let mut stop = shared.lifecycle.stop.clone();
    while !shared.lifecycle.stopping() {
        let Ok(mut slots) = shared.slots.activities.clone().acquire_owned().await else {
            return;
        };
        take_free(&shared, &mut slots);
        let wanted = slots.num_permits();
        let started = shared.hub.clock().monotonic();
        let Some((messages, mut slots)) = poller.dequeue(slots).await else {
            continue;
        };
        if messages.is_empty() {
            drop(slots);
            poller
                .idle(async {
                    tokio::select! {
                        // Another worker left work items on the queue: poll now, and keep
                        // polling from the shortest wait up while they last.
                        () = shared.doorbell.heard() => Interrupt::Reset,
                        _ = stop.changed() => Interrupt::Recheck,
                    }
                })
                .await;
            continue;
        }
        poller.found();
        let drained = messages.len() < wanted;
        for m in messages {
            let Some(permit) = slots.split(1) else { break };
            let s = shared.clone();
            shared.lifecycle.spawn(run::run_one(s, m, permit, started));
        }
        drop(slots);
        if drained {
            // The queue looked empty after this batch: wait for a wake-up (or the shortest
            // back-off, for other processes' messages) rather than an empty dequeue at once.
            poller
                .drained(async {
                    let _ = stop.changed().await;
                    Interrupt::Recheck
                })
                .await;
        }
    }
}

/// Runs a work item this worker claimed as its own turn sent it (see
/// [`claims`](super::claims)), in the activity slot reserved for it; `hidden_since` is the
/// monotonic time before the checkpoint that sent it hidden.
pub(crate) fn spawn_claimed(
    shared: &Arc<Shared>,
    m: Dequeued,
    slot: OwnedSemaphorePermit,
    hidden_since: Duration,
) {
    shared
        .lifecycle
        .spawn(run::run_one(shared.clone(), m, slot, hidden_since));
}

/// Adds every free activity slot to `slots`, up to a full dequeue batch.
fn take_free(shared: &Shared, slots: &mut OwnedSemaphorePermit) {
    let batch = shared.hub.store().max_dequeue_batch().max(1);
    while slots.num_permits() < batch {
        match shared.slots.activities.clone().try_acquire_owned() {
            Ok(p) => slots.merge(p),
            Err(_) => break,
        }
    }
}
