//! Which messages of a torn checkpoint's pending outbox a loader re-sends (issue 33, item 8).
//!
//! The loader cannot tell how far the torn checkpoint's writer got: it may have sent every
//! message before it stopped. Re-sending all of them is safe for receivers (they de-duplicate
//! by message ID), but not for activities: a work item sent twice runs twice when the copies
//! reach two workers. So the loader leaves out what it can prove was sent:
//!
//! * a message whose own ID it has seen: delivered to it with the instance's messages while it
//!   watched the outbox (the original is in the queue: given back, never consumed before the
//!   outbox is settled) or applied in the history;
//! * an activity's work item whose result it has seen, by the result's message ID (which
//!   names the attempt): the work item ran, and its result is durable in the control queue or
//!   in the history (a result handed over in process that could not be committed leaves its
//!   work item in the queue, to run again).
//!
//! The loader waits [`Settings::torn_outbox_grace`](crate::Settings::torn_outbox_grace) before
//! it screens, long enough for a claimed original (hidden when its writer stopped) to
//! surface, be picked up by a poller and report. What is left out is counted ([`WorkerStats::outbox_messages_left_out`](crate::WorkerStats)). An original
//! still running past the grace, unseen, is sent again: the at-least-once case the run ledger
//! and receivers' de-duplication handle.

use std::collections::HashSet;

use taskhub_core::{EventKind, ExecutionId, HistoryEvent, InstanceId, Message, MessageId};
use taskhub_storage::QueueName;

use crate::worker::shared::outbound::attempt_purpose;

/// Why a pending message is left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeftOut {
    /// Its original was delivered or applied.
    Original,
    /// It is a work item whose result was delivered or applied.
    Answered,
}

/// The message IDs a loader has seen for an instance: in its history and among the
/// deliveries it holds for it.
#[derive(Debug, Default)]
pub(crate) struct Seen(HashSet<MessageId>);

impl Seen {
    /// The IDs of `history`'s events that came from messages, and of `delivered`.
    pub(crate) fn new<'a>(
        history: &[HistoryEvent],
        delivered: impl IntoIterator<Item = &'a MessageId>,
    ) -> Self {
        let mut ids: HashSet<MessageId> = history
            .iter()
            .filter_map(|e| e.message_id.clone())
            .collect();
        ids.extend(delivered.into_iter().cloned());
        Self(ids)
    }

    /// Whether the pending `message` (for `queue`, from `instance`'s `execution`) is left
    /// out, and why; `None`: re-send it.
    pub(crate) fn judge(
        &self,
        instance: &InstanceId,
        execution: &ExecutionId,
        queue: QueueName,
        message: &Message,
    ) -> Option<LeftOut> {
        if self.0.contains(&message.id) {
            return Some(LeftOut::Original);
        }
        let result = result_id(instance, execution, queue, message)?;
        self.0.contains(&result).then_some(LeftOut::Answered)
    }
}

/// The message ID of the result of a work item (`None` for any other message): derived as the
/// activity dispatcher derives it, from the orchestration's instance and execution, the task
/// and the attempt.
fn result_id(
    instance: &InstanceId,
    execution: &ExecutionId,
    queue: QueueName,
    message: &Message,
) -> Option<MessageId> {
    let EventKind::TaskScheduled {
        task_id, attempt, ..
    } = &message.event
    else {
        return None;
    };
    if queue != QueueName::WorkItems || &message.target != instance {
        return None;
    }
    let execution = message.execution_id.as_ref().unwrap_or(execution);
    Some(MessageId::derived(
        instance,
        execution,
        &attempt_purpose("result", *task_id, *attempt),
    ))
}

#[cfg(test)]
#[path = "outbox_screen_tests.rs"]
mod tests;
