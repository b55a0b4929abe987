//! An SDK orchestration's `sendEntityMessage` actions as the runtime's entity messages, in
//! one place: each becomes a [`Decision::SendEvent`] of an [`EntityRequest`] to the entity
//! (an event named `$entity`), exactly what a Rust orchestration's call, signal, lock or
//! release sends, so the runtime numbers them in send order, the entity de-duplicates them,
//! and its answer comes back as the event the SDK's history shows as
//! `entityOperationCompleted`/`Failed` or `entityLockGranted` (`convert/entity_events.rs`).
//!
//! The caller of a call and the owner of a lock are always this execution (what the SDK sends
//! as `parentInstanceId` is not trusted); a lock set is sorted and de-duplicated (the global
//! lock order of every critical section) and goes to its first entity. Every entity ID must be
//! `@name@key`, request IDs and operation names must be there: otherwise the orchestration
//! fails (`InvalidOrchestratorAction`) naming the field.

use taskhub::executor::Decision;
use taskhub::{ExecutionId, InstanceId, Payload};
use taskhub_core::entity::{Caller, EntityId, EntityRequest, ENTITY_REQUEST_EVENT};

use crate::convert::{optional_timestamp_from_proto, payload_from_proto, ConvertError};
use crate::proto::{self, send_entity_message_action::EntityMessageType as M};

fn field(name: &'static str, reason: impl Into<String>) -> ConvertError {
    ConvertError::field(name, reason)
}

fn entity(id: Option<&str>, f: &'static str) -> Result<EntityId, ConvertError> {
    let id = id
        .filter(|s| !s.is_empty())
        .ok_or_else(|| field(f, "missing"))?;
    EntityId::parse(id).map_err(|e| field(f, e.to_string()))
}

fn required(value: &str, f: &'static str) -> Result<String, ConvertError> {
    if value.is_empty() {
        Err(field(f, "missing"))
    } else {
        Ok(value.to_owned())
    }
}

/// The decision of `sendEntityMessage` action `task_id` of `instance`'s execution `execution`.
pub(super) fn entity_message(
    instance: &InstanceId,
    execution: &ExecutionId,
    task_id: u64,
    m: &proto::SendEntityMessageAction,
) -> Result<Decision, ConvertError> {
    let me = || Caller {
        instance_id: instance.clone(),
        execution_id: execution.clone(),
    };
    let (target, request) = match &m.entity_message_type {
        None => return Err(field("entityMessageType", "missing")),
        Some(M::EntityOperationSignaled(s)) => (
            entity(
                s.target_instance_id.as_deref(),
                "entityOperationSignaled.targetInstanceId",
            )?,
            EntityRequest::Operation {
                id: required(&s.request_id, "entityOperationSignaled.requestId")?,
                op: required(&s.operation, "entityOperationSignaled.operation")?,
                input: payload_from_proto(s.input.as_deref(), "entityOperationSignaled.input")?,
                caller: None,
                at: optional_timestamp_from_proto(
                    s.scheduled_time.as_ref(),
                    "entityOperationSignaled.scheduledTime",
                )?,
            },
        ),
        Some(M::EntityOperationCalled(c)) => (
            entity(
                c.target_instance_id.as_deref(),
                "entityOperationCalled.targetInstanceId",
            )?,
            EntityRequest::Operation {
                id: required(&c.request_id, "entityOperationCalled.requestId")?,
                op: required(&c.operation, "entityOperationCalled.operation")?,
                input: payload_from_proto(c.input.as_deref(), "entityOperationCalled.input")?,
                caller: Some(me()),
                at: optional_timestamp_from_proto(
                    c.scheduled_time.as_ref(),
                    "entityOperationCalled.scheduledTime",
                )?,
            },
        ),
        Some(M::EntityLockRequested(l)) => {
            let mut lockset = l
                .lock_set
                .iter()
                .map(|id| entity(Some(id), "entityLockRequested.lockSet"))
                .collect::<Result<Vec<_>, _>>()?;
            lockset.sort();
            lockset.dedup();
            let first = lockset
                .first()
                .cloned()
                .ok_or_else(|| field("entityLockRequested.lockSet", "empty"))?;
            (
                first,
                EntityRequest::Lock {
                    id: required(
                        &l.critical_section_id,
                        "entityLockRequested.criticalSectionId",
                    )?,
                    owner: me(),
                    lockset,
                    position: 0,
                },
            )
        }
        Some(M::EntityUnlockSent(u)) => (
            entity(
                u.target_instance_id.as_deref(),
                "entityUnlockSent.targetInstanceId",
            )?,
            EntityRequest::Release {
                id: required(&u.critical_section_id, "entityUnlockSent.criticalSectionId")?,
                owner: instance.clone(),
            },
        ),
    };
    let input = Payload::to_payload(&request, "entity request")
        .map_err(|e| field("entityMessageType", e.to_string()))?;
    Ok(Decision::SendEvent {
        task_id,
        instance_id: target.instance_id().clone(),
        name: ENTITY_REQUEST_EVENT.to_owned(),
        input,
    })
}
