//! History streaming (`WORKER_CAPABILITY_HISTORY_STREAMING`): a turn whose work item would be
//! over [`inline_history_bytes`](super::DispatcherSettings::inline_history_bytes) goes to a
//! worker that announced the capability with `requiresHistoryStreaming` and no past events
//! (`state.rs`, `hand_out`); the worker then calls `StreamInstanceHistory(instanceId,
//! executionId, forWorkItemProcessing)` (the .NET SDK: `GrpcDurableTaskWorker.Processor.cs`,
//! `BuildRuntimeStateAsync`) and gets exactly the past events the work item left out, from the
//! item itself, in chunks that each fit a message of gRPC's default size.

use tonic::Status;

use super::Dispatcher;
use crate::proto::{HistoryChunk, HistoryEvent};

/// The most encoded bytes of events in one chunk: well under gRPC's default 4 MiB receive
/// limit (one larger event goes alone).
pub(crate) const CHUNK_BYTES: usize = 1024 * 1024;

impl Dispatcher {
    /// The past events of the turn of `instance` that went out without them, in chunks;
    /// `Ok(None)` if no such turn is out here.
    ///
    /// # Errors
    /// `INTERNAL` if the kept events do not decode (they were encoded here).
    /// `execution`: the execution the caller asks for, if it named one.
    pub(crate) fn streamed_chunks(
        &self,
        instance: &str,
        execution: Option<&str>,
    ) -> Result<Option<Vec<HistoryChunk>>, Status> {
        let Some(past) = self.inner.lock().streamed_past(instance, execution) else {
            return Ok(None);
        };
        let events = past.decode().map_err(|e| {
            Status::internal(format!(
                "the kept past events of instance '{}' do not decode: {e}",
                crate::error::bounded(instance)
            ))
        })?;
        Ok(Some(chunks(events, CHUNK_BYTES)))
    }
}

/// `events` in order, in chunks of at most `max_bytes` encoded bytes each (an event larger
/// than that alone in its chunk).
pub(crate) fn chunks(events: Vec<HistoryEvent>, max_bytes: usize) -> Vec<HistoryChunk> {
    let mut out = Vec::new();
    let mut current = HistoryChunk::default();
    let mut bytes = 0;
    for e in events {
        let size = prost::Message::encoded_len(&e);
        if !current.events.is_empty() && bytes + size > max_bytes {
            out.push(std::mem::take(&mut current));
            bytes = 0;
        }
        bytes += size;
        current.events.push(e);
    }
    if !current.events.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: i32) -> HistoryEvent {
        HistoryEvent {
            event_id: id,
            ..HistoryEvent::default()
        }
    }

    #[test]
    fn events_go_in_order_in_chunks_of_bounded_size() {
        let events: Vec<HistoryEvent> = (1..=10).map(event).collect();
        let one = prost::Message::encoded_len(&event(5));
        let out = chunks(events, 3 * one);
        let sizes: Vec<usize> = out.iter().map(|c| c.events.len()).collect();
        assert_eq!(sizes, [3, 3, 3, 1]);
        let ids: Vec<i32> = out
            .iter()
            .flat_map(|c| c.events.iter().map(|e| e.event_id))
            .collect();
        assert_eq!(ids, (1..=10).collect::<Vec<_>>());
        // An event larger than a chunk goes alone; nothing is dropped.
        assert_eq!(chunks(vec![event(1), event(2)], 1).len(), 2);
        assert!(chunks(Vec::new(), 10).is_empty());
    }
}
