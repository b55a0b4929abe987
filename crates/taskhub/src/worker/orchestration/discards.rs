//! What becomes of a turn's messages: the applied ones are consumed by its checkpoint, and the
//! ones the engine held back go where they can still be applied — a message for the next
//! execution of an instance that just continued as new goes back behind that execution's start,
//! one for an instance that has not started waits for its start (or is dropped if the instance
//! was terminated before it ran).

use std::time::Duration;

use taskhub_core::{
    DiscardReason, Discarded, InstanceId, MessageId, OrchestrationStatus, Timestamp, TurnResult,
};
use taskhub_storage::{InstanceRow, OutboundMessage, QueueName, Receipt};
use tracing::{debug, warn};

use super::redeliver::{retry_later, wait_for_start};
use crate::rows;
use crate::worker::shared::delivery::Delivery;
use crate::worker::shared::outbound;
use crate::worker::shared::Shared;

/// How long a message for the next execution of an instance that continued as new waits
/// before it is delivered again (its start is already queued ahead of it).
const NEXT_EXECUTION_RETRY: Duration = Duration::from_millis(50);
/// How long a message for a suspended or delayed instance waits before it is looked at again.
const WAITING_RETRY: Duration = Duration::from_secs(1);
/// The shortest wait for a delayed start that is (nearly) due.
const MIN_PENDING_RETRY: Duration = Duration::from_millis(100);

/// What a turn's checkpoint does with its batch's messages.
#[derive(Debug, Default)]
pub(super) struct Routed {
    /// The receipts the checkpoint deletes.
    pub(super) consumed: Vec<(QueueName, Receipt)>,
    /// Fresh copies the checkpoint sends (same message IDs, so each is still applied once).
    pub(super) outbound: Vec<OutboundMessage>,
}

/// What the turn did with one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Applied, or discarded for good: the checkpoint consumes it.
    Consumed,
    /// Held for the next execution (the instance just continued as new).
    NextExecution,
    /// Held until the instance starts.
    NotStarted,
}

/// How a message held until its instance starts waits, judged on the instance row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waiting {
    /// A fresh copy is sent with this delay and the delivery consumed: the start is scheduled
    /// (Pending) or suspended before it ran; waiting never counts toward the poison threshold.
    ResendAfter(Duration),
    /// The instance was terminated before its start: it never runs, and the message is dropped.
    Drop,
    /// No start is known yet: the message goes back to its queue (see `wait_for_start`).
    ForStart,
}

fn fate(message: &MessageId, discarded: &[Discarded]) -> Fate {
    let reason = discarded
        .iter()
        .find(|d| d.message_id == *message)
        .map(|d| d.reason);
    match reason {
        Some(DiscardReason::NotStarted) => Fate::NotStarted,
        Some(DiscardReason::AwaitingNextExecution) => Fate::NextExecution,
        _ => Fate::Consumed,
    }
}

fn waiting(row: Option<&InstanceRow>, now: Timestamp) -> Waiting {
    match row {
        Some(r) if r.status == OrchestrationStatus::Pending => {
            Waiting::ResendAfter(r.scheduled_start.map_or(WAITING_RETRY, |at| {
                at.saturating_since(now).max(MIN_PENDING_RETRY)
            }))
        }
        Some(r) if r.status == OrchestrationStatus::Suspended => {
            Waiting::ResendAfter(WAITING_RETRY)
        }
        Some(r) if rows::terminated_before_start(r) => Waiting::Drop,
        _ => Waiting::ForStart,
    }
}

/// The request for [`route`].
pub(super) struct RouteRequest<'a> {
    /// The instance the turn ran for.
    pub(super) instance: &'a InstanceId,
    /// The turn's batch.
    pub(super) batch: &'a [Delivery],
    /// What the turn made of it.
    pub(super) result: &'a TurnResult,
    /// The instance row the turn knows.
    pub(super) row: Option<&'a InstanceRow>,
    /// The turn's time.
    pub(super) now: Timestamp,
}

/// Sorts the batch by what the turn did with each message: the checkpoint consumes the applied
/// ones and sends fresh copies of the held ones that wait in their queue; a message that cannot
/// be re-sent goes back counted, and one for an instance with no known start goes back at once.
pub(super) async fn route(shared: &Shared, req: RouteRequest<'_>) -> Routed {
    let RouteRequest {
        instance,
        batch,
        result,
        row,
        now,
    } = req;
    let mut routed = Routed::default();
    let mut held = Vec::new();
    // Messages for the next execution first, in arrival order: a fresh copy of each, never
    // counted toward the poison threshold while that execution's start is on its way.
    for d in batch {
        match fate(&d.message.id, &result.discarded) {
            Fate::Consumed => routed.consumed.push((d.queue, d.receipt.clone())),
            Fate::NextExecution => {
                resend(shared, &mut routed, d, NEXT_EXECUTION_RETRY, instance).await;
            }
            Fate::NotStarted => held.push(d),
        }
    }
    match waiting(row, now) {
        Waiting::ResendAfter(delay) => {
            for d in held {
                resend(shared, &mut routed, d, delay, instance).await;
            }
        }
        Waiting::Drop => {
            for d in held {
                routed.consumed.push((d.queue, d.receipt.clone()));
            }
        }
        Waiting::ForStart => {
            for d in held {
                wait_for_start(shared.returns(), d, now).await;
            }
        }
    }
    if !result.discarded.is_empty() {
        debug!(%instance, discarded = ?result.discarded, "messages not applied");
        shared
            .lifecycle
            .stat(|s| s.discarded += result.discarded.len() as u64);
    }
    routed
}

/// Adds a fresh copy of `d`, delivered after `delay`, and consumes `d`; if the copy cannot be
/// made, `d` goes back to its queue instead.
async fn resend(
    shared: &Shared,
    routed: &mut Routed,
    d: &Delivery,
    delay: Duration,
    instance: &InstanceId,
) {
    // A message waiting for a start scheduled weeks ahead waits in hops of the longest delay.
    let delay = delay.min(shared.hub.store().max_delay());
    match outbound::encode(&shared.hub, d.home(), &d.message, delay).await {
        Ok(o) => {
            routed.outbound.push(o);
            routed.consumed.push((d.queue, d.receipt.clone()));
        }
        Err(e) => {
            warn!(%instance, error = %e, "could not re-send a held message; it goes back to its queue");
            retry_later(shared.returns(), d, WAITING_RETRY).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: OrchestrationStatus, scheduled: Option<u64>, done: Option<u64>) -> InstanceRow {
        InstanceRow {
            completed_at: done.map(Timestamp::from_millis),
            scheduled_start: scheduled.map(Timestamp::from_millis),
            ..crate::worker::orchestration::fixtures::row("i", "e-1", status)
        }
    }

    #[test]
    fn held_messages_are_told_from_applied_and_discarded_ones() {
        let ids: Vec<MessageId> = (0..5).map(|_| MessageId::random()).collect();
        let discard = |i: usize, reason| Discarded {
            message_id: ids[i].clone(),
            reason,
            detail: String::new(),
        };
        let discarded = vec![
            discard(1, DiscardReason::NotStarted),
            discard(2, DiscardReason::AwaitingNextExecution),
            discard(3, DiscardReason::Duplicate),
            discard(4, DiscardReason::InstanceFinished),
        ];
        assert_eq!(fate(&ids[0], &discarded), Fate::Consumed, "applied");
        assert_eq!(fate(&ids[1], &discarded), Fate::NotStarted);
        assert_eq!(fate(&ids[2], &discarded), Fate::NextExecution);
        // Discarded for good: consumed by the checkpoint, never re-sent.
        assert_eq!(fate(&ids[3], &discarded), Fate::Consumed);
        assert_eq!(fate(&ids[4], &discarded), Fate::Consumed);
    }

    #[test]
    fn a_message_for_an_unstarted_instance_waits_as_its_row_says() {
        use OrchestrationStatus::*;
        let now = Timestamp::from_millis(10_000);
        // No row: the start has not arrived; the message goes back to its queue.
        assert_eq!(waiting(None, now), Waiting::ForStart);
        assert_eq!(
            waiting(Some(&row(Running, None, None)), now),
            Waiting::ForStart
        );
        // A start scheduled later: a copy waits until then.
        assert_eq!(
            waiting(Some(&row(Pending, Some(25_000), None)), now),
            Waiting::ResendAfter(Duration::from_secs(15))
        );
        // Due (or past): looked at again shortly, not in a busy loop.
        assert_eq!(
            waiting(Some(&row(Pending, Some(10_020), None)), now),
            Waiting::ResendAfter(MIN_PENDING_RETRY)
        );
        // Pending without a schedule (its start is on its way).
        assert_eq!(
            waiting(Some(&row(Pending, None, None)), now),
            Waiting::ResendAfter(WAITING_RETRY)
        );
        // Suspended before its start: waits for the resume.
        assert_eq!(
            waiting(Some(&row(Suspended, Some(25_000), None)), now),
            Waiting::ResendAfter(WAITING_RETRY)
        );
        // Terminated before its start: it never runs.
        assert_eq!(
            waiting(Some(&row(Terminated, Some(25_000), Some(5_000))), now),
            Waiting::Drop
        );
        // Terminated after it ran: not a pre-start row; the engine's discard stands.
        assert_eq!(
            waiting(Some(&row(Terminated, Some(2_000), Some(5_000))), now),
            Waiting::ForStart
        );
    }
}
