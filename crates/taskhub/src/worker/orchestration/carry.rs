//! Events carried across continue-as-new come first in the next execution.
//!
//! The turn that continues as new records the carried events in its `ContinuedAsNew` and also
//! sends each as a message of its own (`outbox`, ID derived from the execution and
//! `carried:<i>`). Those messages travel apart from the next execution's start, and a queue
//! that is not FIFO (Azure) may deliver an event raised later ahead of them. So the turn that
//! starts the next execution applies the carried events itself, from the previous execution's
//! record, right after the start and before anything else of its batch; the messages, when
//! they come, carry the same IDs and are discarded as duplicates. A batch that comes for the
//! next execution before its start is held by the session for up to [`START_WAIT`], so it is
//! applied after the start in arrival order instead of being re-sent behind later events.

use std::time::Duration;

use taskhub_core::{
    EventKind, ExecutionId, InstanceId, Message, MessageId, OrchestrationSession,
    OrchestrationStatus, Sender,
};

/// How long a session holds a batch that came for the next execution of an instance that
/// continued as new, waiting for that execution's start (already sent by the checkpoint that
/// continued), so the batch is applied after the start and in arrival order. Past it the batch
/// is run as any other: its events are sent again behind the start.
pub(crate) const START_WAIT: Duration = Duration::from_secs(5);

/// The purpose (in the derived message ID) of the `i`-th event carried into the next
/// execution.
pub(crate) fn purpose(i: usize) -> String {
    format!("carried:{i}")
}

/// The ID of the `i`-th event `execution` of `instance` carried into the next execution.
fn carried_id(instance: &InstanceId, execution: &ExecutionId, i: usize) -> MessageId {
    MessageId::derived(instance, execution, &purpose(i))
}

/// The carried events of `previous` as messages, when `start` begins the execution
/// `previous` continued into; empty otherwise (another start, or nothing was carried).
pub(crate) fn carried_messages(
    instance: &InstanceId,
    previous: &OrchestrationSession,
    start: &Message,
) -> Vec<Message> {
    if previous.status() != OrchestrationStatus::ContinuedAsNew {
        return Vec::new();
    }
    let execution = previous.execution_id();
    let EventKind::ExecutionStarted {
        execution_id: next, ..
    } = &start.event
    else {
        return Vec::new();
    };
    if *next != execution.next_generation() {
        return Vec::new();
    }
    previous
        .carried_events()
        .iter()
        .enumerate()
        .map(|(i, e)| Message {
            id: carried_id(instance, &execution, i),
            target: instance.clone(),
            execution_id: None,
            sender: Some(Sender {
                instance_id: instance.clone(),
                execution_id: execution.clone(),
            }),
            episode: previous.episode(),
            enqueued_at: start.enqueued_at,
            target_partition: None,
            traceparent: start.traceparent.clone(),
            order: None,
            event: EventKind::EventRaised {
                name: e.name.clone(),
                input: e.input.clone(),
            },
        })
        .collect()
}

/// The turn's input: the batch's messages with `carried` right after the first start.
pub(crate) fn with_carried(messages: Vec<Message>, carried: Vec<Message>) -> Vec<Message> {
    if carried.is_empty() {
        return messages;
    }
    let at = messages
        .iter()
        .position(|m| matches!(m.event, EventKind::ExecutionStarted { .. }))
        .map_or(0, |p| p.saturating_add(1));
    let mut out = messages;
    let tail = out.split_off(at.min(out.len()));
    out.extend(carried);
    out.extend(tail);
    out
}
