//! Retry back-off with jitter: exponential and capped, each delay drawn at random from the upper
//! half of its step (`[step/2, step]`), so that clients throttled at the same moment (every
//! worker of a hub, after one 503) spread their retries instead of retrying in lock-step.
//!
//! The randomness is a SplitMix64 generator: seeded from the process's random hasher keys in
//! production, from a fixed seed in tests.

use std::hash::BuildHasher as _;
use std::time::Duration;

/// The delays between the attempts of one request.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    /// The un-jittered delay of the next retry.
    step: Duration,
    max: Duration,
    rng: SplitMix64,
}

impl Backoff {
    /// Steps `first`, `2 × first`, … up to `max`, with a random seed.
    pub(crate) fn new(first: Duration, max: Duration) -> Self {
        let seed = std::collections::hash_map::RandomState::new().hash_one(std::process::id());
        Self::seeded(first, max, seed)
    }

    /// The same with a fixed seed (tests: the same seed gives the same delays).
    pub(crate) fn seeded(first: Duration, max: Duration, seed: u64) -> Self {
        Self {
            step: first.min(max),
            max,
            rng: SplitMix64(seed),
        }
    }

    /// The next delay: uniform in `[step/2, step]`; the step then doubles, up to `max`.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let step = u64::try_from(self.step.as_nanos()).unwrap_or(u64::MAX);
        let low = step / 2;
        let spread = step - low;
        let offset = match spread.checked_add(1) {
            Some(n) => self.rng.next() % n,
            None => self.rng.next(),
        };
        self.step = (self.step * 2).min(self.max);
        Duration::from_nanos(low + offset)
    }
}

/// SplitMix64 (Steele, Lea and Flood): a tiny, well-mixed 64-bit generator.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIRST: Duration = Duration::from_millis(25);
    const MAX: Duration = Duration::from_secs(2);

    fn delays(seed: u64, n: usize) -> Vec<Duration> {
        let mut b = Backoff::seeded(FIRST, MAX, seed);
        (0..n).map(|_| b.next_delay()).collect()
    }

    #[test]
    fn splitmix64_gives_the_published_sequence() {
        // The reference outputs of SplitMix64 seeded with 1234567.
        let mut r = SplitMix64(1_234_567);
        assert_eq!(
            [r.next(), r.next(), r.next()],
            [
                6_457_827_717_110_365_317,
                3_203_168_211_198_807_973,
                9_817_491_932_198_370_423
            ]
        );
    }

    #[test]
    fn each_delay_lies_in_the_upper_half_of_its_doubling_capped_step() {
        for seed in 0..200 {
            let mut step = FIRST;
            for d in delays(seed, 12) {
                assert!(
                    d >= step / 2 && d <= step,
                    "seed {seed}: {d:?} outside [{:?}, {step:?}]",
                    step / 2
                );
                step = (step * 2).min(MAX);
            }
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_delays_and_other_seeds_differ() {
        assert_eq!(delays(7, 10), delays(7, 10));
        assert_ne!(delays(7, 10), delays(8, 10));
    }

    #[test]
    fn clients_retrying_together_spread_over_the_step() {
        // 1,000 clients (seeds) at the capped step of 2 s: their delays cover the range
        // [1 s, 2 s] rather than all being 2 s; each tenth of it gets some of them.
        let mut buckets = [0_u32; 10];
        for seed in 0..1_000 {
            let d = delays(seed, 10)[9];
            let tenth = ((d.as_secs_f64() - 1.0) * 10.0).floor() as usize;
            buckets[tenth.min(9)] += 1;
        }
        assert!(
            buckets.iter().all(|&n| (50..=150).contains(&n)),
            "{buckets:?}"
        );
    }

    #[test]
    fn unseeded_backoffs_differ() {
        let a: Vec<Duration> = {
            let mut b = Backoff::new(MAX, MAX);
            (0..4).map(|_| b.next_delay()).collect()
        };
        let b: Vec<Duration> = {
            let mut b = Backoff::new(MAX, MAX);
            (0..4).map(|_| b.next_delay()).collect()
        };
        assert_ne!(a, b);
    }
}
