//! Randomized exponential back-off for idle queue polling, on the runtime's
//! [`queue_poll`](retries::queue_poll) policy: waits jittered to 75–100 % of the level, up to
//! the poller's cap, seeded per process, worker and poller ([`seed_for`]) so workers do not
//! poll in lockstep. The level moves only on evidence about other processes' messages: an
//! empty poll raises it, a blind poll (not after an in-process wake-up) that finds messages
//! resets it, a poll after a wake-up leaves it alone; so a worker whose traffic is its own
//! stops polling empty queues between its messages (each poll is paid for on Azure).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};
use std::time::{Duration, SystemTime};

use taskhub_storage::backoff::Waits;

use crate::retries;

/// A jitter seed for one poller of one worker: different per process (random hash keys, the
/// process ID and the time of day), per worker (its name) and per poller (`salt`), so pollers
/// of different workers, even started together with the same configuration, do not poll in
/// lockstep.
#[expect(
    clippy::disallowed_methods,
    reason = "the time of day is entropy for the seed here, not a decision about time (a \
              ManualClock would give every worker of a test the same seed)"
)]
pub(crate) fn seed_for(worker: &str, salt: u64) -> u64 {
    let mut h = RandomState::new().build_hasher();
    worker.hash(&mut h);
    salt.hash(&mut h);
    std::process::id().hash(&mut h);
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
        .hash(&mut h);
    h.finish()
}

/// The waits of an idle queue poller: the policy [`retries::queue_poll`] (10 ms doubling to
/// `max`, each wait jittered to 75–100 % of its step so idle workers do not poll in lockstep,
/// and an idle queue is polled about every 0.875 × `max`), moved by what polls find.
///
/// The level says how long the queue has gone without messages nobody announced. Messages this
/// process sends wake the poller through an in-process signal, so only other processes'
/// messages need blind polls; the level therefore moves only on evidence about those:
/// * an empty poll raises it ([`next_wait`](Self::next_wait));
/// * a blind poll (one not preceded by a wake-up) that finds messages resets it: another
///   process is sending ([`found`](Self::found));
/// * a poll after a wake-up that finds messages leaves it alone: they were this process's.
///
/// A poller whose traffic is all its own thus settles at a level near the gaps between its
/// messages and stops polling empty queues between them (on Azure each poll is a paid storage
/// operation), while another process's message still resets it.
///
/// No wait is shorter than [`DUTY`] times the last dequeue's duration: a poller spends at most
/// a fifth of its time polling. On SQLite that floor is below the minimum; on a remote store it
/// is a few round trips, so messages that trickle in (another process's puts, one request
/// each) are picked up several per dequeue instead of one.
#[derive(Debug, Clone)]
pub(crate) struct PollBackoff {
    waits: Waits,
    woken: bool,
    took: Duration,
}

/// The shortest wait, in dequeue durations.
const DUTY: u32 = 4;

impl PollBackoff {
    /// Waits of at most `max`, jittered from `seed` (see [`seed_for`]).
    pub(crate) fn new(max: Duration, seed: u64) -> Self {
        Self {
            waits: retries::queue_poll(max).seeded(seed),
            woken: false,
            took: Duration::ZERO,
        }
    }

    /// Forget past idleness: the next wait is short again.
    pub(crate) fn reset(&mut self) {
        self.waits.reset();
    }

    /// The wait before the next poll ended with an in-process wake-up: whatever the poll finds
    /// was announced.
    pub(crate) fn woken(&mut self) {
        self.woken = true;
    }

    /// How long the last dequeue took (the floor of every wait is [`DUTY`] times this).
    pub(crate) fn took(&mut self, took: Duration) {
        self.took = took;
    }

    /// A poll found messages: resets the level unless they were announced by a wake-up.
    pub(crate) fn found(&mut self) {
        if !std::mem::take(&mut self.woken) {
            self.reset();
        }
    }

    /// The next wait after an empty poll or a failure: the current level, which then doubles.
    pub(crate) fn next_wait(&mut self) -> Duration {
        self.woken = false;
        let wait = self.waits.next_wait();
        wait.max(self.floor())
    }

    /// The wait after a poll that found messages and drained the queue: the current level,
    /// unchanged (that poll was not idle).
    pub(crate) fn drained_wait(&mut self) -> Duration {
        self.woken = false;
        let wait = self.waits.current();
        wait.max(self.floor())
    }

    fn floor(&self) -> Duration {
        (self.took * DUTY).min(self.waits.policy().cap())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_to_max_with_jitter_and_resets() {
        let mut b = PollBackoff::new(Duration::from_secs(30), 7);
        let waits: Vec<Duration> = (0..20).map(|_| b.next_wait()).collect();
        assert!(waits[0] >= Duration::from_micros(7_500) && waits[0] <= Duration::from_millis(10));
        assert!(waits.iter().all(|w| *w <= Duration::from_secs(30)));
        assert!(
            waits[19] >= Duration::from_millis(22_500),
            "{:?}",
            waits[19]
        );
        b.reset();
        assert!(b.next_wait() <= Duration::from_millis(10));
    }

    #[test]
    fn announced_messages_do_not_reset_the_level_and_blind_finds_do() {
        let ms = Duration::from_millis;
        let mut b = PollBackoff::new(Duration::from_secs(30), 3);
        for _ in 0..5 {
            b.next_wait(); // five empty polls: the level is 320 ms
        }
        // A wake-up, then a poll that finds this process's messages and drains the queue: the
        // level stays (the wait is 240–320 ms, not 5–10 ms), and does not grow either.
        b.woken();
        b.found();
        for _ in 0..3 {
            let w = b.drained_wait();
            assert!(w >= ms(240) && w <= ms(320), "{w:?}");
        }
        // A blind poll (the wait ran out) that finds messages: another process sends; reset.
        b.found();
        assert!(b.drained_wait() <= ms(10));
        // A wake-up counts for the next poll only.
        b.next_wait();
        b.next_wait();
        b.woken();
        b.next_wait(); // that poll found nothing
        b.found(); // the following, blind one found something
        assert!(b.drained_wait() <= ms(10));
    }

    #[test]
    fn no_wait_is_shorter_than_four_dequeue_durations() {
        let ms = Duration::from_millis;
        let mut b = PollBackoff::new(ms(1_000), 5);
        b.took(ms(25));
        assert!(b.next_wait() >= ms(100));
        assert!(b.drained_wait() >= ms(100));
        b.took(ms(900)); // the floor is capped by the longest wait
        assert!(b.next_wait() <= ms(1_000));
        b.took(Duration::from_micros(200)); // SQLite: the floor is below the minimum
        b.reset();
        assert!(b.next_wait() <= ms(10));
    }

    fn waits(seed: u64) -> Vec<Duration> {
        let mut b = PollBackoff::new(Duration::from_secs(30), seed);
        (0..12).map(|_| b.next_wait()).collect()
    }

    #[test]
    fn two_workers_get_different_sequences() {
        // The same partition on two workers, and the same worker name configured twice (two
        // processes started from one configuration).
        assert_ne!(waits(seed_for("w-1", 1)), waits(seed_for("w-2", 1)));
        assert_ne!(waits(seed_for("w", 1)), waits(seed_for("w", 1)));
    }
}
