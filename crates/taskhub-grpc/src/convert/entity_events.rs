//! Entities in an SDK orchestration's history. Taskhub records an orchestration's entity
//! messages as it does for a Rust orchestration (see `taskhub_core::orchestration::entities`):
//! a request is an `EventSent` named `$entity` carrying an [`EntityRequest`]; the answer to a
//! call or a lock request is an `EventRaised` named by the request's ID carrying an
//! [`EntityResponse`]. An SDK replays the protocol's entity events instead, so they go out
//! as those:
//!
//! | Taskhub event                                     | protocol event             |
//! |---------------------------------------------------|----------------------------|
//! | `EventSent $entity`, operation with a caller      | `entityOperationCalled`    |
//! | `EventSent $entity`, operation without caller     | `entityOperationSignaled`  |
//! | `EventSent $entity`, lock                         | `entityLockRequested`      |
//! | `EventSent $entity`, release                      | `entityUnlockSent`         |
//! | `EventRaised <call's ID>`, ok / failed            | `entityOperationCompleted` / `entityOperationFailed` |
//! | `EventRaised <lock request's ID>`, locked         | `entityLockGranted`        |
//!
//! An `EventRaised` is an entity's answer only if its name is the ID of a call or lock request
//! this history sent ([`EntityRequests`]): as above, or as a .NET orchestration sends one in DT
//! Core's shape (an `EventSent` named `op` to `@name@key`, `taskhub_core::entity::dt_core`),
//! which itself goes out as it is; any other event goes out as it is.

use std::collections::HashSet;

use taskhub::{EventKind, HistoryEvent, InstanceId};
use taskhub_core::entity::{dt_core, EntityRequest, EntityResponse, ENTITY_REQUEST_EVENT};

use super::{event_to_proto, failure_to_proto, payload_to_proto, timestamp_to_proto};
use crate::proto::{self, history_event::EventType as E};

/// The IDs of the calls and lock requests a history sent: the names its entity answers
/// arrive under.
#[derive(Debug, Default)]
pub struct EntityRequests {
    ids: HashSet<String>,
}

impl EntityRequests {
    /// The requests sent in `events`.
    pub fn of<'a>(events: impl IntoIterator<Item = &'a HistoryEvent>) -> Self {
        let mut ids = HashSet::new();
        for e in events {
            if let Some(
                EntityRequest::Operation {
                    id,
                    caller: Some(_),
                    ..
                }
                | EntityRequest::Lock { id, .. },
            ) = sent_request(&e.event)
            {
                ids.insert(id);
            } else if let EventKind::EventSent { name, input, .. } = &e.event {
                // A .NET orchestration's call or lock request in DT Core's shape: its event
                // stays as sent (that worker replays it so), its answer goes out as the
                // protocol's, which that worker reads as DT Core's response event.
                if let Some(id) = dt_core::sent_request_id(name, input) {
                    ids.insert(id);
                }
            }
        }
        Self { ids }
    }
}

/// The entity request an `EventSent` carries, if it is one.
fn sent_request(k: &EventKind) -> Option<EntityRequest> {
    match k {
        EventKind::EventSent { name, input, .. } if name == ENTITY_REQUEST_EVENT => {
            input.parse::<EntityRequest>("entity request").ok()
        }
        _ => None,
    }
}

/// A Taskhub history event of `instance` as the protocol's, entity messages as the protocol's
/// entity events (see the module documentation).
#[must_use]
pub fn event_to_proto_with_entities(
    e: &HistoryEvent,
    instance: &InstanceId,
    requests: &EntityRequests,
) -> proto::HistoryEvent {
    let mut out = event_to_proto(e, instance);
    if let Some(kind) = entity_kind(&e.event, requests) {
        out.event_type = Some(kind);
    }
    out
}

fn entity_kind(k: &EventKind, requests: &EntityRequests) -> Option<E> {
    match k {
        EventKind::EventSent { instance_id, .. } => {
            let target = Some(instance_id.to_string());
            Some(match sent_request(k)? {
                EntityRequest::Operation {
                    id,
                    op,
                    input,
                    caller: Some(_),
                    at,
                } => E::EntityOperationCalled(proto::EntityOperationCalledEvent {
                    request_id: id,
                    operation: op,
                    scheduled_time: at.map(timestamp_to_proto),
                    input: payload_to_proto(&input),
                    parent_instance_id: None,
                    parent_execution_id: None,
                    target_instance_id: target,
                }),
                EntityRequest::Operation {
                    id, op, input, at, ..
                } => E::EntityOperationSignaled(proto::EntityOperationSignaledEvent {
                    request_id: id,
                    operation: op,
                    scheduled_time: at.map(timestamp_to_proto),
                    input: payload_to_proto(&input),
                    target_instance_id: target,
                }),
                EntityRequest::Lock {
                    id,
                    lockset,
                    position,
                    ..
                } => E::EntityLockRequested(proto::EntityLockRequestedEvent {
                    critical_section_id: id,
                    lock_set: lockset.iter().map(ToString::to_string).collect(),
                    position: i32::try_from(position).unwrap_or(i32::MAX),
                    parent_instance_id: None,
                }),
                EntityRequest::Release { id, .. } => {
                    E::EntityUnlockSent(proto::EntityUnlockSentEvent {
                        critical_section_id: id,
                        parent_instance_id: None,
                        target_instance_id: target,
                    })
                }
                EntityRequest::DeleteState | EntityRequest::Wake => return None,
            })
        }
        EventKind::EventRaised { name, input } if requests.ids.contains(name) => Some(match input
            .parse::<EntityResponse>("entity response")
            .ok()?
        {
            EntityResponse::Ok { output } => {
                E::EntityOperationCompleted(proto::EntityOperationCompletedEvent {
                    request_id: name.clone(),
                    output: payload_to_proto(&output),
                })
            }
            EntityResponse::Failed { failure } => {
                E::EntityOperationFailed(proto::EntityOperationFailedEvent {
                    request_id: name.clone(),
                    failure_details: Some(failure_to_proto(&failure)),
                })
            }
            EntityResponse::Locked => E::EntityLockGranted(proto::EntityLockGrantedEvent {
                critical_section_id: name.clone(),
            }),
        }),
        _ => None,
    }
}

#[cfg(test)]
#[path = "entity_events_tests.rs"]
mod tests;
