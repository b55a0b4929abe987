//! Randomized exponential back-off for idle queue polling.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};
use std::time::{Duration, SystemTime};

/// A jitter seed for one poller of one worker: different per process (random hash keys, the
/// process ID and the time of day), per worker (its name) and per poller (`salt`), so pollers
/// of different workers, even started together with the same configuration, do not poll in
/// lockstep.
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

/// Doubles from `min` up to `max`, each wait jittered to 50–100 % of its nominal value so idle
/// workers do not poll in lockstep.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    min: Duration,
    max: Duration,
    current: Duration,
    rng: u64,
}

impl Backoff {
    pub(crate) fn new(min: Duration, max: Duration, seed: u64) -> Self {
        Self {
            min,
            max: max.max(min),
            current: min,
            rng: seed | 1,
        }
    }

    /// Forget past idleness: the next wait is short again.
    pub(crate) fn reset(&mut self) {
        self.current = self.min;
    }

    /// The next wait.
    pub(crate) fn next_wait(&mut self) -> Duration {
        let nominal = self.current;
        self.current = (self.current * 2).min(self.max);
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D);
        let frac = 0.5 + (r >> 11) as f64 / (1u64 << 53) as f64 / 2.0;
        nominal.mul_f64(frac)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_to_max_with_jitter_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(10), Duration::from_secs(30), 7);
        let waits: Vec<Duration> = (0..20).map(|_| b.next_wait()).collect();
        assert!(waits[0] >= Duration::from_millis(5) && waits[0] <= Duration::from_millis(10));
        assert!(waits.iter().all(|w| *w <= Duration::from_secs(30)));
        assert!(waits[19] >= Duration::from_secs(15), "{:?}", waits[19]);
        b.reset();
        assert!(b.next_wait() <= Duration::from_millis(10));
    }

    fn waits(seed: u64) -> Vec<Duration> {
        let mut b = Backoff::new(Duration::from_millis(10), Duration::from_secs(30), seed);
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
