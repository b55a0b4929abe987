//! An entity batch's effects as outbound messages. IDs are derived from the entity and the
//! effect's purpose (which names the message the effect came from), so a batch run again
//! sends messages its receivers recognise as duplicates.

use std::time::Duration;

use taskhub_core::entity::{EntityEffect, ENTITY_REQUEST_EVENT};
use taskhub_core::{
    EntityId, EventKind, ExecutionId, InstanceId, Message, MessageId, Payload, Sender, Timestamp,
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

/// The outbound message of one effect.
pub(super) async fn outbound(
    hub: &TaskHub,
    from: &From<'_>,
    effect: &EntityEffect,
) -> Result<OutboundMessage, StorageError> {
    let From {
        entity,
        home,
        now,
        epoch,
    } = *from;
    let execution = entity_execution();
    let me = entity.instance_id();
    let message = |id: MessageId, target: InstanceId, exec: Option<ExecutionId>, event| Message {
        id,
        target,
        execution_id: exec,
        sender: Some(Sender {
            instance_id: me.clone(),
            execution_id: execution.clone(),
        }),
        episode: 0,
        enqueued_at: now,
        target_partition: None,
        traceparent: None,
        order: None,
        event,
    };
    let (partition, m, delay) = match effect {
        EntityEffect::Respond {
            caller,
            request_id,
            response,
            purpose,
        } => {
            let partition = hub.partition_of(&caller.instance_id).await?;
            let event = EventKind::EventRaised {
                name: request_id.clone(),
                input: payload(response, "entity response")?,
            };
            let m = message(
                MessageId::derived(me, &execution, purpose),
                caller.instance_id.clone(),
                Some(caller.execution_id.clone()),
                event,
            );
            (partition, m, Duration::ZERO)
        }
        EntityEffect::Send {
            target,
            request,
            at,
            order,
            purpose,
        } => {
            let partition = hub.partition_of(target.instance_id()).await?;
            let event = EventKind::EventRaised {
                name: ENTITY_REQUEST_EVENT.to_owned(),
                input: payload(request, "entity request")?,
            };
            let mut m = message(
                MessageId::derived(me, &execution, purpose),
                target.instance_id().clone(),
                None,
                event,
            );
            if let Some(order) = order {
                // Numbered within this incarnation of the entity: its epoch is the sender's
                // "execution" in the receiver's key.
                let epoch = epoch
                    .and_then(|e| ExecutionId::new(e).ok())
                    .unwrap_or_else(|| execution.clone());
                m.sender = Some(Sender {
                    instance_id: me.clone(),
                    execution_id: epoch,
                });
                m.order = Some(*order);
            }
            let delay = at.map_or(Duration::ZERO, |at| {
                outbound::signal_delay(hub.store().as_ref(), at, now)
            });
            (partition, m, delay)
        }
        EntityEffect::Defer {
            message_id,
            sender,
            request,
            at,
        } => {
            let event = EventKind::EventRaised {
                name: ENTITY_REQUEST_EVENT.to_owned(),
                input: payload(request, "entity request")?,
            };
            let mut m = message(message_id.clone(), me.clone(), None, event);
            m.sender = sender.clone().map(|instance_id| Sender {
                instance_id,
                execution_id: execution.clone(),
            });
            (
                home,
                m,
                outbound::signal_delay(hub.store().as_ref(), *at, now),
            )
        }
        EntityEffect::Start {
            instance_id,
            name,
            input,
            purpose,
        } => {
            let partition = hub.partition_of(instance_id).await?;
            let id = MessageId::derived(me, &execution, purpose);
            let child = ExecutionId::new(id.as_str()).unwrap_or_else(|_| ExecutionId::random());
            let mut m = message(
                id,
                instance_id.clone(),
                Some(child.clone()),
                EventKind::ExecutionStarted {
                    name: name.clone(),
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
            (partition, m, Duration::ZERO)
        }
    };
    outbound::encode(hub, QueueName::Control(partition), &m, delay).await
}

fn payload<T: serde::Serialize>(value: &T, what: &str) -> Result<Payload, StorageError> {
    Payload::to_payload(value, what).map_err(|e| StorageError::InvalidArgument(e.to_string()))
}
