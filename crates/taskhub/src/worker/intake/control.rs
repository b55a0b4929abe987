//! Control-queue polling: prefetch up to `control_queue_batch_size` messages, never buffer more
//! than `control_queue_buffer_threshold`, group them by instance, and hand each group to that
//! instance's session (a running session takes the group as its next batch). The buffer is a
//! semaphore whose permits are held from before the dequeue until each delivery drops, so a
//! poller cancelled anywhere returns them all. A message over `max_dequeue_count` with no
//! session of its instance here is dead-lettered at dequeue.

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use taskhub_core::InstanceId;
use taskhub_storage::{Dequeued, QueueName, QueueStore};
use tokio::sync::{watch, OwnedSemaphorePermit};
use tracing::{debug, warn};

use super::session;
use crate::worker::lifecycle::{decode, poison};
use crate::worker::orchestration;
use crate::worker::shared::delivery::{BufferSlot, Delivery, InFlightSlot};
use crate::worker::shared::orphans::OrphanGuard;
use crate::worker::shared::poll::{Interrupt, Poller};
use crate::worker::shared::sessions::Handed;
use crate::worker::shared::Shared;

/// The lease a poller works under.
pub(crate) struct Lease {
    pub partition: u32,
    pub epoch: u64,
    /// Set when the partition must stop being dequeued (lost, drained, released).
    pub stop: watch::Receiver<bool>,
    /// Counts fetched, unfinished messages of the partition.
    pub in_flight: Arc<AtomicUsize>,
}

/// Polls the control queue of a held partition until the worker stops or the lease ends.
pub(crate) async fn poll_partition(shared: Arc<Shared>, mut lease: Lease) {
    let partition = lease.partition;
    let queue = QueueName::Control(partition);
    let mut poller = Poller::new(&shared.hub, &shared.placement.name, queue);
    let mut stop = shared.lifecycle.stop.clone();
    while !shared.lifecycle.stopping() && !*lease.stop.borrow() {
        // Wait for room in the prefetch buffer, then take as many slots as a batch may use.
        let first = tokio::select! {
            permit = shared.slots.buffer.clone().acquire_owned() => permit,
            _ = lease.stop.changed() => continue,
            _ = stop.changed() => continue,
        };
        let Ok(mut slots) = first else {
            return;
        };
        take_batch_slots(&shared, &mut slots);
        let wanted = slots.num_permits();
        let Some((messages, mut slots)) = poller.dequeue(slots).await else {
            continue;
        };
        // Slots beyond what came back go back at once.
        drop(slots.split(wanted.saturating_sub(messages.len())));
        if *lease.stop.borrow() {
            // The lease ended while dequeuing: give the messages back at once, uncounted.
            drop(slots);
            for m in &messages {
                release_now(shared.hub.store().as_ref(), queue, m).await;
            }
            return;
        }
        if messages.is_empty() {
            drop(slots);
            poller.idle(stopped(&mut stop, &mut lease.stop)).await;
            continue;
        }
        poller.found();
        let drained = messages.len() < wanted;
        let groups = group(&shared, &lease, messages, &mut slots).await;
        for (id, batch) in groups {
            dispatch(&shared, id, batch);
        }
        // Slots the batch did not fill go back before any wait.
        drop(slots);
        if drained {
            // The queue looked empty after this batch: wait for a wake-up (or the shortest
            // back-off, for other processes' messages) rather than an empty dequeue at once.
            poller.drained(stopped(&mut stop, &mut lease.stop)).await;
        }
    }
}

/// Gives `m` back to `queue`, visible at once and uncounted (a failure leaves it to its
/// visibility timeout).
async fn release_now(queues: &dyn QueueStore, queue: QueueName, m: &Dequeued) {
    let _ = queues.release(queue, &m.receipt, Duration::ZERO).await;
}

/// Adds free prefetch-buffer slots to `slots`, up to what one dequeue of this backend may
/// return. The slots are held as permits until each is handed to a delivery or dropped, so a
/// poller cancelled anywhere (even mid-dequeue) returns them all.
fn take_batch_slots(shared: &Shared, slots: &mut OwnedSemaphorePermit) {
    let batch = shared
        .hub
        .settings()
        .control_queue_batch_size
        .min(shared.hub.store().max_dequeue_batch())
        .max(1);
    while slots.num_permits() < batch {
        match shared.slots.buffer.clone().try_acquire_owned() {
            Ok(p) => slots.merge(p),
            Err(_) => break,
        }
    }
}

/// The deliveries of one dequeue grouped by instance, instances in the order they first
/// came; each takes one of `slots`.
async fn group(
    shared: &Shared,
    lease: &Lease,
    messages: Vec<Dequeued>,
    slots: &mut OwnedSemaphorePermit,
) -> Vec<(InstanceId, Vec<Delivery>)> {
    let queue = QueueName::Control(lease.partition);
    let mut groups: HashMap<InstanceId, Vec<Delivery>> = HashMap::new();
    let mut order: Vec<InstanceId> = Vec::new();
    for m in messages {
        let Some(slot) = slots.split(1).map(BufferSlot::new) else {
            // More messages than asked for: not the store's contract; give it back.
            warn!(%queue, "the store returned more messages than asked for");
            release_now(shared.hub.store().as_ref(), queue, &m).await;
            continue;
        };
        let Some(delivery) = delivery(shared, lease, m, slot).await else {
            continue;
        };
        let id = delivery.message.target.clone();
        if !groups.contains_key(&id) {
            order.push(id.clone());
        }
        groups.entry(id).or_default().push(delivery);
    }
    order
        .into_iter()
        .filter_map(|id| groups.remove(&id).map(|batch| (id, batch)))
        .collect()
}

/// A dequeued message as a delivery in `slot`, or `None`: dead-lettered (malformed, or over
/// the delivery limit with no session of its instance here) or given back for a second (a
/// large payload that could not be read).
async fn delivery(
    shared: &Shared,
    lease: &Lease,
    m: Dequeued,
    slot: BufferSlot,
) -> Option<Delivery> {
    let queue = QueueName::Control(lease.partition);
    let max = shared.hub.settings().max_dequeue_count;
    let message = decode::decoded(&shared.hub, &shared.lifecycle, queue, &m).await?;
    // Over the limit with no session of its instance here: nothing is working on it (it
    // failed, or crashed its worker, each time). With a session, it may just have waited its
    // turn: the session dead-letters it only if its processing fails once more.
    if m.dequeue_count > max && !shared.sessions.has(&message.target) {
        let reason = poison::too_many_deliveries(m.dequeue_count, max);
        poison::dead_letter(&shared.hub, &shared.lifecycle, queue, &m, reason).await;
        return None;
    }
    let orphan = OrphanGuard::new(shared.lifecycle.orphans.clone(), queue, m.receipt.clone());
    Some(Delivery {
        queue,
        receipt: m.receipt.clone(),
        partition: lease.partition,
        message,
        epoch: lease.epoch,
        raw: m,
        _slot: slot,
        _in_flight: InFlightSlot::new(lease.in_flight.clone()),
        _orphan: orphan,
        held: None,
    })
}

/// Resolves when the worker's stop or the lease's stop signal changes.
async fn stopped(stop: &mut watch::Receiver<bool>, lease: &mut watch::Receiver<bool>) -> Interrupt {
    tokio::select! {
        _ = stop.changed() => {}
        _ = lease.changed() => {}
    }
    Interrupt::Recheck
}

/// Gives a batch to the instance's running session, or starts one. What is over the
/// instance's share while it waits on a remote executor goes back to its queue (see
/// [`sessions`](crate::worker::shared::sessions)).
pub(crate) fn dispatch(shared: &Arc<Shared>, instance: InstanceId, batch: Vec<Delivery>) {
    let now = shared.hub.clock().monotonic();
    match shared.sessions.hand(&instance, batch, now) {
        Handed::Start(batch, inbox) => {
            shared
                .lifecycle
                .spawn(session::run(shared.clone(), instance, batch, inbox));
        }
        Handed::Joined { over, delay } => {
            if !over.is_empty() {
                debug!(
                    %instance,
                    messages = over.len(),
                    delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    "over the instance's share of the buffer while it waits on the executor; \
                     back to its queue"
                );
                let s = shared.clone();
                shared.lifecycle.spawn(async move {
                    orchestration::give_back(s.returns(), &over, delay).await;
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::disallowed_methods,
        reason = "tests"
    )]

    use std::sync::Arc;
    use std::time::Duration;

    use taskhub_core::{Registry, Timestamp};
    use taskhub_storage::memory::{FaultPlan, MemoryStore, Op, Trigger};
    use taskhub_storage::ManualClock;

    use crate::{Settings, TaskHub, Worker};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_poller_aborted_mid_dequeue_returns_its_buffer_permits() {
        let clock = ManualClock::new(Timestamp::from_millis(1_700_000_000_000));
        // Dequeues never answer: the manual clock never reaches the end of their delay.
        let mut plan = FaultPlan::none();
        for n in 1..=4 {
            plan = plan.delay(Trigger::nth_of(Op::Dequeue, n), Duration::from_secs(3600));
        }
        let store = Arc::new(MemoryStore::with_faults(Arc::new(clock.clone()), plan));
        let settings = Settings {
            partition_count: 1,
            ..Settings::default()
        };
        let buffer = settings.control_queue_buffer_threshold;
        let hub = TaskHub::open_with_clock(store, settings, Arc::new(clock))
            .await
            .unwrap();
        let worker = Worker::start(&hub, Registry::new()).await.unwrap();
        let shared = worker.shared.clone();
        tokio::time::timeout(Duration::from_secs(10), async {
            while shared.slots.buffer.available_permits() == buffer {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
        .await
        .expect("the poller takes buffer slots for its dequeue");

        let mut pollers = shared.placement.take_pollers();
        pollers.abort_all();
        while pollers.join_next().await.is_some() {}
        assert_eq!(
            shared.slots.buffer.available_permits(),
            buffer,
            "every slot taken for the aborted dequeue is back"
        );
    }
}
