//! How long this worker has itself watched a pending outbox (issue 20, item 4).
//!
//! A loader re-sends a torn checkpoint's outbox only once its writer cannot still be sending
//! it: a grace after the outbox was committed (a lease interval, and at least a work-item
//! visibility timeout and a poll: see `orchestration/outbox_screen.rs`). The time it was committed
//! (`OutboxAt`) is the writer's wall clock, and comparing it with the loader's compares two
//! machines' clocks: a loader ahead by a lease re-sends a live writer's outbox (its activities
//! run twice), one behind stalls. So the loader times the grace itself, as leases are timed (DESIGN
//! invariant 7): the first time it sees a given pending outbox (an instance's history at one
//! ETag; any write of the history changes the ETag) it notes its own monotonic time, and it
//! re-sends only once it has seen that same outbox pending for the whole grace. The writer
//! committed before the first sighting, so it has had at least that long too.
//!
//! While it watches, it also notes the message IDs of the instance's deliveries it gave back
//! meanwhile (they stay in their queue until a turn consumes them, which waits for the outbox):
//! a result that reached it during the grace counts as seen when it screens the outbox (see
//! `orchestration/outbox_screen.rs`), even if that delivery comes back in another batch than the one
//! that ends the watch.
//!
//! Bounded (DESIGN invariant 5): at most [`CAPACITY`] outboxes are watched, with at most
//! [`MAX_NOTED`] delivery IDs each; one forgotten is watched again from its next sighting (a
//! later re-send, never an early one), and a delivery not noted only costs a copy re-sent.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use taskhub_core::{InstanceId, MessageId};
use taskhub_storage::ETag;

use super::recent::Recent;

/// The most pending outboxes watched at once.
pub(crate) const CAPACITY: usize = 4_096;

/// The most delivery IDs noted for one watched outbox.
pub(crate) const MAX_NOTED: usize = 256;

/// A watched outbox: an instance's history at one ETag.
type Key = (InstanceId, ETag);

/// The pending outboxes this worker has seen, with its own time of the first sighting and the
/// deliveries it held for their instances since.
#[derive(Debug)]
pub(crate) struct OutboxWatch {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    first: Recent<Key>,
    noted: HashMap<Key, HashSet<MessageId>>,
}

impl OutboxWatch {
    /// Watches outboxes for up to four `grace`s from their first sighting.
    pub(crate) fn new(grace: Duration) -> Self {
        Self {
            state: Mutex::new(State {
                first: Recent::new(CAPACITY, grace.saturating_mul(4)),
                noted: HashMap::new(),
            }),
        }
    }

    /// How long this worker has watched the pending outbox of `instance`'s history at `etag`,
    /// `now` being its monotonic time: zero at the first sighting, which starts the watch.
    /// Notes the IDs of the instance's deliveries held now (`delivered`).
    pub(crate) fn watched<'a>(
        &self,
        instance: &InstanceId,
        etag: &ETag,
        now: Duration,
        delivered: impl IntoIterator<Item = &'a MessageId>,
    ) -> Duration {
        let key = (instance.clone(), etag.clone());
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let watched = match state.first.get(&key) {
            Some(first) => now.saturating_sub(first),
            None => {
                state.first.note(key.clone(), now);
                Duration::ZERO
            }
        };
        if state.noted.len() >= CAPACITY && !state.noted.contains_key(&key) {
            // Keep only the watches still remembered.
            let State { first, noted } = &mut *state;
            noted.retain(|k, _| first.get(k).is_some());
        }
        let ids = state.noted.entry(key).or_default();
        for id in delivered {
            if ids.len() >= MAX_NOTED {
                break;
            }
            ids.insert(id.clone());
        }
        watched
    }

    /// The IDs of the deliveries noted while watching this outbox.
    pub(crate) fn noted(&self, instance: &InstanceId, etag: &ETag) -> Vec<MessageId> {
        let key = (instance.clone(), etag.clone());
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state
            .noted
            .get(&key)
            .map(|ids| ids.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Stops watching an outbox (it was re-sent).
    pub(crate) fn forget(&self, instance: &InstanceId, etag: &ETag) {
        let key = (instance.clone(), etag.clone());
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.first.forget(&key);
        state.noted.remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watch_starts_at_the_first_sighting_of_each_outbox() {
        let w = OutboxWatch::new(Duration::from_secs(30));
        let i = InstanceId::new("a").unwrap();
        let e1 = ETag("1".into());
        let e2 = ETag("2".into());
        let s = Duration::from_secs;
        assert_eq!(w.watched(&i, &e1, s(100), []), s(0));
        assert_eq!(w.watched(&i, &e1, s(110), []), s(10));
        assert_eq!(w.watched(&i, &e2, s(120), []), s(0), "another outbox");
        assert_eq!(w.watched(&i, &e1, s(131), []), s(31));
        w.forget(&i, &e1);
        assert_eq!(w.watched(&i, &e1, s(140), []), s(0));
    }

    #[test]
    fn the_deliveries_held_while_watching_are_noted_until_the_watch_ends() {
        let w = OutboxWatch::new(Duration::from_secs(30));
        let i = InstanceId::new("a").unwrap();
        let (e1, e2) = (ETag("1".into()), ETag("2".into()));
        let s = Duration::from_secs;
        let (start, result) = (MessageId::random(), MessageId::random());
        w.watched(&i, &e1, s(0), [&start]);
        w.watched(&i, &e1, s(20), [&result]);
        let mut noted = w.noted(&i, &e1);
        noted.sort();
        let mut both = vec![start.clone(), result];
        both.sort();
        assert_eq!(noted, both, "every batch's IDs, not only the last");
        assert!(w.noted(&i, &e2).is_empty(), "another outbox noted nothing");
        w.forget(&i, &e1);
        assert!(w.noted(&i, &e1).is_empty());
    }

    #[test]
    fn at_most_max_noted_ids_are_kept_per_outbox() {
        let w = OutboxWatch::new(Duration::from_secs(30));
        let i = InstanceId::new("a").unwrap();
        let e = ETag("1".into());
        let ids: Vec<MessageId> = (0..MAX_NOTED + 10).map(|_| MessageId::random()).collect();
        w.watched(&i, &e, Duration::ZERO, &ids);
        assert_eq!(w.noted(&i, &e).len(), MAX_NOTED);
    }
}
