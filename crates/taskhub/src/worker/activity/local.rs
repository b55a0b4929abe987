//! Activity results handed over in-process.
//!
//! When the worker that ran an activity also holds the lease of its orchestration's partition,
//! the result does not go through the control queue (a put, a Get and a delete): it is given
//! to the instance's session as a delivery whose receipt is the **work item's**. The turn that
//! applies it consumes that receipt, so the orchestration checkpoint that records the result
//! in history also deletes the work item — one commit instead of two, and three queue
//! operations fewer per activity.
//!
//! Until that checkpoint the work item stays hidden (it was renewed while the activity ran,
//! so at least half its visibility timeout is left). If the result cannot be applied under the
//! lease it was handed over under (the lease ended, the turn failed, the instance waits for its
//! start), [`fall_back`] commits it the ordinary way: the result goes to the control queue and
//! the work item is deleted in one checkpoint. So a lease move between live workers never makes
//! the activity run again; only a crash, or a pause past the work item's visibility timeout,
//! does (as before).

use std::sync::Arc;
use std::time::Duration;

use taskhub_core::{EventKind, Message};
use taskhub_storage::{Dequeued, QueueName};
use tokio::sync::OwnedSemaphorePermit;
use tracing::warn;

use super::result_commit::{self, WorkItemHold};
use crate::hub::TaskHub;
use crate::retries;
use crate::worker::shared::delivery::{BufferSlot, Delivery, InFlightSlot};
use crate::worker::shared::held_item::HeldItem;
use crate::worker::shared::lifecycle::Lifecycle;
use crate::worker::shared::orphans::OrphanGuard;
use crate::worker::shared::outbound;
use crate::worker::shared::run_ledger::RunMark;
use crate::worker::shared::Shared;

/// An activity's result ready to be handed over.
pub(crate) struct LocalResult {
    /// The result message (addressed to the orchestration).
    pub reply: Message,
    /// The partition whose control queue the result is for.
    pub partition: u32,
    /// The work item as dequeued (its receipt is replaced by the hold's current one).
    pub work_item: Dequeued,
    /// The activity slot the result was produced in. A handed-over result trades it for room
    /// among the waiting results ([`Slots::results`](crate::worker::shared::slots::Slots::results), counted
    /// in KiB of payload) and keeps that until its turn is done; when there is no room it
    /// keeps the activity slot instead, so results waiting for turns hold back new work items
    /// rather than pile up.
    pub slot: OwnedSemaphorePermit,
    /// The work item's mark in the run ledger: the held item keeps it until its result is
    /// recorded (or not).
    pub mark: RunMark,
}

/// Hands `result` to its session if this worker holds the partition's lease and is not
/// draining it. On success the work item now belongs to the
/// session (its in-flight entry is dropped); otherwise `result` comes back for the ordinary
/// path.
pub(crate) fn try_deliver(
    shared: &Arc<Shared>,
    result: LocalResult,
    hold: &WorkItemHold,
) -> Result<(), Box<LocalResult>> {
    if shared.lifecycle.stopping() {
        return Err(Box::new(result));
    }
    let receipt = hold.receipt.clone();
    let delivery = {
        // Under the partitions lock: a drain stops the poller under the same lock before it
        // waits for the in-flight count, so it either waits for this delivery or it is refused.
        let held = shared.placement.held();
        let Some(active) = held.get(&result.partition) else {
            return Err(Box::new(result));
        };
        if active.retiring || *active.stop.borrow() {
            return Err(Box::new(result));
        }
        Delivery {
            held: Some(HeldItem::start(
                &shared.hub,
                &shared.lifecycle,
                receipt.clone(),
                hold.renewed_at,
                result.mark,
            )),
            queue: QueueName::WorkItems,
            receipt: receipt.clone(),
            partition: result.partition,
            epoch: active.epoch,
            // The activity has run: its slot goes to the next work item if the waiting
            // results have room for this one (the activity slot drops with `result.slot`).
            _slot: BufferSlot::new(
                shared
                    .slots
                    .results
                    .clone()
                    .try_acquire_many_owned(waiting_kib(&result.reply))
                    .unwrap_or(result.slot),
            ),
            _in_flight: InFlightSlot::new(active.in_flight.clone()),
            _orphan: OrphanGuard::new(
                shared.lifecycle.orphans.clone(),
                QueueName::WorkItems,
                receipt.clone(),
            ),
            message: result.reply,
            raw: Dequeued {
                receipt,
                ..result.work_item
            },
        }
    };
    shared.lifecycle.landed(hold.flight);
    let instance = delivery.message.target.clone();
    // Counted before the hand-over: the turn that records the result may finish the instance
    // before this task runs again, and a caller who saw it finish must see the activity counted.
    shared.lifecycle.stat(|s| s.activities += 1);
    (shared.dispatch)(shared, instance, vec![delivery]);
    Ok(())
}

/// What a result waiting for its turn counts against [`Slots::results`]: its payload in KiB,
/// rounded up, plus one.
///
/// [`Slots::results`]: crate::worker::shared::slots::Slots::results
fn waiting_kib(reply: &Message) -> u32 {
    let bytes = match &reply.event {
        EventKind::TaskCompleted { result, .. } => result.as_str().len(),
        EventKind::TaskFailed { failure, .. } => {
            failure.error_type.len()
                + failure.message.len()
                + failure.details.as_ref().map_or(0, String::len)
        }
        _ => 0,
    };
    u32::try_from(bytes.div_ceil(1024).saturating_add(1)).unwrap_or(u32::MAX)
}

/// Commits a handed-over result the ordinary way, to be applied after `delay`: the result
/// goes to its control queue and the work item is deleted, in one checkpoint. Encoding (a
/// large result is written to the payload store) and the commit are retried while storage
/// fails transiently, the work item kept hidden meanwhile (renewed from its last renewal).
pub(crate) async fn fall_back(hub: &TaskHub, lifecycle: &Lifecycle, d: &Delivery, delay: Duration) {
    let instance = &d.message.target;
    // The receipt and last renewal as they are now; no renewer runs from here on.
    let (receipt, renewed_at) = match &d.held {
        Some(h) => {
            let now = h.current().await;
            h.take().await;
            now
        }
        None => (d.receipt.clone(), hub.clock().monotonic()),
    };
    let flight = lifecycle.take_off(QueueName::WorkItems, receipt.clone());
    let mut hold = WorkItemHold {
        flight,
        receipt,
        renewed_at,
    };
    // Half the visibility timeout may be gone since the last renewal: renew first if so.
    hold.renew_if_due(hub, lifecycle).await;
    let clock = hub.clock();
    let started = clock.monotonic();
    let mut waits = retries::ACTIVITY_RESULT.waits();
    let outbound = loop {
        match outbound::encode(hub, d.home(), &d.message, delay).await {
            Ok(o) => break Some(o),
            Err(e) if e.is_retryable() => {
                let Some(wait) = waits.next_retry(clock.monotonic().saturating_sub(started)) else {
                    warn!(%instance, error = %e, "could not encode an activity result; the work item will run again");
                    break None;
                };
                warn!(%instance, error = %e, "could not encode an activity result; retrying");
                clock.sleep(wait).await;
                hold.renew_if_due(hub, lifecycle).await;
            }
            Err(e) => {
                warn!(%instance, error = %e, "could not encode an activity result; the work item will run again");
                break None;
            }
        }
    };
    if let Some(outbound) = outbound {
        match result_commit::commit(hub, lifecycle, instance, outbound, &mut hold).await {
            Ok(_) => {
                if let Some(h) = &d.held {
                    h.recorded();
                }
                hub.signals().enqueued_after(d.home(), delay);
            }
            Err(e) => {
                warn!(%instance, error = %e, "could not report an activity result; the work item will run again")
            }
        }
    }
    lifecycle.landed(flight);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use taskhub_core::{EventKind, FailureDetails, InstanceId, Message, Payload, Timestamp};

    use super::waiting_kib;

    fn reply(event: EventKind) -> Message {
        Message::from_client(
            InstanceId::new("i").unwrap(),
            event,
            Timestamp::from_millis(0),
        )
    }

    #[test]
    fn a_waiting_result_counts_its_payload_in_kib_and_one_more() {
        let completed = |json: String| {
            reply(EventKind::TaskCompleted {
                task_id: 0,
                result: Payload::from_json(json).unwrap(),
            })
        };
        assert_eq!(waiting_kib(&completed("1".into())), 2);
        assert_eq!(
            waiting_kib(&completed(format!("\"{}\"", "x".repeat(3000)))),
            4
        );
        let big = completed(format!("\"{}\"", "x".repeat(20 << 20)));
        assert!(waiting_kib(&big) as usize > crate::worker::shared::slots::WAITING_RESULTS_KIB);
        let failed = reply(EventKind::TaskFailed {
            task_id: 0,
            failure: FailureDetails {
                details: Some("d".repeat(2048)),
                ..FailureDetails::new("E", "m")
            },
        });
        assert_eq!(waiting_kib(&failed), 4);
        assert_eq!(waiting_kib(&reply(EventKind::OrchestratorStarted)), 1);
    }
}
