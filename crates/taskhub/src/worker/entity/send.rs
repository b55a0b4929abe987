//! An entity batch's effects as outbound messages. IDs are derived from the entity and the
//! effect's purpose (which names the message the effect came from), so a batch run again
//! sends messages its receivers recognise as duplicates.

use std::time::Duration;

use taskhub_core::entity::{
    Caller, EntityEffect, EntityRequest, EntityResponse, ENTITY_REQUEST_EVENT,
};
use taskhub_core::{
    EntityId, EventKind, ExecutionId, InstanceId, Message, MessageId, Payload, SendOrder, Sender,
    Timestamp,
};
use taskhub_storage::{OutboundMessage, QueueName, StorageError};

use crate::hub::TaskHub;
use crate::worker::entity::entity_execution;
use crate::worker::shared::outbound;

/// The sending entity.
#[derive(Clone, Copy)]
pub(super) struct From<'a> {
    /// The entity.
    pub entity: &'a EntityId,
    /// Its partition.
    pub home: u32,
    /// The batch's time.
    pub now: Timestamp,
    /// Its sender epoch (see `taskhub_core::entity::order`), once it has sent a request.
    pub epoch: Option<&'a str>,
}

/// What every message of one effect's sending needs: the store, the sender, and the
/// sender's identity in envelopes.
struct Sending<'a> {
    hub: &'a TaskHub,
    from: From<'a>,
    me: &'a InstanceId,
    execution: ExecutionId,
}

/// A message, the partition whose control queue it goes to, and its delay.
type Addressed = (u32, Message, Duration);

/// The outbound message of one effect.
pub(super) async fn outbound(
    hub: &TaskHub,
    from: &From<'_>,
    effect: &EntityEffect,
) -> Result<OutboundMessage, StorageError> {
    let sending = Sending {
        hub,
        from: *from,
        me: from.entity.instance_id(),
        execution: entity_execution(),
    };
    let (partition, m, delay) = match effect {
        EntityEffect::Respond {
            caller,
            request_id,
            response,
            purpose,
        } => respond(&sending, caller, request_id, response, purpose).await?,
        EntityEffect::Send {
            target,
            request,
            at,
            order,
            purpose,
        } => send(&sending, target, request, (*at, *order), purpose).await?,
        EntityEffect::Defer {
            message_id,
            sender,
            request,
            at,
        } => defer(&sending, message_id, sender.as_ref(), request, *at)?,
        EntityEffect::Start {
            instance_id,
            name,
            input,
            purpose,
        } => start(&sending, instance_id, name, input, purpose).await?,
    };
    outbound::encode(hub, QueueName::Control(partition), &m, delay).await
}

impl Sending<'_> {
    /// A message from the entity (sender: the entity, its execution the entities' one).
    fn message(
        &self,
        id: MessageId,
        target: InstanceId,
        exec: Option<ExecutionId>,
        event: EventKind,
    ) -> Message {
        Message {
            id,
            target,
            execution_id: exec,
            sender: Some(Sender {
                instance_id: self.me.clone(),
                execution_id: self.execution.clone(),
            }),
            episode: 0,
            enqueued_at: self.from.now,
            target_partition: None,
            traceparent: None,
            order: None,
            event,
        }
    }
}

/// The answer to a caller's request, raised in the calling orchestration.
async fn respond(
    s: &Sending<'_>,
    caller: &Caller,
    request_id: &str,
    response: &EntityResponse,
    purpose: &str,
) -> Result<Addressed, StorageError> {
    let partition = s.hub.partition_of(&caller.instance_id).await?;
    let event = EventKind::EventRaised {
        name: request_id.to_owned(),
        input: payload(response, "entity response")?,
    };
    let m = s.message(
        MessageId::derived(s.me, &s.execution, purpose),
        caller.instance_id.clone(),
        Some(caller.execution_id.clone()),
        event,
    );
    Ok((partition, m, Duration::ZERO))
}

/// A request to another entity (a signal or a call, a lock), at its time and in its order.
async fn send(
    s: &Sending<'_>,
    target: &EntityId,
    request: &EntityRequest,
    (at, order): (Option<Timestamp>, Option<SendOrder>),
    purpose: &str,
) -> Result<Addressed, StorageError> {
    let partition = s.hub.partition_of(target.instance_id()).await?;
    let event = EventKind::EventRaised {
        name: ENTITY_REQUEST_EVENT.to_owned(),
        input: payload(request, "entity request")?,
    };
    let mut m = s.message(
        MessageId::derived(s.me, &s.execution, purpose),
        target.instance_id().clone(),
        None,
        event,
    );
    if let Some(order) = order {
        // Numbered within this incarnation of the entity: its epoch is the sender's
        // "execution" in the receiver's key.
        let epoch = s
            .from
            .epoch
            .and_then(|e| ExecutionId::new(e).ok())
            .unwrap_or_else(|| s.execution.clone());
        m.sender = Some(Sender {
            instance_id: s.me.clone(),
            execution_id: epoch,
        });
        m.order = Some(order);
    }
    let delay = at.map_or(Duration::ZERO, |at| {
        outbound::signal_delay(s.hub.store().as_ref(), at, s.from.now)
    });
    Ok((partition, m, delay))
}

/// A request the entity puts back to itself until `at` (a scheduled signal not yet due).
fn defer(
    s: &Sending<'_>,
    message_id: &MessageId,
    sender: Option<&InstanceId>,
    request: &EntityRequest,
    at: Timestamp,
) -> Result<Addressed, StorageError> {
    let event = EventKind::EventRaised {
        name: ENTITY_REQUEST_EVENT.to_owned(),
        input: payload(request, "entity request")?,
    };
    let mut m = s.message(message_id.clone(), s.me.clone(), None, event);
    m.sender = sender.cloned().map(|instance_id| Sender {
        instance_id,
        execution_id: s.execution.clone(),
    });
    let delay = outbound::signal_delay(s.hub.store().as_ref(), at, s.from.now);
    Ok((s.from.home, m, delay))
}

/// An orchestration the entity starts.
async fn start(
    s: &Sending<'_>,
    instance_id: &InstanceId,
    name: &str,
    input: &Payload,
    purpose: &str,
) -> Result<Addressed, StorageError> {
    let partition = s.hub.partition_of(instance_id).await?;
    let id = MessageId::derived(s.me, &s.execution, purpose);
    let child = ExecutionId::new(id.as_str()).unwrap_or_else(|_| ExecutionId::random());
    let mut m = s.message(
        id,
        instance_id.clone(),
        Some(child.clone()),
        EventKind::ExecutionStarted {
            name: name.to_owned(),
            version: None,
            input: input.clone(),
            execution_id: child,
            parent: None,
            scheduled_start: None,
            applied_event_ids: Vec::new(),
            tags: Default::default(),
        },
    );
    m.target_partition = Some(partition);
    Ok((partition, m, Duration::ZERO))
}

fn payload<T: serde::Serialize>(value: &T, what: &str) -> Result<Payload, StorageError> {
    Payload::to_payload(value, what).map_err(|e| StorageError::InvalidArgument(e.to_string()))
}
