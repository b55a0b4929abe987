//! How long this worker has itself seen a client's start wait for its instance row (issue 20,
//! item 1; see `orchestration/start_accept.rs`, `Verdict::Defer`).
//!
//! A deferred start is refused once it has waited a grace for its row. Its age must not be
//! judged by comparing the queue's enqueue time (the store's clock: on Azure, the service's)
//! with this worker's wall clock: a worker ahead by the grace would refuse every deferred start
//! at first sight (the start lost, the instance Pending for ever), one behind would look again
//! every few milliseconds. So the worker times the wait itself, as leases and torn outboxes are
//! timed (DESIGN invariant 7): from its own first sighting of the start's message ID, on its
//! own monotonic clock.
//!
//! Bounded (DESIGN invariant 5): at most [`CAPACITY`] starts are watched; one forgotten is
//! watched again from its next sighting (a later refusal, never an earlier one).

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use taskhub_core::MessageId;

use super::recent::Recent;

/// How long a client's start waits, uncounted, for its Pending row to land (see
/// `orchestration::start_accept::Verdict::Defer`), timed by this worker from its first sighting (see
/// [`StartWatch`]); one that waited longer is refused.
pub(crate) const START_ROW_GRACE: Duration = Duration::from_secs(300);

/// The most deferred starts watched at once.
pub(crate) const CAPACITY: usize = 4_096;

/// The deferred starts this worker has seen, with its own time of the first sighting.
#[derive(Debug)]
pub(crate) struct StartWatch {
    seen: Mutex<Recent<MessageId>>,
}

impl StartWatch {
    /// Watches starts for up to twice `grace` from their first sighting.
    pub(crate) fn new(grace: Duration) -> Self {
        Self {
            seen: Mutex::new(Recent::new(CAPACITY, grace.saturating_mul(2))),
        }
    }

    /// How long this worker has seen the start `id` wait, `now` being its monotonic time: zero
    /// at the first sighting, which starts the watch.
    pub(crate) fn waited(&self, id: &MessageId, now: Duration) -> Duration {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        match seen.get(id) {
            Some(first) => now.saturating_sub(first),
            None => {
                seen.note(id.clone(), now);
                Duration::ZERO
            }
        }
    }

    /// Stops watching a start (it was refused).
    pub(crate) fn forget(&self, id: &MessageId) {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .forget(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_waits_from_its_first_sighting_by_this_workers_clock() {
        let w = StartWatch::new(Duration::from_secs(300));
        let (a, b) = (MessageId::random(), MessageId::random());
        let s = Duration::from_secs;
        assert_eq!(w.waited(&a, s(1_000)), s(0));
        assert_eq!(w.waited(&a, s(1_010)), s(10));
        assert_eq!(w.waited(&b, s(1_020)), s(0), "another start");
        assert_eq!(w.waited(&a, s(1_301)), s(301));
        w.forget(&a);
        assert_eq!(
            w.waited(&a, s(1_302)),
            s(0),
            "watched afresh once forgotten"
        );
    }
}
