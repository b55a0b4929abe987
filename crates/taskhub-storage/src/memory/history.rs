//! The history table. Events are kept in their storage format (`taskhub_core::format`), so the
//! memory backend round-trips them the way a persistent backend does.

use async_trait::async_trait;
use taskhub_core::format::{decode_event, encode_event};
use taskhub_core::{ExecutionId, HistoryEvent, InstanceId};

use super::{MemoryStore, Op};
use crate::checkpoint::OutboundMessage;
use crate::error::{StorageError, StorageResult};
use crate::history::{ETag, HistorySnapshot, HistoryStore};

/// The stored history of one instance: its current execution only.
#[derive(Debug, Clone)]
pub(super) struct HistoryRow {
    pub(super) execution_id: ExecutionId,
    /// Encoded events, in order.
    pub(super) events: Vec<String>,
    pub(super) etag: ETag,
    pub(super) pending_outbox: Vec<OutboundMessage>,
    /// When `pending_outbox` was committed (the store's clock).
    pub(super) pending_since: Option<taskhub_core::Timestamp>,
}

impl HistoryRow {
    /// Encodes and appends events.
    pub(super) fn append(&mut self, events: &[HistoryEvent]) {
        self.events.extend(events.iter().map(encode_event));
    }

    fn snapshot(&self, instance: &InstanceId) -> StorageResult<HistorySnapshot> {
        let events = self
            .events
            .iter()
            .enumerate()
            .map(|(seq, text)| {
                decode_event(text).map_err(|e| StorageError::Corrupt {
                    what: format!("history event {seq} of instance '{instance}'"),
                    detail: e.to_string(),
                })
            })
            .collect::<StorageResult<Vec<_>>>()?;
        Ok(HistorySnapshot {
            execution_id: self.execution_id.clone(),
            events,
            etag: self.etag.clone(),
            pending_outbox: self.pending_outbox.clone(),
            pending_since: self
                .pending_since
                .filter(|_| !self.pending_outbox.is_empty()),
        })
    }
}

#[async_trait]
impl HistoryStore for MemoryStore {
    async fn load_history(&self, instance: &InstanceId) -> StorageResult<Option<HistorySnapshot>> {
        let call = self.enter(Op::LoadHistory).await?;
        let row = self.state().history.get(instance.as_str()).cloned();
        call.finish(row.map(|r| r.snapshot(instance)).transpose())
    }

    async fn delete_history(&self, instance: &InstanceId) -> StorageResult<()> {
        let call = self.enter(Op::DeleteHistory).await?;
        self.state().history.remove(instance.as_str());
        call.finish(Ok(()))
    }
}
