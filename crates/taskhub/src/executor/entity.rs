//! The entity batch a [`RemoteExecutor`](super::RemoteExecutor) is handed, and its answer.
//!
//! The runtime keeps everything about the batch but running the operations' code: it decides
//! which operations run (de-duplication, send order, locks and their queue, scheduled
//! signals), hands those to the executor with the entity's state, and records the answer:
//! each operation's result or failure, the state after the batch, and the signals and
//! orchestration starts the operations asked for (see `worker/entity/remote.rs`).

use taskhub_core::entity::{Caller, EntityAction, EntityId};
use taskhub_core::{FailureDetails, Payload};

/// One operation of a remote entity batch.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EntityOperation {
    /// The request's ID (a call's caller waits for it).
    pub request_id: String,
    /// The operation's name.
    pub name: String,
    /// Its input.
    pub input: Payload,
    /// The orchestration that called it and waits for its result (`None`: a signal).
    pub caller: Option<Caller>,
}

impl EntityOperation {
    /// Operation `name` with `input`, under request ID `request_id`, a signal (see
    /// [`with_caller`](Self::with_caller)).
    #[must_use]
    pub fn new(request_id: String, name: String, input: Payload) -> Self {
        Self {
            request_id,
            name,
            input,
            caller: None,
        }
    }

    /// The same operation, called by `caller` (`None`: signalled).
    #[must_use]
    pub fn with_caller(mut self, caller: Option<Caller>) -> Self {
        self.caller = caller;
        self
    }
}

/// A batch of operations for one entity, run one after the other against its state.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EntityWork {
    /// The entity.
    pub entity: EntityId,
    /// Its state before the batch (`None`: it has none).
    pub state: Option<Payload>,
    /// The operations, in order.
    pub operations: Vec<EntityOperation>,
}

impl EntityWork {
    /// The batch `operations` for `entity` whose state is `state`.
    #[must_use]
    pub fn new(entity: EntityId, state: Option<Payload>, operations: Vec<EntityOperation>) -> Self {
        Self {
            entity,
            state,
            operations,
        }
    }
}

/// What a remote executor did with an [`EntityWork`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EntityBatchOutcome {
    /// Each operation's output or failure, in the order of the work's operations. A failed
    /// operation's state change and actions are not in `state` and `actions`. Fewer results
    /// than operations: the operations without one fail (the runtime says why).
    pub results: Vec<Result<Payload, FailureDetails>>,
    /// The state after the batch (`None`: deleted, or never set).
    pub state: Option<Payload>,
    /// The signals and orchestration starts of the successful operations, in order.
    pub actions: Vec<EntityAction>,
}

impl EntityBatchOutcome {
    /// An outcome with `results` and the state `state`, and no actions.
    #[must_use]
    pub fn new(results: Vec<Result<Payload, FailureDetails>>, state: Option<Payload>) -> Self {
        Self {
            results,
            state,
            actions: Vec::new(),
        }
    }

    /// The same outcome with `actions`.
    #[must_use]
    pub fn with_actions(mut self, actions: Vec<EntityAction>) -> Self {
        self.actions = actions;
        self
    }
}
