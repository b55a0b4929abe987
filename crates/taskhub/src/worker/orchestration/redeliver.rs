//! Where a batch's messages go when they are not consumed by a committed turn: committed
//! without a turn ([`consume`]), back to their queue counted ([`abandon`]) or uncounted
//! ([`give_back`], [`wait_for_start`]), and the retried checkpoint every path commits through.

use std::time::Duration;

use taskhub_core::{InstanceId, Timestamp};
use taskhub_storage::{
    CheckpointRequest, CheckpointStore, Clock, LeaseFence, OutboundMessage, QueueName, StorageError,
};
use tracing::{debug, warn};

use crate::hub::TaskHub;
use crate::retries;
use crate::worker::activity::local;
use crate::worker::lifecycle::poison;
use crate::worker::shared::delivery::Delivery;
use crate::worker::shared::outbound;
use crate::worker::shared::start_watch::START_ROW_GRACE;
use crate::worker::shared::{Returns, Shared};

/// How long a message waits, uncounted, for the start of an instance that has not started
/// (see [`wait_for_start`]).
const NOT_STARTED_GRACE: Duration = Duration::from_secs(300);
/// How often such a message is looked at again meanwhile.
const NOT_STARTED_RETRY: Duration = Duration::from_secs(1);

/// Commits with a few retries on transient errors.
pub(crate) async fn commit(
    hub: &TaskHub,
    request: CheckpointRequest,
) -> Result<taskhub_storage::CheckpointOutcome, StorageError> {
    let store: &dyn CheckpointStore = hub.store().as_ref();
    retry_transient(hub.clock().as_ref(), || store.checkpoint(request.clone())).await
}

/// Runs `op`, retrying it a few times (with growing waits on the clock) while it fails with a
/// retryable error.
pub(crate) async fn retry_transient<T, F, Fut>(
    clock: &dyn Clock,
    mut op: F,
) -> Result<T, StorageError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StorageError>>,
{
    let started = clock.monotonic();
    let mut waits = retries::TURN_RETRY.waits();
    loop {
        match op().await {
            Err(e) if e.is_retryable() => {
                match waits.next_retry(clock.monotonic().saturating_sub(started)) {
                    Some(wait) => clock.sleep(wait).await,
                    None => return Err(e),
                }
            }
            other => return other,
        }
    }
}

/// Deletes messages that were handled without a turn, sending `outbound` in the same
/// checkpoint.
pub(super) async fn consume(
    hub: &TaskHub,
    instance: &InstanceId,
    deliveries: &[Delivery],
    outbound: Vec<OutboundMessage>,
) {
    let queues: Vec<(QueueName, Duration)> = outbound
        .iter()
        .map(|o| (o.queue, o.message.delay))
        .collect();
    let req = CheckpointRequest {
        instance_id: instance.clone(),
        fence: None,
        history: None,
        instance: None,
        outbound,
        consumed: deliveries
            .iter()
            .map(|d| (d.queue, d.receipt.clone()))
            .collect(),
    };
    match commit(hub, req).await {
        Ok(_) => {
            for (q, delay) in queues {
                hub.signals().enqueued_after(q, delay);
            }
        }
        Err(e) => {
            warn!(%instance, error = %e, "could not delete discarded messages; they will be discarded again");
        }
    }
}

/// Returns messages whose processing failed to their queue, to be tried again after `delay`;
/// a message already delivered more than `max_dequeue_count` times goes to the dead-letter
/// store instead (never an endless loop). When the hub's schema moved past this build, they all
/// go back uncounted instead (see `schema_watch`).
pub(crate) async fn abandon(returns: Returns<'_>, deliveries: &[Delivery], delay: Duration) {
    // One look at the stored schema for the whole batch (none if all are local).
    if deliveries.iter().any(|d| !d.is_local())
        && crate::worker::lifecycle::schema_watch::schema_moved(returns.hub, returns.lifecycle)
            .await
    {
        give_back(returns, deliveries, delay).await;
        return;
    }
    for d in deliveries {
        count_failure(returns, d, delay).await;
    }
}

/// Returns one message to its queue after `delay`, counted toward the poison threshold (a
/// message delivered too often is dead-lettered instead); one handed over in process falls back
/// to its queue.
pub(super) async fn retry_later(returns: Returns<'_>, d: &Delivery, delay: Duration) {
    abandon(returns, std::slice::from_ref(d), delay).await;
}

/// [`retry_later`] once the schema was found unmoved: counted, or dead-lettered past the
/// threshold (a remote delivery).
async fn count_failure(returns: Returns<'_>, d: &Delivery, delay: Duration) {
    let max = returns.hub.settings().max_dequeue_count;
    if !d.is_local() && d.raw.dequeue_count > max {
        let reason = poison::too_many_deliveries(d.raw.dequeue_count, max);
        poison::dead_letter(returns.hub, returns.lifecycle, d.queue, &d.raw, reason).await;
        return;
    }
    // A failed delivery: it counts toward the poison threshold.
    put_back(returns, d, delay, Counted::Yes).await;
}

/// Whether a message put back counts as a failed delivery (toward the poison threshold).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Counted {
    Yes,
    No,
}

/// Puts `d` back on its queue, visible after `delay` (`abandon`, or `release` if not
/// counted); one handed over in process falls back to its queue. A failure leaves the
/// message to reappear after its visibility timeout.
async fn put_back(returns: Returns<'_>, d: &Delivery, delay: Duration, counted: Counted) {
    if d.is_local() {
        local::fall_back(returns.hub, returns.lifecycle, d, delay).await;
        return;
    }
    let queues = returns.hub.store();
    let (put, what) = match counted {
        Counted::Yes => (queues.abandon(d.queue, &d.receipt, delay).await, "abandon"),
        Counted::No => (queues.release(d.queue, &d.receipt, delay).await, "release"),
    };
    if let Err(e) = put {
        debug!(error = %e, "{what} failed; the message reappears after its visibility timeout");
    }
}

/// A message for an instance with neither history nor a Pending row: the start it depends on
/// has not arrived or is not visible yet (queues do not keep order, so an event sent right
/// after a sub-orchestration's start can overtake it). It goes back with a delay, uncounted,
/// while younger than [`NOT_STARTED_GRACE`]; after that each delivery counts, so a message for
/// an instance that never starts ends in the dead letters rather than circling forever.
pub(super) async fn wait_for_start(returns: Returns<'_>, d: &Delivery, now: Timestamp) {
    if d.is_local() || now.saturating_since(d.raw.enqueued_at) < NOT_STARTED_GRACE {
        put_back(returns, d, NOT_STARTED_RETRY, Counted::No).await;
    } else {
        retry_later(returns, d, NOT_STARTED_RETRY).await;
    }
}

/// The shortest and longest wait between two looks at a deferred start: a quarter of its age
/// in between, so a start whose row is a moment late is taken within a few hundred
/// milliseconds and an orphan costs a few dozen deliveries over the grace.
const START_ROW_RETRY: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(10));

/// How long a deferred start of age `age` waits before it is looked at again.
pub(super) fn start_retry_delay(age: Duration) -> Duration {
    (age / 4).clamp(START_ROW_RETRY.0, START_ROW_RETRY.1)
}

/// Puts a deferred start (and the messages that came with it) back, uncounted, to be judged
/// again once its row may have landed. Returns false, doing nothing, for a start this worker
/// has seen wait [`START_ROW_GRACE`] already: the caller refuses it.
pub(super) async fn defer_start(shared: &Shared, start: &Delivery, rest: &[Delivery]) -> bool {
    // The worker's own time since it first saw this start, never the store's enqueue time
    // against this worker's wall clock (see `start_watch`).
    let now = shared.hub.clock().monotonic();
    let age = shared.watches.start.waited(&start.message.id, now);
    if age >= START_ROW_GRACE {
        shared.watches.start.forget(&start.message.id);
        return false;
    }
    let delay = start_retry_delay(age);
    debug!(instance = %start.message.target, ?delay, "a start waits for its instance row");
    give_back(shared.returns(), std::slice::from_ref(start), delay).await;
    give_back(shared.returns(), rest, delay).await;
    true
}

/// Sends fresh copies of starts that came before their scheduled time (each with its delay,
/// see `start_accept::early_start`) and consumes the deliveries, in one checkpoint; a copy that
/// cannot be encoded leaves its delivery to come back after a short wait, uncounted.
pub(super) async fn send_round_again(
    returns: Returns<'_>,
    instance: &InstanceId,
    early: Vec<(Delivery, Duration)>,
) {
    let mut copies = Vec::with_capacity(early.len());
    let mut sent = Vec::with_capacity(early.len());
    for (d, delay) in early {
        match outbound::encode(returns.hub, d.home(), &d.message, delay).await {
            Ok(o) => {
                copies.push(o);
                sent.push(d);
            }
            Err(e) => {
                warn!(%instance, error = %e, "could not send an early start round again; it comes back");
                give_back(returns, std::slice::from_ref(&d), NOT_STARTED_RETRY).await;
            }
        }
    }
    debug!(%instance, starts = sent.len(), "starts before their scheduled time go round again");
    consume(returns.hub, instance, &sent, copies).await;
}

/// Sends a batch whose checkpoint failed (`e`) back, its conflict counted. A fenced
/// checkpoint means the lease is gone: not the messages' fault. They go back uncounted, and
/// this worker stops processing the partition under the old epoch at once (else it would
/// redeliver them to itself, fenced each time, until its lease manager noticed, and
/// dead-letter live messages). Any other failure goes back counted, at once after a conflict.
pub(crate) async fn after_failed_checkpoint(
    shared: &Shared,
    deliveries: &[Delivery],
    fence: LeaseFence,
    e: &StorageError,
) {
    if let StorageError::Fenced { .. } = e {
        shared.placement.lease_lost(fence.partition, fence.epoch);
        give_back(shared.returns(), deliveries, Duration::ZERO).await;
        return;
    }
    let delay = if e.is_conflict() {
        Duration::ZERO
    } else {
        Duration::from_secs(1)
    };
    abandon(shared.returns(), deliveries, delay).await;
}

/// Returns messages to their queue without counting the delivery (a lease ended).
pub(crate) async fn give_back(returns: Returns<'_>, deliveries: &[Delivery], delay: Duration) {
    for d in deliveries {
        put_back(returns, d, delay, Counted::No).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deferred_start_is_looked_at_again_sooner_while_young() {
        let secs = Duration::from_secs;
        for (age, delay) in [
            (Duration::ZERO, Duration::from_millis(100)),
            (secs(2), Duration::from_millis(500)),
            (secs(299), secs(10)),
        ] {
            assert_eq!(start_retry_delay(age), delay, "age {age:?}");
        }
    }
}
