//! The messages entities exchange with their callers, carried as external events
//! (`EventRaised`) on the control queues, so they need no new message or history kind:
//! a request is an event named [`ENTITY_REQUEST_EVENT`] addressed to the entity; a response is
//! an event named by the request ID addressed to the calling orchestration's execution, which
//! waits for it like any event (recorded in its history, so replay sees it again).

use serde::{Deserialize, Serialize};

use crate::entity::id::EntityId;
use crate::history::FailureDetails;
use crate::ids::{ExecutionId, InstanceId};
use crate::payload::Payload;
use crate::time::Timestamp;

/// The event name of every request to an entity.
pub const ENTITY_REQUEST_EVENT: &str = "$entity";

/// The orchestration execution that sent a request and waits for its response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller {
    /// The orchestration instance.
    pub instance_id: InstanceId,
    /// Its execution (the response is addressed to it).
    pub execution_id: ExecutionId,
}

/// A message to an entity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EntityRequest {
    /// Run an operation. With a `caller` it is a call (the caller gets a response); without,
    /// a signal (one-way).
    Operation {
        /// The request ID (the caller waits for an event of this name).
        id: String,
        /// The operation name.
        op: String,
        /// Its input.
        input: Payload,
        /// Who waits for the result; `None` for a signal.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        caller: Option<Caller>,
        /// Do not run before this time (a scheduled signal).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<Timestamp>,
    },
    /// Lock this entity for `owner`, then pass the request on to the next entity of `lockset`
    /// (sorted, so every critical section locks in one global order), the last one answering
    /// the owner.
    Lock {
        /// The request ID (the owner waits for an event of this name).
        id: String,
        /// The orchestration that asks for the locks.
        owner: Caller,
        /// Every entity of the critical section, in lock order.
        lockset: Vec<EntityId>,
        /// The position of this entity in `lockset`.
        position: usize,
    },
    /// Delete the entity's state (a client's delete), as an operation calling
    /// `delete_state` would; it waits for a critical section like any request.
    DeleteState,
    /// Makes the entity run a batch, and nothing else: scheduled by an entity for when a
    /// message waiting for its predecessor is due to run anyway (see
    /// [`order`](crate::entity::order)).
    Wake,
    /// Release the lock `owner` holds (sent when its critical section ends).
    Release {
        /// The lock request ID.
        id: String,
        /// The orchestration that holds the lock.
        owner: InstanceId,
    },
}

/// The answer to a call or to a lock request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EntityResponse {
    /// The operation returned this output.
    Ok {
        /// The output.
        output: Payload,
    },
    /// The operation failed; its state change was rolled back.
    Failed {
        /// Why.
        failure: FailureDetails,
    },
    /// Every entity of the lock set is locked for the caller.
    Locked,
}
