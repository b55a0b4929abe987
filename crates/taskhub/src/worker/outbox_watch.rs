//! How long this worker has itself watched a pending outbox (issue 20, item 4).
//!
//! A loader re-sends a torn checkpoint's outbox only once its writer cannot still be sending
//! it: a lease interval after the outbox was committed. The time it was committed (`OutboxAt`)
//! is the writer's wall clock, and comparing it with the loader's compares two machines'
//! clocks: a loader ahead by a lease re-sends a live writer's outbox (its activities run twice),
//! one behind stalls. So the loader times the grace itself, as leases are timed (DESIGN
//! invariant 7): the first time it sees a given pending outbox (an instance's history at one
//! ETag; any write of the history changes the ETag) it notes its own monotonic time, and it
//! re-sends only once it has seen that same outbox pending for the whole grace. The writer
//! committed before the first sighting, so it has had at least that long too.
//!
//! Bounded (DESIGN invariant 5): at most [`CAPACITY`] outboxes are watched; one forgotten is
//! watched again from its next sighting (a later re-send, never an early one).

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use taskhub_core::InstanceId;
use taskhub_storage::ETag;

use super::recent::Recent;

/// The most pending outboxes watched at once.
pub(crate) const CAPACITY: usize = 4_096;

/// The pending outboxes this worker has seen, with its own time of the first sighting.
#[derive(Debug)]
pub(crate) struct OutboxWatch {
    seen: Mutex<Recent<(InstanceId, ETag)>>,
}

impl OutboxWatch {
    /// Watches outboxes for up to four `grace`s from their first sighting.
    pub(crate) fn new(grace: Duration) -> Self {
        Self {
            seen: Mutex::new(Recent::new(CAPACITY, grace.saturating_mul(4))),
        }
    }

    /// How long this worker has watched the pending outbox of `instance`'s history at `etag`,
    /// `now` being its monotonic time: zero at the first sighting, which starts the watch.
    pub(crate) fn watched(&self, instance: &InstanceId, etag: &ETag, now: Duration) -> Duration {
        let key = (instance.clone(), etag.clone());
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        match seen.get(&key) {
            Some(first) => now.saturating_sub(first),
            None => {
                seen.note(key, now);
                Duration::ZERO
            }
        }
    }

    /// Stops watching an outbox (it was re-sent).
    pub(crate) fn forget(&self, instance: &InstanceId, etag: &ETag) {
        let key = (instance.clone(), etag.clone());
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .forget(&key);
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
        assert_eq!(w.watched(&i, &e1, s(100)), s(0));
        assert_eq!(w.watched(&i, &e1, s(110)), s(10));
        assert_eq!(w.watched(&i, &e2, s(120)), s(0), "another outbox");
        assert_eq!(w.watched(&i, &e1, s(131)), s(31));
        w.forget(&i, &e1);
        assert_eq!(w.watched(&i, &e1, s(140)), s(0));
    }
}
