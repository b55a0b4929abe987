//! A work item as it goes down the `GetWorkItems` stream: a [`WorkItem`] whose orchestrator
//! request may carry its past events already encoded ([`EncodedEvents`]). A turn's request
//! holds the execution's whole history, and an orchestration with many steps sends it again
//! every turn; the dispatcher keeps each instance's past events encoded
//! (`dispatch::past`), so a turn converts and encodes only the events that are new to it.
//!
//! The bytes on the wire are those of an ordinary `WorkItem`: the encoded past events are the
//! `pastEvents` entries (field 3) of the `orchestratorRequest`, placed before its other
//! fields. Protobuf parsers accept a message's fields in any order and append the entries of
//! a repeated field in the order they come, so every SDK reads the same request.

use bytes::{BufMut, Bytes};
use prost::encoding::{encode_key, encode_varint, encoded_len_varint, key_len, WireType};
use prost::Message;

use crate::proto::{work_item, HistoryEvent, WorkItem};

/// The field number of `OrchestratorRequest.pastEvents`.
const PAST_EVENTS_FIELD: u32 = 3;
/// The field number of `WorkItem.orchestratorRequest`.
const ORCHESTRATOR_REQUEST_FIELD: u32 = 1;
/// The field number of `WorkItem.completionToken`.
const COMPLETION_TOKEN_FIELD: u32 = 10;

/// History events encoded as `pastEvents` entries (each its field key, its length and the
/// event), in order, kept as the shared chunks they were encoded in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EncodedEvents {
    chunks: Vec<Bytes>,
    events: usize,
    bytes: usize,
}

impl EncodedEvents {
    /// No events.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `events` (encoded here, as one chunk).
    pub fn extend<'a>(&mut self, events: impl IntoIterator<Item = &'a HistoryEvent>) {
        let mut chunk = Vec::new();
        let mut n = 0;
        for e in events {
            prost::encoding::message::encode(PAST_EVENTS_FIELD, e, &mut chunk);
            n += 1;
        }
        self.push_chunk(Bytes::from(chunk), n);
    }

    /// Appends the events of `other`, sharing its chunks.
    pub fn append(&mut self, other: &Self) {
        for c in &other.chunks {
            self.chunks.push(c.clone());
        }
        self.events += other.events;
        self.bytes += other.bytes;
    }

    fn push_chunk(&mut self, chunk: Bytes, events: usize) {
        if events == 0 {
            return;
        }
        self.bytes += chunk.len();
        self.events += events;
        self.chunks.push(chunk);
    }

    /// Joins the chunks into one (a long-lived history gains a chunk a turn).
    pub fn compact(&mut self) {
        if self.chunks.len() > 1 {
            let mut joined = Vec::with_capacity(self.bytes);
            for c in &self.chunks {
                joined.extend_from_slice(c);
            }
            self.chunks = vec![Bytes::from(joined)];
        }
    }

    /// How many events.
    #[must_use]
    pub fn len(&self) -> usize {
        self.events
    }

    /// No events?
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.events == 0
    }

    /// Their encoded size in bytes.
    #[must_use]
    pub fn encoded_bytes(&self) -> usize {
        self.bytes
    }

    /// How many chunks they are kept in.
    #[must_use]
    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }

    /// The events decoded again.
    ///
    /// # Errors
    /// If the bytes are not `pastEvents` entries (they always are when made here).
    pub fn decode(&self) -> Result<Vec<HistoryEvent>, prost::DecodeError> {
        let mut out = Vec::with_capacity(self.events);
        for c in &self.chunks {
            let mut buf = c.clone();
            while !buf.is_empty() {
                let (tag, wire_type) = prost::encoding::decode_key(&mut buf)?;
                let mut e = HistoryEvent::default();
                if tag == PAST_EVENTS_FIELD {
                    prost::encoding::message::merge(
                        wire_type,
                        &mut e,
                        &mut buf,
                        prost::encoding::DecodeContext::default(),
                    )?;
                    out.push(e);
                } else {
                    prost::encoding::skip_field(
                        wire_type,
                        tag,
                        &mut buf,
                        prost::encoding::DecodeContext::default(),
                    )?;
                }
            }
        }
        Ok(out)
    }
}

/// The field number of `HistoryEvent.executionRewound`.
const EXECUTION_REWOUND_FIELD: u32 = 30;

impl EncodedEvents {
    /// These events less every one of the `HistoryEvent` oneof case `field`, or `None` when
    /// none is (nothing copied). Reads only each event's field keys, skipping their values.
    fn without_case(&self, field: u32) -> Option<Self> {
        let mut kept = Vec::new();
        let mut n = 0;
        let mut dropped = false;
        for c in &self.chunks {
            let mut rest: &[u8] = c;
            while !rest.is_empty() {
                let before = rest;
                let has = entry_has_case(&mut rest, field)?;
                let entry = before.get(..before.len() - rest.len())?;
                if has {
                    dropped = true;
                } else {
                    kept.extend_from_slice(entry);
                    n += 1;
                }
            }
        }
        if !dropped {
            return None;
        }
        let mut out = Self::new();
        out.push_chunk(Bytes::from(kept), n);
        Some(out)
    }
}

/// Reads one `pastEvents` entry off `buf`: whether its event is of the oneof case `field`
/// (`None` if the bytes are not an entry, which they always are when made here).
fn entry_has_case(buf: &mut &[u8], field: u32) -> Option<bool> {
    let ctx = prost::encoding::DecodeContext::default;
    let (_, wire_type) = prost::encoding::decode_key(buf).ok()?;
    if wire_type != WireType::LengthDelimited {
        return None;
    }
    let len = usize::try_from(prost::encoding::decode_varint(buf).ok()?).ok()?;
    let mut event = buf.get(..len)?;
    *buf = buf.get(len..)?;
    let mut has = false;
    while !event.is_empty() {
        let (tag, wire_type) = prost::encoding::decode_key(&mut event).ok()?;
        has |= tag == field;
        prost::encoding::skip_field(wire_type, tag, &mut event, ctx()).ok()?;
    }
    Some(has)
}

/// A work item going out: `item`, and for an orchestrator request the past events that go
/// before the ones in `item` (normally all of them: the request's own `past_events` is then
/// empty).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutgoingWorkItem {
    /// The work item without the encoded past events.
    pub item: WorkItem,
    /// The orchestrator request's past events, encoded (empty for other work items).
    pub past: EncodedEvents,
}

impl From<WorkItem> for OutgoingWorkItem {
    fn from(item: WorkItem) -> Self {
        Self {
            item,
            past: EncodedEvents::new(),
        }
    }
}

impl OutgoingWorkItem {
    /// The plain `WorkItem` (the encoded past events decoded into the request).
    ///
    /// # Errors
    /// If the encoded past events do not decode.
    pub fn into_work_item(self) -> Result<WorkItem, prost::DecodeError> {
        let Self { mut item, past } = self;
        if let Some(work_item::Request::OrchestratorRequest(r)) = &mut item.request {
            if !past.is_empty() {
                let mut events = past.decode()?;
                events.append(&mut r.past_events);
                r.past_events = events;
            }
        }
        Ok(item)
    }

    /// Leaves out every `executionRewound` event of an orchestrator request (past and new
    /// events), for a worker whose protos predate it: the Go SDK v0.6.0 and the Java SDK 1.5.0
    /// (the Go worker fails a turn on an event it does not know, `processEvent`; the Java
    /// executor's `processEvent` throws on a case it has none for, which its `await` happens to
    /// swallow while the code waits on a task). The event only marks the rewind (the history
    /// sent is already the rewound one), so their replay is the same without it.
    pub(crate) fn strip_rewinds(&mut self) {
        use crate::proto::history_event::EventType;
        let Some(work_item::Request::OrchestratorRequest(r)) = &mut self.item.request else {
            return;
        };
        let keep = |e: &HistoryEvent| !matches!(e.event_type, Some(EventType::ExecutionRewound(_)));
        r.new_events.retain(keep);
        r.past_events.retain(keep);
        if let Some(past) = self.past.without_case(EXECUTION_REWOUND_FIELD) {
            self.past = past;
        }
    }

    /// The encoded length of the orchestrator request with the past events, when there are
    /// some to splice in.
    fn spliced_request_len(&self) -> Option<usize> {
        match &self.item.request {
            Some(work_item::Request::OrchestratorRequest(r)) if !self.past.is_empty() => {
                Some(self.past.bytes + r.encoded_len())
            }
            _ => None,
        }
    }
}

impl Message for OutgoingWorkItem {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        let (Some(len), Some(work_item::Request::OrchestratorRequest(r))) =
            (self.spliced_request_len(), &self.item.request)
        else {
            self.item.encode_raw(buf);
            return;
        };
        encode_key(ORCHESTRATOR_REQUEST_FIELD, WireType::LengthDelimited, buf);
        encode_varint(len as u64, buf);
        for c in &self.past.chunks {
            buf.put_slice(c);
        }
        r.encode_raw(buf);
        if !self.item.completion_token.is_empty() {
            prost::encoding::string::encode(
                COMPLETION_TOKEN_FIELD,
                &self.item.completion_token,
                buf,
            );
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl bytes::Buf,
        ctx: prost::encoding::DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        // Decoded as a plain `WorkItem` (past events and all in `item`).
        self.item.merge_field(tag, wire_type, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        let Some(len) = self.spliced_request_len() else {
            return self.item.encoded_len();
        };
        let token = if self.item.completion_token.is_empty() {
            0
        } else {
            prost::encoding::string::encoded_len(
                COMPLETION_TOKEN_FIELD,
                &self.item.completion_token,
            )
        };
        key_len(ORCHESTRATOR_REQUEST_FIELD) + encoded_len_varint(len as u64) + len + token
    }

    fn clear(&mut self) {
        self.item.clear();
        self.past = EncodedEvents::new();
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
