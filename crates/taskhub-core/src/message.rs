//! The message envelope that carries an event to an instance through a queue.
//!
//! A [`Message`] names its target instance (and execution), has a unique ID, a [`Sender`], an
//! episode and an enqueue time, and may carry the sender span's W3C `traceparent` (optional:
//! older messages have none and still decode, older readers ignore it, so the format stays
//! version 1).

use serde::{Deserialize, Serialize};

use crate::history::EventKind;
use crate::ids::{ExecutionId, InstanceId, MessageId};
use crate::time::Timestamp;

/// Who sent a message (absent for messages from a client).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sender {
    /// The sending instance.
    pub instance_id: InstanceId,
    /// The sending execution.
    pub execution_id: ExecutionId,
}

/// A message's place among the messages one sender sent to one entity, so the entity applies
/// them in send order and each once, whatever order the queue delivers them in (Azure queues
/// are not FIFO, and a message given back comes again after later ones). `n` grows with every
/// message the sender sends (to any target); `prev` is the `n` of the sender's previous
/// message to the same entity, when it was sent recently (see
/// [`entity::order`](crate::entity::order)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendOrder {
    /// This message's number (1 and up, strictly increasing per sender).
    pub n: u64,
    /// The number of the sender's previous message to the same target, if recent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev: Option<u64>,
}

/// An event addressed to an instance (control queues) or an activity work item (work-item
/// queue, where `event` is `TaskScheduled`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Unique ID; receivers apply a message with a given ID at most once.
    pub id: MessageId,
    /// The instance the event is for.
    pub target: InstanceId,
    /// The execution the event is for; `None` means whichever execution is current.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_id: Option<ExecutionId>,
    /// The sending instance, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<Sender>,
    /// The sender's episode (its count of turns) when it sent the message; 0 from clients.
    #[serde(default)]
    pub episode: u64,
    /// When the message was enqueued, by the sender's clock.
    pub enqueued_at: Timestamp,
    /// The partition of the target instance, when the sender knows it. Activity work items
    /// carry their orchestration's partition here, so the result goes back to the right
    /// control queue even after the partition count changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_partition: Option<u32>,
    /// The W3C trace context (`traceparent`) of the span that sent the message, so the
    /// receiver's span joins the sender's trace. Optional: messages written before it existed
    /// (and messages from clients) have none, and old readers ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// Its place among the sender's messages to the same entity (requests to entities from
    /// orchestrations and entities; `None` elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<SendOrder>,
    /// The event to apply.
    pub event: EventKind,
}

impl Message {
    /// A message from a client (no sender, episode 0) with a random ID.
    #[must_use]
    pub fn from_client(target: InstanceId, event: EventKind, enqueued_at: Timestamp) -> Self {
        Self {
            id: MessageId::random(),
            target,
            execution_id: None,
            sender: None,
            episode: 0,
            enqueued_at,
            target_partition: None,
            traceparent: None,
            order: None,
            event,
        }
    }
}
