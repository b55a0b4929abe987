//! The locks a remote execution still holds when it ends, released by the runtime.
//!
//! A Rust orchestration releases its critical section (or gives up a lock request not granted
//! yet) when its code is dropped: the guards send a `Release` to every entity of the lock set
//! (`orchestration/entities.rs`). A remote execution has no guards, and the runtime ends it
//! without asking its code when a client terminates it or its decisions break a rule; an SDK
//! may also complete or continue as new inside a critical section. So when a remote execution
//! ends, the runtime reads from its history which lock requests it sent (`$entity` events
//! carrying [`EntityRequest::Lock`]) and which entities of each lock set it has not sent a
//! [`EntityRequest::Release`] to, and sends those releases itself, recorded before the end
//! event, exactly as a Rust critical section's drop sends them (same event, same request).

use crate::engine::output::Action;
use crate::engine::session::OrchestrationSession;
use crate::engine::turn::TurnOut;
use crate::entity::{EntityId, EntityRequest, ENTITY_REQUEST_EVENT};
use crate::history::{EventKind, HistoryEvent};
use crate::ids::InstanceId;
use crate::orchestration::state::lock;
use crate::payload::Payload;

/// The lock requests in `sent` (in order) with the entities of their lock set that no
/// release was sent to yet, in lock order.
fn open_sections<'a>(
    sent: impl Iterator<Item = (&'a InstanceId, &'a Payload)>,
) -> Vec<(String, Vec<EntityId>)> {
    let mut open: Vec<(String, Vec<EntityId>)> = Vec::new();
    for (target, input) in sent {
        match input.parse::<EntityRequest>("entity request") {
            Ok(EntityRequest::Lock { id, lockset, .. }) if !open.iter().any(|(o, _)| *o == id) => {
                open.push((id, lockset));
            }
            Ok(EntityRequest::Release { id, .. }) => {
                if let Some((_, waiting)) = open.iter_mut().find(|(o, _)| *o == id) {
                    waiting.retain(|e| e.instance_id() != target);
                }
            }
            _ => {}
        }
    }
    open.retain(|(_, waiting)| !waiting.is_empty());
    open
}

impl OrchestrationSession {
    /// Queues a release for every entity a remote execution locked (or asked to lock) and did
    /// not release, considering its history, this turn's events in `out` and the sends not
    /// recorded yet. Does nothing for a Rust execution (its guards release).
    pub(crate) fn release_remote_locks(&mut self, out: &TurnOut) {
        let Some(remote) = self.remote.as_ref() else {
            return;
        };
        let owner = self.instance_id();
        let mut st = lock(&self.state);
        let recorded = remote.history.iter().chain(&out.events).filter_map(sent);
        let pending = st.emitted.iter().filter_map(|e| match e {
            Action::SendEvent {
                instance_id,
                name,
                input,
                ..
            } if name == ENTITY_REQUEST_EVENT => Some((instance_id, input)),
            _ => None,
        });
        let open = open_sections(recorded.chain(pending));
        for (id, entities) in open {
            for e in entities {
                let request = EntityRequest::Release {
                    id: id.clone(),
                    owner: owner.clone(),
                };
                // A release request always serializes.
                let Ok(input) = Payload::to_payload(&request, "entity release") else {
                    continue;
                };
                let target = e.instance_id().clone();
                let task_id = st.next_task_id;
                let after = st.previous_send(&target, task_id);
                st.emit(
                    |task_id| Action::SendEvent {
                        task_id,
                        instance_id: target,
                        name: ENTITY_REQUEST_EVENT.to_owned(),
                        input,
                        after,
                    },
                    None,
                );
            }
        }
    }
}

/// An `$entity` event the execution sent: its target and request.
fn sent(ev: &HistoryEvent) -> Option<(&InstanceId, &Payload)> {
    match &ev.event {
        EventKind::EventSent {
            instance_id,
            name,
            input,
            ..
        } if name == ENTITY_REQUEST_EVENT => Some((instance_id, input)),
        _ => None,
    }
}
