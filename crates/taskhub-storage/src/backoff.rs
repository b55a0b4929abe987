//! [`Backoff`]: the one policy for the waits between the attempts of a retried storage call,
//! and between idle polls of a queue, for the runtime and the backends alike.
//!
//! A policy is a step that starts at `first` and grows by `factor` (2 unless told) after each
//! wait, up to `cap`; each wait is drawn from its step with [`Jitter`] (none unless told), so
//! that clients throttled at the same moment spread their retries. A retry loop also stops:
//! after [`attempts`](Backoff::attempts) attempts in all, or at a deadline, either strictly
//! ([`deadline`](Backoff::deadline): no wait that would end at or past it) or with a last try
//! there ([`until`](Backoff::until)). [`Waits`] runs one sequence of waits; whoever runs it
//! sleeps (the runtime on its [`Clock`](crate::Clock)).
//!
//! ```
//! use std::time::Duration;
//! use taskhub_storage::backoff::{Backoff, Jitter};
//!
//! let ms = Duration::from_millis;
//! let policy = Backoff::new(ms(25), ms(100)).jitter(Jitter::UPPER_HALF).attempts(4);
//! let mut waits = policy.seeded(7);
//! let w: Vec<Duration> = std::iter::from_fn(|| waits.next_retry(Duration::ZERO)).collect();
//! assert_eq!(w.len(), 3); // four attempts: three waits
//! assert!(w[0] >= ms(12) && w[0] <= ms(25) && w[2] >= ms(50) && w[2] <= ms(100));
//! ```

use std::hash::BuildHasher as _;
use std::time::Duration;

/// How much of each wait is random: a wait is drawn uniformly from
/// `[step − step × per_mille / 1000, step]`, never longer than its step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Jitter {
    per_mille: u16,
}

impl Jitter {
    /// Every wait is its step.
    pub const NONE: Self = Self { per_mille: 0 };
    /// Waits uniform in `[step/2, step]` (requests to a shared service).
    pub const UPPER_HALF: Self = Self { per_mille: 500 };
    /// Waits uniform in `[3/4 × step, step]` (idle polling).
    pub const UPPER_QUARTER: Self = Self { per_mille: 250 };

    /// Waits uniform in `[step − step × per_mille / 1000, step]` (`per_mille` at most 1000).
    #[must_use]
    pub const fn per_mille(per_mille: u16) -> Self {
        Self {
            per_mille: if per_mille > 1000 { 1000 } else { per_mille },
        }
    }
}

/// When a retry loop stops at a deadline (measured from its first attempt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deadline {
    /// No wait that would end at or past it: give up instead.
    Strict(Duration),
    /// Retry until it has passed; the last wait is shortened to end there (at least 1 ms).
    LastTry(Duration),
}

/// The waits between attempts: see the [module docs](self). Build with [`new`](Self::new) and
/// the chained methods (all `const`, so a use can name its policy as a constant).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    first: Duration,
    factor: u32,
    cap: Duration,
    jitter: Jitter,
    attempts: Option<u32>,
    deadline: Option<Deadline>,
}

impl Backoff {
    /// Steps `first`, `2 × first`, … up to `cap`; no jitter, no limit on attempts or time.
    #[must_use]
    pub const fn new(first: Duration, cap: Duration) -> Self {
        Self {
            first,
            factor: 2,
            cap,
            jitter: Jitter::NONE,
            attempts: None,
            deadline: None,
        }
    }

    /// Each step is `factor` times the one before (at least 1), up to the cap.
    #[must_use]
    pub const fn factor(mut self, factor: u32) -> Self {
        self.factor = if factor == 0 { 1 } else { factor };
        self
    }

    /// Draws each wait from its step with `jitter`.
    #[must_use]
    pub const fn jitter(mut self, jitter: Jitter) -> Self {
        self.jitter = jitter;
        self
    }

    /// At most `attempts` attempts in all (the first and `attempts − 1` retries).
    #[must_use]
    pub const fn attempts(mut self, attempts: u32) -> Self {
        self.attempts = Some(attempts);
        self
    }

    /// No retry whose wait would end `deadline` or later after the first attempt: a request's
    /// time budget (the last attempt starts before it).
    #[must_use]
    pub const fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(Deadline::Strict(deadline));
        self
    }

    /// Retries until `deadline` has passed since the first attempt, the last wait shortened to
    /// end there (at least 1 ms): one more attempt is made at the deadline.
    #[must_use]
    pub const fn until(mut self, deadline: Duration) -> Self {
        self.deadline = Some(Deadline::LastTry(deadline));
        self
    }

    /// The first step.
    #[must_use]
    pub const fn first(&self) -> Duration {
        self.first
    }

    /// The largest step.
    #[must_use]
    pub const fn cap(&self) -> Duration {
        self.cap
    }

    /// A sequence of waits with a random seed (different in every call and process).
    #[must_use]
    pub fn waits(&self) -> Waits {
        let seed = std::collections::hash_map::RandomState::new().hash_one(std::process::id());
        self.seeded(seed)
    }

    /// A sequence of waits with a fixed seed: the same seed gives the same waits.
    #[must_use]
    pub fn seeded(&self, seed: u64) -> Waits {
        Waits {
            policy: *self,
            step: self.first.min(self.cap),
            retries: 0,
            rng: SplitMix64(seed),
        }
    }
}

/// One running sequence of waits of a [`Backoff`].
#[derive(Debug, Clone)]
pub struct Waits {
    policy: Backoff,
    /// The un-jittered wait of the next draw.
    step: Duration,
    /// Retries granted by [`next_retry`](Self::next_retry).
    retries: u32,
    rng: SplitMix64,
}

impl Waits {
    /// The wait before the next attempt of a retry loop, `elapsed` after its first attempt
    /// began; `None` when the policy's attempts or deadline say give up. The step then grows.
    pub fn next_retry(&mut self, elapsed: Duration) -> Option<Duration> {
        if let Some(attempts) = self.policy.attempts {
            if self.retries.saturating_add(1) >= attempts {
                return None;
            }
        }
        if let Some(Deadline::LastTry(deadline)) = self.policy.deadline {
            if elapsed >= deadline {
                return None;
            }
        }
        let wait = self.next_wait();
        let wait = match self.policy.deadline {
            None => wait,
            Some(Deadline::Strict(deadline)) => {
                if elapsed.saturating_add(wait) >= deadline {
                    return None;
                }
                wait
            }
            Some(Deadline::LastTry(deadline)) => wait
                .min(deadline.saturating_sub(elapsed))
                .max(Duration::from_millis(1)),
        };
        self.retries = self.retries.saturating_add(1);
        Some(wait)
    }

    /// The next wait (no limits asked); the step then grows.
    pub fn next_wait(&mut self) -> Duration {
        let wait = self.current();
        self.grow();
        wait
    }

    /// A wait drawn from the current step, which stays.
    pub fn current(&mut self) -> Duration {
        let step = u64::try_from(self.step.as_nanos()).unwrap_or(u64::MAX);
        let spread = u128::from(step) * u128::from(self.policy.jitter.per_mille) / 1000;
        let spread = u64::try_from(spread).unwrap_or(step);
        if spread == 0 {
            return self.step;
        }
        let low = step - spread;
        let offset = match spread.checked_add(1) {
            Some(n) => self.rng.next() % n,
            None => self.rng.next(),
        };
        Duration::from_nanos(low + offset)
    }

    /// Grows the step by the factor, up to the cap.
    pub fn grow(&mut self) {
        self.step = self
            .step
            .saturating_mul(self.policy.factor)
            .min(self.policy.cap);
    }

    /// Back to the first step (and no retries counted).
    pub fn reset(&mut self) {
        self.step = self.policy.first.min(self.policy.cap);
        self.retries = 0;
    }

    /// The policy these waits follow.
    #[must_use]
    pub fn policy(&self) -> &Backoff {
        &self.policy
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
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

    use super::*;

    const FIRST: Duration = Duration::from_millis(25);
    const MAX: Duration = Duration::from_secs(2);
    const JITTERED: Backoff = Backoff::new(FIRST, MAX).jitter(Jitter::UPPER_HALF);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn delays(seed: u64, n: usize) -> Vec<Duration> {
        let mut w = JITTERED.seeded(seed);
        (0..n).map(|_| w.next_wait()).collect()
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
    fn without_jitter_the_steps_grow_by_the_factor_up_to_the_cap() {
        let mut w = Backoff::new(ms(50), ms(1_000)).seeded(0);
        let got: Vec<Duration> = (0..7).map(|_| w.next_wait()).collect();
        assert_eq!(
            got,
            [
                ms(50),
                ms(100),
                ms(200),
                ms(400),
                ms(800),
                ms(1_000),
                ms(1_000)
            ]
        );
        let mut w = Backoff::new(ms(20), ms(10_000)).factor(4).seeded(0);
        let got: Vec<Duration> = (0..3).map(|_| w.next_wait()).collect();
        assert_eq!(got, [ms(20), ms(80), ms(320)]);
        // A first step over the cap starts at the cap.
        assert_eq!(
            Backoff::new(ms(500), ms(100)).seeded(0).next_wait(),
            ms(100)
        );
    }

    #[test]
    fn current_does_not_grow_and_reset_starts_over() {
        let mut w = Backoff::new(ms(10), ms(1_000)).seeded(0);
        w.next_wait();
        w.next_wait();
        assert_eq!(w.current(), ms(40));
        assert_eq!(w.current(), ms(40));
        w.grow();
        assert_eq!(w.current(), ms(80));
        w.reset();
        assert_eq!(w.next_wait(), ms(10));
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
    fn a_quarter_jitter_keeps_each_wait_within_three_quarters_of_its_step() {
        let policy = Backoff::new(ms(10), Duration::from_secs(30)).jitter(Jitter::UPPER_QUARTER);
        for seed in 0..100 {
            let mut w = policy.seeded(seed);
            let mut step = ms(10);
            for _ in 0..20 {
                let d = w.next_wait();
                assert!(d >= step * 3 / 4 && d <= step, "{d:?} for {step:?}");
                step = (step * 2).min(Duration::from_secs(30));
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
    fn unseeded_waits_differ() {
        let policy = Backoff::new(MAX, MAX).jitter(Jitter::UPPER_HALF);
        let a: Vec<Duration> = (0..4)
            .map({
                let mut w = policy.waits();
                move |_| w.next_wait()
            })
            .collect();
        let b: Vec<Duration> = (0..4)
            .map({
                let mut w = policy.waits();
                move |_| w.next_wait()
            })
            .collect();
        assert_ne!(a, b);
    }

    #[test]
    fn attempts_bound_the_retries() {
        let mut w = Backoff::new(ms(20), ms(320))
            .factor(4)
            .attempts(4)
            .seeded(0);
        let got: Vec<Duration> = std::iter::from_fn(|| w.next_retry(Duration::ZERO)).collect();
        assert_eq!(got, [ms(20), ms(80), ms(320)]);
        assert_eq!(w.next_retry(Duration::ZERO), None);
        w.reset();
        assert_eq!(w.next_retry(Duration::ZERO), Some(ms(20)));
        assert_eq!(
            Backoff::new(ms(1), ms(1))
                .attempts(1)
                .seeded(0)
                .next_retry(ms(0)),
            None
        );
        // No limit: retries for ever.
        let mut w = Backoff::new(ms(50), ms(5_000)).seeded(0);
        assert!((0..1_000).all(|_| w.next_retry(Duration::from_secs(3_600)).is_some()));
    }

    #[test]
    fn a_strict_deadline_gives_up_rather_than_wait_past_it() {
        let mut w = Backoff::new(ms(200), ms(5_000))
            .deadline(ms(1_000))
            .seeded(0);
        assert_eq!(w.next_retry(ms(0)), Some(ms(200)));
        assert_eq!(w.next_retry(ms(250)), Some(ms(400)));
        // 700 + 800 would end past the deadline.
        assert_eq!(w.next_retry(ms(700)), None);
        // Exactly at it is past it too.
        let mut w = Backoff::new(ms(200), ms(5_000))
            .deadline(ms(1_000))
            .seeded(0);
        assert_eq!(w.next_retry(ms(800)), None);
    }

    #[test]
    fn a_last_try_deadline_trims_the_last_wait_to_end_there() {
        let mut w = Backoff::new(ms(50), ms(2_000)).until(ms(1_000)).seeded(0);
        assert_eq!(w.next_retry(ms(0)), Some(ms(50)));
        assert_eq!(w.next_retry(ms(60)), Some(ms(100)));
        assert_eq!(w.next_retry(ms(900)), Some(ms(100)), "trimmed from 200 ms");
        assert_eq!(
            w.next_retry(Duration::from_micros(999_990)),
            Some(ms(1)),
            "never shorter than 1 ms"
        );
        assert_eq!(w.next_retry(ms(1_000)), None, "the deadline has passed");
    }

    #[test]
    fn a_huge_step_neither_overflows_nor_panics() {
        let mut w = Backoff::new(Duration::MAX, Duration::MAX)
            .jitter(Jitter::UPPER_HALF)
            .factor(u32::MAX)
            .seeded(3);
        for _ in 0..4 {
            let _ = w.next_wait();
        }
        let mut w = Backoff::new(ms(1), Duration::MAX)
            .factor(u32::MAX)
            .seeded(3);
        for _ in 0..4 {
            let _ = w.next_wait();
        }
        assert_eq!(Jitter::per_mille(5_000), Jitter::per_mille(1_000));
    }
}
