//! Each instance's past events, kept encoded between its turns. A turn's request carries the
//! execution's whole history; converting and encoding it again every turn cost an
//! orchestration with many steps more than the rest of its turn (a 1,000-task fan-out: up to
//! a millisecond a turn). Here a turn converts and encodes only the past events the previous
//! request of the same execution did not carry.
//!
//! A history only grows within an execution (a turn's `past` holds only committed events:
//! a session whose checkpoint fails is dropped and its history loaded again), so what was
//! encoded for an execution is a prefix of its later pasts — except after a rewind, which
//! rewrites it: the turn that carries `ExecutionRewound` drops what was kept. Before reusing it the cache checks that the execution is the
//! same and that the first and last events it encoded are the ones at those places now; on
//! any difference it encodes the history anew. An execution's conversion of a past event
//! does not depend on later events (an entity's answer arrives after the request it answers),
//! so the bytes are those a fresh conversion would give.
//!
//! Memory is bounded: past `max_bytes` of encoded history the least recently used quarter
//! of the instances is dropped; an instance whose turn ends its execution is dropped at once.
//! The lock is held only to look up and to store; the encoding is done outside it.
//! Not done: the entity requests of the history (`EntityRequests::of`) are still gathered
//! from the whole history each turn (a scan that parses only `$entity` sends).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use taskhub::executor::OrchestrationWork;
use taskhub::{ExecutionId, HistoryEvent, InstanceId};

use crate::convert::{event_to_proto_with_entities, EntityRequests};
use crate::wire::EncodedEvents;

/// Chunks an instance's encoded history may have before they are joined into one.
const MAX_CHUNKS: usize = 32;

/// One instance's encoded past.
#[derive(Debug)]
struct Entry {
    execution: ExecutionId,
    /// The first and the last event encoded (to check that the history is the same).
    first: Option<HistoryEvent>,
    last: Option<HistoryEvent>,
    encoded: EncodedEvents,
    /// When it was last used (the cache's counter).
    used: u64,
}

/// The encoded pasts of the instances whose turns went out.
#[derive(Debug)]
pub(crate) struct PastCache {
    entries: HashMap<InstanceId, Entry>,
    bytes: usize,
    max_bytes: usize,
    tick: u64,
}

impl PastCache {
    /// A cache holding at most about `max_bytes` of encoded events (0: none).
    pub(crate) fn new(max_bytes: usize) -> Self {
        Self {
            entries: HashMap::new(),
            bytes: 0,
            max_bytes,
            tick: 0,
        }
    }

    /// What is kept of `work.past`, if it is a prefix of it: the encoded events (their
    /// chunks shared). Marks the instance used.
    fn prefix_of(&mut self, work: &OrchestrationWork) -> Option<EncodedEvents> {
        self.tick += 1;
        let tick = self.tick;
        let entry = self
            .entries
            .get_mut(&work.instance)
            .filter(|e| e.reusable_for(&work.execution_id, &work.past))?;
        entry.used = tick;
        Some(entry.encoded.clone())
    }

    /// Keeps `encoded`, the whole of `work.past`, for the instance's next turn (in place of
    /// what was kept), then drops the least recently used instances past the size.
    fn keep(&mut self, work: &OrchestrationWork, encoded: &EncodedEvents) {
        self.forget(&work.instance);
        self.bytes += encoded.encoded_bytes();
        self.entries.insert(
            work.instance.clone(),
            Entry {
                execution: work.execution_id.clone(),
                first: work.past.first().cloned(),
                last: work.past.last().cloned(),
                encoded: encoded.clone(),
                used: self.tick,
            },
        );
        if self.bytes > self.max_bytes {
            self.evict();
        }
    }

    /// Drops `instance`'s encoded past (its execution ended, or it must be encoded anew).
    pub(crate) fn forget(&mut self, instance: &InstanceId) {
        if let Some(e) = self.entries.remove(instance) {
            self.bytes -= e.encoded.encoded_bytes();
        }
    }

    /// Drops the least recently used quarter of the instances (at least one).
    fn evict(&mut self) {
        let mut by_age: Vec<(u64, InstanceId)> = self
            .entries
            .iter()
            .map(|(id, e)| (e.used, id.clone()))
            .collect();
        by_age.sort_unstable_by_key(|(used, _)| *used);
        let n = (by_age.len() / 4).max(1);
        for (_, id) in by_age.into_iter().take(n) {
            self.forget(&id);
        }
    }

    /// The instances held.
    #[cfg(test)]
    pub(crate) fn instances(&self) -> usize {
        self.entries.len()
    }

    /// The encoded bytes held.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

/// `work.past`, encoded as `pastEvents` entries, from what `cache` kept of the instance's
/// earlier turns and the events new since. `requests` are the entity requests of the whole
/// history (`past` and `new`). The lock is held only to look up and to store: the new
/// events are converted and encoded (and a long history's chunks joined) outside it.
pub(crate) fn past_of(
    cache: &Mutex<PastCache>,
    work: &OrchestrationWork,
    requests: &EntityRequests,
) -> EncodedEvents {
    let lock = || cache.lock().unwrap_or_else(PoisonError::into_inner);
    let convert = |events: &[HistoryEvent]| {
        let protos: Vec<_> = events
            .iter()
            .map(|e| event_to_proto_with_entities(e, &work.instance, requests))
            .collect();
        let mut out = EncodedEvents::new();
        out.extend(&protos);
        out
    };
    let past = work.past.as_slice();
    let prefix = {
        let mut cache = lock();
        if cache.max_bytes == 0 {
            drop(cache);
            return convert(past);
        }
        if is_rewind(work) {
            // The history was rewritten: what was kept of it is no one's prefix.
            cache.forget(&work.instance);
        }
        cache.prefix_of(work)
    };
    let mut encoded = prefix.unwrap_or_default();
    let rest = past.get(encoded.len()..).unwrap_or_default();
    if rest.is_empty() {
        return encoded;
    }
    encoded.append(&convert(rest));
    if encoded.chunks() > MAX_CHUNKS {
        encoded.compact();
    }
    lock().keep(work, &encoded);
    encoded
}

/// Is `work` the turn of a rewind (its history was rewritten, not grown)?
fn is_rewind(work: &OrchestrationWork) -> bool {
    work.new
        .iter()
        .any(|e| matches!(e.event, taskhub::EventKind::ExecutionRewound { .. }))
}

impl Entry {
    /// Whether what this entry encoded is a prefix of `past` of `execution`.
    fn reusable_for(&self, execution: &ExecutionId, past: &[HistoryEvent]) -> bool {
        let n = self.encoded.len();
        &self.execution == execution
            && n <= past.len()
            && (n == 0
                || (past.first() == self.first.as_ref() && past.get(n - 1) == self.last.as_ref()))
    }
}

#[cfg(test)]
#[path = "past_tests.rs"]
mod tests;
