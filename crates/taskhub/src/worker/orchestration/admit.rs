//! The admission of a batch (orchestrations and entities alike): a processing slot; the
//! deliveries of the partition's current lease (those of an ended lease are released,
//! uncounted, and a session cached under another lease is dropped); and timers that arrived
//! before their time: one early by less than the hold window (`TIMER_LEAD` plus the backend's
//! delay unit) is waited for, an earlier one re-sent with the rest of its delay.

use std::time::Duration;

use taskhub_core::{EventKind, Timestamp};
use taskhub_storage::{CheckpointRequest, LeaseFence};
use tokio::sync::SemaphorePermit;
use tracing::{debug, warn};

use super::cached::Cached;
use super::redeliver::{commit, give_back};
use crate::hub::TaskHub;
use crate::worker::shared::delivery::{BufferSlot, Delivery};
use crate::worker::shared::outbound;
use crate::worker::shared::Shared;

/// A batch admitted for processing.
pub(crate) struct Admitted<'a> {
    /// One of `max_concurrent_orchestrations` slots, held while the batch is processed.
    pub(crate) slot: SemaphorePermit<'a>,
    /// The deliveries dequeued under the partition's current lease (never empty).
    pub(crate) deliveries: Vec<Delivery>,
}

/// Waits for a processing slot and keeps the deliveries of the current lease (see
/// [`under_current_lease`]). `None`: nothing is left to process (the worker is stopping, or
/// every delivery was given back).
pub(crate) async fn admit<'a>(
    shared: &'a Shared,
    cached: &mut Cached,
    deliveries: Vec<Delivery>,
) -> Option<Admitted<'a>> {
    let Ok(slot) = shared.slots.orchestrations.acquire().await else {
        give_back(shared.returns(), &deliveries, Duration::ZERO).await;
        return None;
    };
    let deliveries = under_current_lease(shared, cached, deliveries).await?;
    Some(Admitted { slot, deliveries })
}

/// Keeps the deliveries dequeued under the partition's current lease and gives the others
/// back at once (their lease was lost or handed over). A session cached under another lease
/// (another epoch, or another partition after the instance moved) is dropped: another worker
/// may have moved the instance on meanwhile.
async fn under_current_lease(
    shared: &Shared,
    cached: &mut Cached,
    deliveries: Vec<Delivery>,
) -> Option<Vec<Delivery>> {
    let partition = deliveries.first().map(|d| d.partition)?;
    // Read once: the batch is judged, and the cache keyed, by one reading of the lease.
    let current = shared.placement.fence(partition).map(|f| f.epoch);
    let (valid, stale): (Vec<Delivery>, Vec<Delivery>) = deliveries
        .into_iter()
        .partition(|d| Some(d.epoch) == current);
    if !stale.is_empty() {
        debug!(
            partition,
            count = stale.len(),
            "giving back messages fetched under an old lease"
        );
        give_back(shared.returns(), &stale, Duration::ZERO).await;
    }
    let lease = current.map(|epoch| LeaseFence { partition, epoch });
    if cached.lease != lease {
        *cached = Cached::default();
        cached.lease = lease;
    }
    (!valid.is_empty()).then_some(valid)
}

/// Whether `d` was fetched under its partition's current lease.
fn fetched_under_current_lease(shared: &Shared, d: &Delivery) -> bool {
    shared.placement.fence(d.partition).map(|f| f.epoch) == Some(d.epoch)
}

/// Splits off the timers among `deliveries` that came before their time but within
/// [`outbound::timer_hold_window`] of it (sent [`outbound::TIMER_LEAD`] early, or rounded down to
/// the backend's delay unit): the instance's session keeps them and processes them when they
/// are due ([`take_due`]), while the rest and whatever else arrives meanwhile are processed as
/// they come. Returns (held, the rest). Each held timer trades its buffer slot for one of the
/// worker's [`MAX_HELD_TIMERS`](crate::worker::shared::slots::MAX_HELD_TIMERS) while there are any.
pub(crate) fn hold_back(
    shared: &Shared,
    deliveries: Vec<Delivery>,
) -> (Vec<Delivery>, Vec<Delivery>) {
    let hub = &shared.hub;
    let now = hub.clock().now();
    let window = outbound::timer_hold_window(hub.store().as_ref());
    // A timer fetched under a lease that has ended is not held: it goes back at once with the
    // rest (`admit`), for the partition's new owner.
    let (mut held, rest): (Vec<Delivery>, Vec<Delivery>) = deliveries.into_iter().partition(|d| {
        remainder(d, now).is_some_and(|r| r <= window) && fetched_under_current_lease(shared, d)
    });
    for d in &mut held {
        if let Ok(permit) = shared.slots.held_timers.clone().try_acquire_owned() {
            d._slot = BufferSlot::new(permit);
        }
    }
    (held, rest)
}

/// Takes the held timers that are due at `now` out of `held`.
pub(crate) fn take_due(held: &mut Vec<Delivery>, now: Timestamp) -> Vec<Delivery> {
    let (due, later): (Vec<Delivery>, Vec<Delivery>) = std::mem::take(held)
        .into_iter()
        .partition(|d| remainder(d, now).is_none());
    *held = later;
    due
}

/// How long until the earliest of the held timers is due (zero if one is; `None`: none held).
pub(crate) fn next_due(held: &[Delivery], now: Timestamp) -> Option<Duration> {
    held.iter()
        .map(|d| remainder(d, now).unwrap_or(Duration::ZERO))
        .min()
}

/// How long until `d`, a timer, is due (`None`: not a timer, or due).
fn remainder(d: &Delivery, now: Timestamp) -> Option<Duration> {
    match d.message.event {
        EventKind::TimerFired { fire_at, .. } if fire_at > now => {
            Some(fire_at.saturating_since(now))
        }
        _ => None,
    }
}

/// The deliveries that are due now. A timer still short of its time by at most the hold
/// window (see [`hold_back`]) is waited for here; one that came earlier still (a chunked long
/// timer) goes back with the rest of its delay.
pub(super) async fn due_now(hub: &TaskHub, deliveries: Vec<Delivery>) -> Vec<Delivery> {
    let window = outbound::timer_hold_window(hub.store().as_ref());
    let mut now = hub.clock().now();
    if let Some(wait) = short_remainder(&deliveries, now, window) {
        hub.clock().sleep(wait).await;
        now = hub.clock().now();
    }
    let (early, due): (Vec<Delivery>, Vec<Delivery>) = deliveries
        .into_iter()
        .partition(|d| remainder(d, now).is_some());
    if !early.is_empty() {
        reschedule_early_timers(hub, early).await;
    }
    due
}

/// The longest wait, at most `window`, until a timer among `deliveries` is due.
fn short_remainder(deliveries: &[Delivery], now: Timestamp, window: Duration) -> Option<Duration> {
    deliveries
        .iter()
        .filter_map(|d| remainder(d, now))
        .filter(|r| *r <= window)
        .max()
}

/// Timer messages that arrived before their time (chunked long timers) go back with the rest
/// of their delay.
async fn reschedule_early_timers(hub: &TaskHub, early: Vec<Delivery>) {
    let now = hub.clock().now();
    for d in early {
        let EventKind::TimerFired { fire_at, .. } = d.message.event else {
            continue;
        };
        let delay = outbound::timer_delay(hub.store().as_ref(), fire_at, now);
        let Ok(o) = outbound::encode(hub, d.home(), &d.message, delay).await else {
            continue;
        };
        let req = CheckpointRequest {
            instance_id: d.message.target.clone(),
            fence: None,
            history: None,
            instance: None,
            outbound: vec![o],
            consumed: vec![(d.queue, d.receipt.clone())],
        };
        if let Err(e) = commit(hub, req).await {
            warn!(error = %e, "could not re-schedule an early timer message");
        }
    }
}
