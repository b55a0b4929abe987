//! The history table: the event log of each instance.

use async_trait::async_trait;
use taskhub_core::{ExecutionId, HistoryEvent, InstanceId, Timestamp};

use crate::checkpoint::OutboundMessage;
use crate::error::StorageResult;

/// An opaque version tag of a row; changes on every write.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ETag(pub String);

/// An instance's current history, as loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct HistorySnapshot {
    /// The current execution.
    pub execution_id: ExecutionId,
    /// Its events in order (position = sequence number).
    pub events: Vec<HistoryEvent>,
    /// Version of the history; a checkpoint names it as its expected version.
    pub etag: ETag,
    /// Outbound messages of a checkpoint that committed its history but may not have sent
    /// them (a torn checkpoint on a backend without transactions). The loader re-sends them
    /// (receivers de-duplicate by message ID) and clears them, both in one checkpoint of no
    /// events that carries them as its outbound messages, fenced and conditional on `etag`.
    pub pending_outbox: Vec<OutboundMessage>,
    /// When the checkpoint that left `pending_outbox` committed, by the writing store's clock
    /// (`None` when the outbox is empty). A live writer may still be sending it: the loader
    /// re-sends only an outbox old enough that its writer cannot still be at work.
    pub pending_since: Option<Timestamp>,
}

/// Reading history. Writes go through a [`CheckpointRequest`](crate::CheckpointRequest).
///
/// Contract:
/// * `load` MUST return `None` for an instance without history, and otherwise only the
///   current execution's events, in the order they were appended.
/// * Events MUST round-trip exactly (every field of every event kind).
/// * `delete` MUST remove all executions' events of the instance; deleting a missing history
///   MUST succeed.
#[async_trait]
pub trait HistoryStore: Send + Sync {
    /// Loads the current execution's history.
    async fn load_history(&self, instance: &InstanceId) -> StorageResult<Option<HistorySnapshot>>;
    /// Deletes every execution's history of an instance (purge).
    async fn delete_history(&self, instance: &InstanceId) -> StorageResult<()>;
}
