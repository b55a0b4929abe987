//! Entities from orchestrations: calls, signals and critical sections.
//!
//! A call or a signal is an event the orchestration sends to the entity (`EventSent`, so its
//! history records it and replay matches it); a call's result comes back as an event named by
//! the request ID, which the call waits for like any event. Request IDs come from
//! [`new_guid`](OrchestrationContext::new_guid), so replay derives the same ones.
//!
//! [`lock_entities`](OrchestrationContext::lock_entities) sorts the lock set; the request visits
//! each entity in order and the last one answers. A lock request dropped before the grant
//! releases the whole set. A [`CriticalSection`] is released by `release`, by drop, by the
//! orchestration returning or continuing as new, or by a terminate; a call outside the lock set
//! fails with `EntityNotLocked`.

use std::future::Future;
use std::time::SystemTime;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::entity::{Caller, EntityId, EntityRequest, EntityResponse, ENTITY_REQUEST_EVENT};
use crate::history::FailureDetails;
use crate::orchestration::context::OrchestrationContext;
use crate::orchestration::error::TaskError;
use crate::orchestration::state::lock;
use crate::payload::Payload;
use crate::time::Timestamp;

impl OrchestrationContext {
    /// Signals an entity: the operation runs there, and nothing waits for it.
    ///
    /// # Errors
    /// A payload error if `input` cannot be serialized; nothing is sent then.
    pub fn signal_entity<I: Serialize + ?Sized>(
        &self,
        entity: &EntityId,
        op: &str,
        input: &I,
    ) -> Result<(), TaskError> {
        self.send_operation(entity, op, input, None, None)
            .map(|_| ())
    }

    /// Signals an entity at a later time: the operation runs no earlier than `at`.
    ///
    /// # Errors
    /// As [`signal_entity`](Self::signal_entity).
    pub fn signal_entity_at<I: Serialize + ?Sized>(
        &self,
        entity: &EntityId,
        op: &str,
        input: &I,
        at: SystemTime,
    ) -> Result<(), TaskError> {
        self.send_operation(
            entity,
            op,
            input,
            None,
            Some(Timestamp::from_system_time(at)),
        )
        .map(|_| ())
    }

    /// Calls an entity's operation and waits for its output. An operation that fails gives
    /// [`TaskError::Failed`] (kind `entity operation`, name `@name@key.op`) with the entity's
    /// failure; its state change was rolled back.
    ///
    /// Inside a critical section only the locked entities may be called (another call could
    /// deadlock): a call to any other fails at once with error type `EntityNotLocked`.
    pub fn call_entity<I: Serialize + ?Sized, O: DeserializeOwned>(
        &self,
        entity: &EntityId,
        op: &str,
        input: &I,
    ) -> impl Future<Output = Result<O, TaskError>> + Send + 'static {
        let name = format!("{entity}.{op}");
        let not_locked = lock(self.shared_state())
            .held_locks
            .as_ref()
            .is_some_and(|(_, held)| !held.contains(entity));
        let sent = if not_locked {
            Err(failed(
                &name,
                "EntityNotLocked",
                format!("{entity} is not locked by this critical section; only locked entities can be called inside it"),
            ))
        } else {
            let caller = Caller {
                instance_id: self.instance_id(),
                execution_id: self.execution_id(),
            };
            self.send_operation(entity, op, input, Some(caller), None)
                .map(|id| self.wait_for_event::<EntityResponse>(&id))
        };
        async move {
            match sent?.await? {
                EntityResponse::Ok { output } => output
                    .parse::<O>(&format!("output of {name}"))
                    .map_err(TaskError::Payload),
                EntityResponse::Failed { failure } => Err(TaskError::Failed {
                    kind: "entity operation",
                    name,
                    failure,
                }),
                EntityResponse::Locked => Err(failed(
                    &name,
                    "UnexpectedResponse",
                    "the entity answered a call with a lock grant".to_owned(),
                )),
            }
        }
    }

    /// Enters a critical section: locks `entities` (in one global order, by ID, so two
    /// orchestrations locking overlapping sets never deadlock) and resolves once all are
    /// locked. While the returned [`CriticalSection`] lives, the entities run only this
    /// orchestration's operations (others wait); it is released by
    /// [`CriticalSection::release`], by dropping it, or when the orchestration returns.
    ///
    /// # Errors
    /// `EmptyLockSet` for no entities, `NestedCriticalSection` if this orchestration already
    /// holds a critical section.
    pub fn lock_entities(
        &self,
        entities: &[EntityId],
    ) -> impl Future<Output = Result<CriticalSection, TaskError>> + Send + 'static {
        let mut lockset: Vec<EntityId> = entities.to_vec();
        lockset.sort();
        lockset.dedup();
        let nested = lock(self.shared_state()).held_locks.is_some();
        let ctx = self.clone();
        let sent = match lockset.first() {
            None => Err(failed(
                "lock",
                "EmptyLockSet",
                "a critical section needs at least one entity".to_owned(),
            )),
            Some(_) if nested => Err(failed(
                "lock",
                "NestedCriticalSection",
                "this orchestration already holds a critical section".to_owned(),
            )),
            Some(first) => {
                let id = self.new_guid().to_string();
                let request = EntityRequest::Lock {
                    id: id.clone(),
                    owner: Caller {
                        instance_id: self.instance_id(),
                        execution_id: self.execution_id(),
                    },
                    lockset: lockset.clone(),
                    position: 0,
                };
                self.raise_event(first.instance_id(), ENTITY_REQUEST_EVENT, &request)
                    .map(|()| {
                        // From the request on, until the grant arrives, dropping this future (a
                        // timer won a race, the code returned, the execution ended — polled or
                        // not) gives up the request: see `PendingLock`.
                        let pending = PendingLock {
                            ctx: self.clone(),
                            id: id.clone(),
                            entities: lockset.clone(),
                            granted: false,
                        };
                        (
                            id.clone(),
                            self.wait_for_event::<EntityResponse>(&id),
                            pending,
                        )
                    })
            }
        };
        async move {
            let (id, wait, mut pending) = sent?;
            let response = wait.await?;
            pending.granted = matches!(response, EntityResponse::Locked);
            match response {
                EntityResponse::Locked => {
                    lock(ctx.shared_state()).held_locks = Some((id.clone(), lockset.clone()));
                    Ok(CriticalSection {
                        ctx,
                        id,
                        entities: lockset,
                        released: false,
                    })
                }
                other => Err(failed(
                    "lock",
                    "UnexpectedResponse",
                    format!("a lock request was answered with {other:?}"),
                )),
            }
        }
    }

    /// True while this orchestration holds a critical section.
    #[must_use]
    pub fn is_inside_critical_section(&self) -> bool {
        lock(self.shared_state()).held_locks.is_some()
    }

    /// Sends an operation request; returns its request ID.
    fn send_operation<I: Serialize + ?Sized>(
        &self,
        entity: &EntityId,
        op: &str,
        input: &I,
        caller: Option<Caller>,
        at: Option<Timestamp>,
    ) -> Result<String, TaskError> {
        let input = Payload::to_payload(input, &format!("input of {entity}.{op}"))?;
        let id = self.new_guid().to_string();
        let request = EntityRequest::Operation {
            id: id.clone(),
            op: op.to_owned(),
            input,
            caller,
            at,
        };
        self.raise_event(entity.instance_id(), ENTITY_REQUEST_EVENT, &request)?;
        Ok(id)
    }
}

/// A lock request not granted yet. Dropped before its grant, it sends a release to every
/// entity of the lock set: one that granted it is unlocked, one that did not yet remembers the
/// release and ignores the request when it comes (see `run_batch`), so no entity stays locked
/// for a request nobody waits for.
struct PendingLock {
    ctx: OrchestrationContext,
    id: String,
    entities: Vec<EntityId>,
    granted: bool,
}

impl Drop for PendingLock {
    fn drop(&mut self) {
        if self.granted {
            return;
        }
        send_releases(&self.ctx, &self.id, &self.entities);
    }
}

/// Sends a release of lock request `id` to each entity.
fn send_releases(ctx: &OrchestrationContext, id: &str, entities: &[EntityId]) {
    let owner = ctx.instance_id();
    for e in entities {
        let request = EntityRequest::Release {
            id: id.to_owned(),
            owner: owner.clone(),
        };
        // A release request always serializes.
        let _ = ctx.raise_event(e.instance_id(), ENTITY_REQUEST_EVENT, &request);
    }
}

fn failed(name: &str, error_type: &str, message: String) -> TaskError {
    let mut failure = FailureDetails::new(error_type, message);
    failure.non_retryable = true;
    TaskError::Failed {
        kind: "entity operation",
        name: name.to_owned(),
        failure,
    }
}

/// A critical section: the locks an orchestration holds on a set of entities (see
/// [`OrchestrationContext::lock_entities`]). Released by [`release`](Self::release) or when
/// dropped (at the latest when the orchestration returns).
#[must_use = "a critical section is released when dropped"]
pub struct CriticalSection {
    ctx: OrchestrationContext,
    id: String,
    entities: Vec<EntityId>,
    released: bool,
}

impl std::fmt::Debug for CriticalSection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CriticalSection")
            .field("id", &self.id)
            .field("entities", &self.entities)
            .finish_non_exhaustive()
    }
}

impl CriticalSection {
    /// The locked entities, in lock order.
    #[must_use]
    pub fn entities(&self) -> &[EntityId] {
        &self.entities
    }

    /// Releases the locks: each entity then runs the requests that waited for it.
    pub fn release(mut self) {
        self.release_now();
    }

    fn release_now(&mut self) {
        if self.released {
            return;
        }
        self.released = true;
        lock(self.ctx.shared_state()).held_locks = None;
        send_releases(&self.ctx, &self.id, &self.entities);
    }
}

impl Drop for CriticalSection {
    fn drop(&mut self) {
        self.release_now();
    }
}
