//! Durable entities: small stateful objects addressed by [`EntityId`] (`@name@key`), whose
//! operations run one at a time on the same partitions and control queues as orchestrations.
//!
//! * [`EntityContext`]: what an operation sees (state, operation, input, signals, starts).
//! * [`EntityType`]: an entity written as a type with methods (or register a plain function
//!   with [`Registry::entity`](crate::Registry::entity)).
//! * [`protocol`]: requests and responses, carried as external events.
//! * [`record`]: what an entity keeps besides its state (de-duplication, lock, queue, outbox).
//! * [`order`]: each durable sender's requests applied in send order, each once.
//! * [`batch`]: running one batch of messages, purely.
//! * [`dt_core`]: the Durable Task Framework's entity messages (a .NET orchestration's), read
//!   as requests.

pub mod batch;
pub mod context;
pub mod dt_core;
pub mod id;
pub mod order;
pub mod protocol;
pub mod record;
pub mod typed;

pub use batch::{
    run_batch, run_batch_with, BatchMessage, BatchOutcome, EntityEffect, OperationRunner,
};
pub use context::{EntityAction, EntityContext, EntityError};
pub use id::EntityId;
pub use protocol::{Caller, EntityRequest, EntityResponse, ENTITY_REQUEST_EVENT};
pub use record::{
    EntityRecord, LockHolder, OutboxEntry, QueuedRequest, RECENT_MESSAGE_IDS, SUSPECT_RETENTION,
};
pub use typed::EntityType;
