//! A bounded memory of keys and when this worker noted them (on its own monotonic clock).
//!
//! The worker remembers a few things for a while: the work items it has run lately
//! ([`run_ledger`](super::run_ledger)) and the pending outboxes it is watching before it
//! re-sends them ([`outbox_watch`](super::outbox_watch)). Neither may grow with the number of
//! instances (DESIGN invariant 5): a [`Recent`] keeps at most `capacity` keys, forgets those
//! noted more than `keep` before the newest, and the oldest first when full. Forgetting only
//! ever costs what the memory was for (a duplicate run caught, a re-send timed), never
//! correctness.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::time::Duration;

/// Keys with the monotonic time each was noted, oldest first, bounded.
#[derive(Debug)]
pub(crate) struct Recent<K> {
    at: HashMap<K, Duration>,
    /// Notes in order; an entry whose key was removed or noted again since is skipped.
    order: VecDeque<(Duration, K)>,
    capacity: usize,
    keep: Duration,
}

impl<K: Eq + Hash + Clone> Recent<K> {
    /// An empty memory of at most `capacity` keys, each kept for `keep` (at least) unless the
    /// capacity forces the oldest out.
    pub(crate) fn new(capacity: usize, keep: Duration) -> Self {
        Self {
            at: HashMap::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
            keep,
        }
    }

    /// When `key` was noted, if it is remembered.
    pub(crate) fn get(&self, key: &K) -> Option<Duration> {
        self.at.get(key).copied()
    }

    /// Notes `key` at `now` (a key noted before is noted again), then forgets what is older
    /// than `keep` and, past the capacity, the oldest.
    pub(crate) fn note(&mut self, key: K, now: Duration) {
        self.at.insert(key.clone(), now);
        self.order.push_back((now, key));
        while let Some((at, key)) = self.order.front() {
            let stale = self.at.get(key) != Some(at);
            let expired = now.saturating_sub(*at) > self.keep;
            // Skipped notes count here too, so the queue stays bounded with the map.
            let over = self.order.len() > self.capacity;
            if !(stale || expired || over) {
                break;
            }
            if let Some((at, key)) = self.order.pop_front() {
                if self.at.get(&key) == Some(&at) {
                    self.at.remove(&key);
                }
            }
        }
    }

    /// Forgets `key`.
    pub(crate) fn forget(&mut self, key: &K) {
        self.at.remove(key);
    }

    /// How many keys are remembered.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.at.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn keeps_at_most_capacity_oldest_out_first() {
        let mut r = Recent::new(3, 100 * S);
        for k in 0..10u32 {
            r.note(k, k * S);
        }
        assert_eq!(r.len(), 3);
        assert_eq!(r.get(&6), None);
        assert_eq!(r.get(&9), Some(9 * S));
        assert_eq!(r.get(&7), Some(7 * S));
    }

    #[test]
    fn forgets_what_is_older_than_keep() {
        let mut r = Recent::new(100, 10 * S);
        r.note(1u32, Duration::ZERO);
        r.note(2, 5 * S);
        r.note(3, 11 * S);
        assert_eq!(r.get(&1), None, "noted 11 s before the newest, kept 10 s");
        assert_eq!(r.get(&2), Some(5 * S));
    }

    #[test]
    fn stays_bounded_when_the_same_keys_come_back() {
        let mut r = Recent::new(4, 1000 * S);
        for i in 0..1000u32 {
            r.note(i % 2, i * S);
            if i % 3 == 0 {
                r.forget(&(i % 2));
            }
        }
        assert!(r.order.len() <= 4, "{} notes queued", r.order.len());
        assert!(r.len() <= 2);
        // The last note of each key is still there (999 % 3 == 0 forgot key 1).
        assert_eq!(r.get(&0), Some(998 * S));
        assert_eq!(r.get(&1), None);
    }
}
