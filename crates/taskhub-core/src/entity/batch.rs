//! Running one batch of an entity's messages, purely: state + record + messages in, new state
//! + record + effects out. The runtime commits the result as one checkpoint.
//!
//! Operations run one at a time, in message order. A failed (or panicking) operation leaves
//! the state as it was and takes none of its actions. While a critical section holds the
//! entity, only its owner's requests run; the others wait in the record's queue, in order,
//! until the owner releases it.
//!
//! [`run_batch`] runs the registry's functions; [`run_batch_with`] runs the same batch with any
//! [`OperationRunner`] (a remote entity's batch records, then replays, the executor's answers).

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::entity::context::{EntityAction, EntityContext, OperationRequest};
use crate::entity::id::EntityId;
use crate::entity::order::{EarlyMessage, Verdict};
use crate::entity::protocol::{Caller, EntityRequest, EntityResponse};
use crate::entity::record::{EntityRecord, LockHolder, QueuedRequest};
use crate::history::FailureDetails;
use crate::ids::{InstanceId, MessageId};
use crate::message::SendOrder;
use crate::payload::Payload;
use crate::registry::{not_registered, Registry};
use crate::time::Timestamp;

/// One message of a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchMessage {
    /// The message ID (de-duplication).
    pub message_id: MessageId,
    /// The sending instance, if any.
    pub sender: Option<InstanceId>,
    /// The request it carries.
    pub request: EntityRequest,
    /// Its sender's key and its place among the sender's messages, for a request from an
    /// orchestration or an entity (see [`order`](crate::entity::order)).
    pub order: Option<(String, SendOrder)>,
}

impl From<EarlyMessage> for BatchMessage {
    fn from(e: EarlyMessage) -> Self {
        Self {
            message_id: e.message_id,
            sender: e.sender,
            request: e.request,
            order: Some((e.key, e.order)),
        }
    }
}

/// Something the batch sends once it commits. `purpose` is unique per effect and the same
/// when the batch is re-run: the runtime derives the message ID from it.
#[derive(Debug, Clone, PartialEq)]
pub enum EntityEffect {
    /// Answer a caller (a call's result, or "locked").
    Respond {
        /// The waiting orchestration.
        caller: Caller,
        /// The event name it waits for.
        request_id: String,
        /// The answer.
        response: EntityResponse,
        /// Derives the message ID.
        purpose: String,
    },
    /// A request to an entity (a signal, or a lock request passed on).
    Send {
        /// The target.
        target: EntityId,
        /// The request.
        request: EntityRequest,
        /// Deliver no earlier than this.
        at: Option<Timestamp>,
        /// Its place among this entity's messages (none for a scheduled one).
        order: Option<SendOrder>,
        /// Derives the message ID.
        purpose: String,
    },
    /// A scheduled request that came before its time: sent again to this entity, same ID.
    Defer {
        /// The message ID (kept, so the copy is applied once).
        message_id: MessageId,
        /// The sender.
        sender: Option<InstanceId>,
        /// The request.
        request: EntityRequest,
        /// When it is due.
        at: Timestamp,
    },
    /// Start an orchestration.
    Start {
        /// Its instance ID.
        instance_id: InstanceId,
        /// The orchestration name.
        name: String,
        /// Its input.
        input: Payload,
        /// Derives the message ID.
        purpose: String,
    },
}

impl EntityEffect {
    /// The request ID and the answer of a [`Respond`](Self::Respond) effect; `None` for
    /// every other effect.
    #[must_use]
    pub fn response(&self) -> Option<(&str, &EntityResponse)> {
        match self {
            Self::Respond {
                request_id,
                response,
                ..
            } => Some((request_id, response)),
            _ => None,
        }
    }
}

/// What a batch did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchOutcome {
    /// What to send.
    pub effects: Vec<EntityEffect>,
    /// Operations run (failed ones included).
    pub operations: u64,
    /// Operations that failed.
    pub failed: u64,
    /// Messages skipped as already applied.
    pub duplicates: u64,
    /// Messages kept in the record until their sender's earlier message is applied.
    pub early: u64,
    /// Messages applied (run or queued behind a critical section): the newest this many IDs
    /// of the record's `recent` are this batch's.
    pub applied: usize,
}

/// What runs a batch's operations: the [`Registry`]'s entity functions, or (for an entity whose
/// code runs elsewhere) a runner that records the operations or replays a remote worker's
/// results (see the runtime's `worker/entity/remote.rs`).
pub trait OperationRunner {
    /// Runs one operation in `ctx` (its state is the entity's before the operation; on
    /// success the context's state and actions are taken, on failure neither). `request_id` is
    /// the request's ID (a call's caller waits for it).
    fn run(&mut self, request_id: &str, ctx: &mut EntityContext)
        -> Result<Payload, FailureDetails>;

    /// The batch deleted the entity's state between operations (a client's delete).
    fn state_deleted(&mut self) {}
}

/// The built-in runner: the registry's entity functions (a panic fails the operation).
struct Registered<'a>(&'a Registry);

impl OperationRunner for Registered<'_> {
    fn run(&mut self, _: &str, ctx: &mut EntityContext) -> Result<Payload, FailureDetails> {
        let name = ctx.entity_id().name().to_owned();
        let op = ctx.operation_name().to_owned();
        match self.0.entity_function(&name) {
            Some(f) => catch_unwind(AssertUnwindSafe(|| f(ctx))).unwrap_or_else(|panic| {
                let text = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".to_owned());
                Err(FailureDetails::new(
                    "Panic",
                    format!("operation '{op}' panicked: {text}"),
                ))
            }),
            None => Err(not_registered(
                "EntityNotFound",
                &format!("entity '{name}'"),
                &self.0.entity_names(),
            )),
        }
    }
}

/// Runs `messages` against `state` and `record` (both updated in place) with the registry's
/// entity functions.
pub fn run_batch(
    registry: &Registry,
    entity: &EntityId,
    now: Timestamp,
    state: &mut Option<Payload>,
    record: &mut EntityRecord,
    messages: Vec<BatchMessage>,
) -> BatchOutcome {
    run_batch_with(
        &mut Registered(registry),
        entity,
        now,
        state,
        record,
        messages,
    )
}

/// Runs `messages` against `state` and `record` (both updated in place), each operation by
/// `runner`. Everything else is the same as [`run_batch`]: de-duplication, send order, locks
/// and their queue, scheduled signals, responses.
pub fn run_batch_with(
    runner: &mut dyn OperationRunner,
    entity: &EntityId,
    now: Timestamp,
    state: &mut Option<Payload>,
    record: &mut EntityRecord,
    messages: Vec<BatchMessage>,
) -> BatchOutcome {
    let mut run = Run {
        runner,
        entity,
        now,
        state,
        record,
        out: BatchOutcome::default(),
    };
    let known: HashSet<MessageId> = run
        .record
        .recent
        .iter()
        .chain(run.record.suspect.iter().map(|(id, _)| id))
        .cloned()
        .collect();
    let mut applied = Vec::with_capacity(messages.len());
    // Messages whose predecessor did not come within the reorder window run first.
    for e in run.record.inbox.take_overdue(now) {
        run.deliver(e.into(), &mut applied);
    }
    let mut in_batch = HashSet::new();
    for m in messages {
        if known.contains(&m.message_id) || !in_batch.insert(m.message_id.clone()) {
            run.out.duplicates += 1;
            continue;
        }
        if let Some((key, order)) = &m.order {
            match run.record.inbox.verdict(key, &m.message_id, *order) {
                Verdict::Apply => {}
                Verdict::Duplicate => {
                    run.out.duplicates += 1;
                    continue;
                }
                Verdict::Wait => {
                    run.out.early += 1;
                    let (key, order) = (key.clone(), *order);
                    run.record.inbox.early.push(EarlyMessage {
                        message_id: m.message_id,
                        sender: m.sender,
                        key,
                        order,
                        request: m.request,
                        since: now,
                    });
                    continue;
                }
            }
        }
        run.deliver(m, &mut applied);
    }
    run.record.inbox.prune(now);
    run.record.prune_suspects(now);
    run.record.outgoing.prune(now);
    run.wake_for_overdue();
    run.out.applied = applied.len();
    run.record.remember(applied);
    run.out
}

struct Run<'a> {
    runner: &'a mut dyn OperationRunner,
    entity: &'a EntityId,
    now: Timestamp,
    state: &'a mut Option<Payload>,
    record: &'a mut EntityRecord,
    out: BatchOutcome,
}

impl Run<'_> {
    /// Applies a message (ordered ones after their verdict), then the waiting messages its
    /// application made ready, in order.
    fn deliver(&mut self, first: BatchMessage, applied: &mut Vec<MessageId>) {
        let mut next = vec![first];
        while let Some(m) = next.pop() {
            let ordered = m.order.is_some();
            if let Some((key, order)) = &m.order {
                self.record.inbox.mark(key, *order, self.now);
            }
            self.apply(m, applied);
            if ordered {
                let mut ready = self.record.inbox.take_ready();
                ready.reverse();
                next.extend(ready.into_iter().map(BatchMessage::from));
            }
        }
    }

    /// Runs a message, or defers a scheduled signal that came before its time.
    fn apply(&mut self, m: BatchMessage, applied: &mut Vec<MessageId>) {
        if let EntityRequest::Operation { at: Some(at), .. } = &m.request {
            if *at > self.now {
                self.out.effects.push(EntityEffect::Defer {
                    message_id: m.message_id,
                    sender: m.sender,
                    at: *at,
                    request: m.request,
                });
                return;
            }
        }
        applied.push(m.message_id.clone());
        self.handle(m);
    }

    /// A message to this entity when the oldest waiting message's reorder window runs out,
    /// so that it runs then even if nothing else comes — unless one is pending already.
    fn wake_for_overdue(&mut self) {
        let Some(at) = self.record.inbox.wake_needed(self.now) else {
            return;
        };
        self.out.effects.push(EntityEffect::Send {
            target: self.entity.clone(),
            request: EntityRequest::Wake,
            at: Some(at),
            order: None,
            // Unique per arming: a wake-up sent again for the same deadline is a new message.
            purpose: format!("wake:{}:{}", at.as_millis(), self.now.as_millis()),
        });
    }

    /// The order of this entity's next message to `target` (its sender epoch is set when it
    /// first sends).
    fn next_order(&mut self, target: &EntityId) -> SendOrder {
        let out = &mut self.record.outgoing;
        // Random: a row deleted and made again must not reuse an incarnation's numbers (the
        // epoch is committed with the first messages it numbers, so a re-run batch whose
        // commit failed sent nothing under the old one).
        out.epoch
            .get_or_insert_with(|| MessageId::random().to_string());
        out.next(target.instance_id(), self.now)
    }

    /// Runs a request now, or queues it while another orchestration's critical section holds
    /// the entity.
    fn handle(&mut self, m: BatchMessage) {
        if let Some(lock) = &self.record.lock {
            let owner = &lock.owner.instance_id;
            let from_owner = match &m.request {
                EntityRequest::Operation { caller, .. } => {
                    caller.as_ref().map(|c| &c.instance_id) == Some(owner)
                        || m.sender.as_ref() == Some(owner)
                }
                EntityRequest::Release { owner: o, .. } => o == owner,
                EntityRequest::Lock { .. } | EntityRequest::DeleteState => false,
                EntityRequest::Wake => true,
            };
            if !from_owner {
                if let EntityRequest::Release { id, .. } = &m.request {
                    // Its lock request still waits here: it is withdrawn, never granted or
                    // passed on (the other entities of the lock set got their own release).
                    if let Some(i) = self.record.queue.iter().position(
                        |q| matches!(&q.request, EntityRequest::Lock { id: l, .. } if l == id),
                    ) {
                        self.record.queue.remove(i);
                        return;
                    }
                }
                self.record.queue.push_back(QueuedRequest {
                    message_id: m.message_id,
                    sender: m.sender,
                    request: m.request,
                });
                return;
            }
        }
        self.execute(&m.message_id, m.request);
    }

    fn execute(&mut self, message_id: &MessageId, request: EntityRequest) {
        match request {
            EntityRequest::Operation {
                id,
                op,
                input,
                caller,
                ..
            } => self.operation(message_id, id, op, input, caller),
            EntityRequest::Lock {
                id,
                owner,
                lockset,
                position,
            } => {
                if let Some(i) = self.record.released.iter().position(|(r, _)| *r == id) {
                    // Its owner gave it up before it got here.
                    self.record.released.remove(i);
                    return;
                }
                self.record.lock = Some(LockHolder {
                    owner: owner.clone(),
                    request_id: id.clone(),
                });
                let purpose = format!("{message_id}:lock");
                match lockset.get(position + 1).cloned() {
                    Some(next) => {
                        let order = Some(self.next_order(&next));
                        self.out.effects.push(EntityEffect::Send {
                            target: next,
                            request: EntityRequest::Lock {
                                id,
                                owner,
                                lockset,
                                position: position + 1,
                            },
                            at: None,
                            order,
                            purpose,
                        });
                    }
                    None => self.out.effects.push(EntityEffect::Respond {
                        caller: owner,
                        request_id: id,
                        response: EntityResponse::Locked,
                        purpose,
                    }),
                }
            }
            EntityRequest::DeleteState => {
                self.out.operations += 1;
                *self.state = None;
                self.runner.state_deleted();
            }
            // It only made this batch run (see `wake_for_overdue`).
            EntityRequest::Wake => {}
            EntityRequest::Release { id, owner } => {
                let held = self
                    .record
                    .lock
                    .as_ref()
                    .is_some_and(|l| l.owner.instance_id == owner && l.request_id == id);
                if held {
                    self.record.lock = None;
                    self.drain_queue();
                } else if !self.record.released.iter().any(|(r, _)| *r == id) {
                    // The request may still be on its way here (passed on by another entity
                    // of the lock set): it must not lock this one when it comes.
                    self.record.released.push((id, self.now));
                }
            }
        }
    }

    /// After a release: runs the waiting requests in order until one locks the entity again
    /// (the rest keep waiting behind it).
    fn drain_queue(&mut self) {
        let waiting = std::mem::take(&mut self.record.queue);
        for q in waiting {
            self.handle(BatchMessage {
                message_id: q.message_id,
                sender: q.sender,
                request: q.request,
                order: None,
            });
        }
    }

    fn operation(
        &mut self,
        message_id: &MessageId,
        request_id: String,
        op: String,
        input: Payload,
        caller: Option<Caller>,
    ) {
        self.out.operations += 1;
        let mut ctx = EntityContext::new(OperationRequest {
            id: self.entity.clone(),
            operation: op.clone(),
            input,
            state: self.state.clone(),
            now: self.now,
            origin: message_id.to_string(),
            caller: caller.clone(),
        });
        let result = self.runner.run(&request_id, &mut ctx);
        let response = match result {
            Ok(output) => {
                let (state, actions) = ctx.into_parts();
                *self.state = state;
                self.take_actions(message_id, actions);
                EntityResponse::Ok { output }
            }
            Err(failure) => {
                self.out.failed += 1;
                EntityResponse::Failed { failure }
            }
        };
        if let Some(caller) = caller {
            self.out.effects.push(EntityEffect::Respond {
                caller,
                request_id,
                response,
                purpose: format!("{message_id}:response"),
            });
        }
    }

    fn take_actions(&mut self, message_id: &MessageId, actions: Vec<EntityAction>) {
        for (i, a) in actions.into_iter().enumerate() {
            let purpose = format!("{message_id}:action:{i}");
            match a {
                EntityAction::Signal {
                    target,
                    op,
                    input,
                    at,
                } => {
                    // A scheduled signal is not ordered: it runs at its time, after later ones.
                    let order = match at {
                        None => Some(self.next_order(&target)),
                        Some(_) => None,
                    };
                    self.out.effects.push(EntityEffect::Send {
                        target,
                        request: EntityRequest::Operation {
                            id: purpose.clone(),
                            op,
                            input,
                            caller: None,
                            at,
                        },
                        at,
                        order,
                        purpose,
                    });
                }
                EntityAction::StartOrchestration {
                    instance_id,
                    name,
                    input,
                } => self.out.effects.push(EntityEffect::Start {
                    instance_id,
                    name,
                    input,
                    purpose,
                }),
            }
        }
    }
}
