//! Outbound messages every stage sends: encoding one (`encode`), the purposes that derive the
//! IDs of an activity's messages (`attempt_purpose`), and the delays of scheduled messages
//! (timers, entity signals) on a backend that caps delays or counts them in whole units.

use std::time::Duration;

use taskhub_core::{Message, Timestamp};
use taskhub_storage::{OutboundMessage, QueueName, QueueStore, StorageError};

use crate::hub::TaskHub;

/// How long before its time a durable timer's message becomes visible. The instance's session
/// on the worker that dequeues it holds it until `fire_at` (`worker/intake/session.rs`, without a
/// prefetch-buffer slot or a processing slot) and runs the turn then, so the dequeue's path
/// (the wake-up after the creating checkpoint committed, a dequeue waiting behind another
/// batch's fsync under `FULL`, the poller's round) happens before the timer is due instead of
/// after it. Messages that arrive meanwhile are processed as they come, ahead of the timer.
/// The message stays in the store, locked, until the turn's checkpoint consumes it: a crash
/// while it is held redelivers it as any other.
pub const TIMER_LEAD: Duration = Duration::from_millis(50);

/// A durable timer message: delivered [`TIMER_LEAD`] before `fire_at`, or re-sent in chunks
/// when the backend caps the delay. On a backend that counts delays in whole units (Azure:
/// seconds, rounded up so a message is never visible early) the delay is rounded down to
/// whole units as well: the message comes up to one unit and the lead early, and the turn
/// waits the rest (`worker/orchestration`), so the timer fires on time instead of late.
pub(crate) fn timer_delay(queues: &dyn QueueStore, fire_at: Timestamp, now: Timestamp) -> Duration {
    scheduled_delay(
        queues,
        fire_at.saturating_since(now).saturating_sub(TIMER_LEAD),
    )
}

/// How early a timer message may come and still be held for its time rather than sent back:
/// the lead and the backend's delay unit.
pub(crate) fn timer_hold_window(queues: &dyn QueueStore) -> Duration {
    TIMER_LEAD + queues.delay_granularity()
}

/// The delay of a message scheduled for `at` (an entity's scheduled signal, held by the
/// entity's batch for the rest of a unit): capped at the backend's longest delay and rounded
/// down to its unit.
pub(crate) fn signal_delay(queues: &dyn QueueStore, at: Timestamp, now: Timestamp) -> Duration {
    scheduled_delay(queues, at.saturating_since(now))
}

fn scheduled_delay(queues: &dyn QueueStore, delay: Duration) -> Duration {
    whole_units(delay.min(queues.max_delay()), queues.delay_granularity())
}

/// `delay` rounded down to a whole number of `unit`s (unchanged for a zero unit).
pub(crate) fn whole_units(delay: Duration, unit: Duration) -> Duration {
    if unit.is_zero() {
        return delay;
    }
    let n = delay.as_nanos() / unit.as_nanos();
    unit * u32::try_from(n).unwrap_or(u32::MAX)
}

/// The purpose (see [`MessageId::derived`](taskhub_core::MessageId::derived)) of an activity's work item (`kind` `task`) or
/// result (`result`), or of a sub-orchestration's start (`sub`, also the child's execution
/// ID): the task ID, and the attempt after the first. Remote code schedules a retry under
/// the first attempt's task ID, and each attempt's messages must differ from the last's, or
/// the retry would be taken for a re-sent copy.
pub(crate) fn attempt_purpose(kind: &str, task_id: u64, attempt: u32) -> String {
    if attempt <= 1 {
        format!("{kind}:{task_id}")
    } else {
        format!("{kind}:{task_id}#{attempt}")
    }
}

/// Encodes one outbound message.
pub(crate) async fn encode(
    hub: &TaskHub,
    queue: QueueName,
    message: &Message,
    delay: Duration,
) -> Result<OutboundMessage, StorageError> {
    hub.outbound(queue, message, delay).await
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::whole_units;

    #[test]
    fn timer_delays_round_down_to_the_backends_unit() {
        let s = Duration::from_secs(1);
        assert_eq!(whole_units(Duration::from_millis(1_500), s), s);
        assert_eq!(whole_units(Duration::from_millis(999), s), Duration::ZERO);
        assert_eq!(
            whole_units(Duration::from_secs(3), s),
            Duration::from_secs(3)
        );
        assert_eq!(
            whole_units(Duration::from_millis(1_500), Duration::ZERO),
            Duration::from_millis(1_500),
            "an exact backend keeps the delay"
        );
    }
}
