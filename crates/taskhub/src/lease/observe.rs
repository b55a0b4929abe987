//! Expiry by observation (invariant 7): a row's lease has run out when its ETag has not changed
//! for a full lease interval, as measured by this worker's own monotonic clock since it first
//! saw that ETag. No other worker's timestamp is ever compared with this worker's clock.
//!
//! One refinement: a write that only asks for the partition (sets a next owner) changes the
//! ETag but is no renewal. A row whose owner, epoch, flags and `updated_at` are unchanged keeps
//! its age; `updated_at` serves here only as a token that every renewal rewrites, and is never
//! compared with a clock. Otherwise a worker asking a dead owner for a partition would delay
//! its takeover by another lease interval.

use std::collections::BTreeMap;
use std::time::Duration;

use taskhub_storage::{ETag, PartitionRow};

/// When this worker first saw each partition row's current ETag.
#[derive(Debug, Default)]
pub(crate) struct Observations {
    seen: BTreeMap<u32, Seen>,
}

#[derive(Debug)]
struct Seen {
    etag: ETag,
    lease: LeaseToken,
    since: Duration,
}

/// What an owner's write changes and a next-owner request does not.
#[derive(Debug, PartialEq, Eq)]
struct LeaseToken {
    owner: Option<String>,
    epoch: u64,
    updated_at: u64,
    draining: bool,
    offline: bool,
    retiring: bool,
}

impl LeaseToken {
    fn of(row: &PartitionRow) -> Self {
        Self {
            owner: row.owner.clone(),
            epoch: row.epoch,
            updated_at: row.updated_at.as_millis(),
            draining: row.draining,
            offline: row.offline,
            retiring: row.retiring,
        }
    }
}

impl Observations {
    /// Records the rows read at monotonic time `now`.
    pub(crate) fn observe(&mut self, rows: &[PartitionRow], now: Duration) {
        for row in rows {
            let Some(etag) = row.etag.clone() else {
                continue;
            };
            let lease = LeaseToken::of(row);
            match self.seen.get_mut(&row.partition) {
                Some(seen) if seen.etag == etag => {}
                Some(seen) if seen.lease == lease => seen.etag = etag,
                _ => {
                    self.seen.insert(
                        row.partition,
                        Seen {
                            etag,
                            lease,
                            since: now,
                        },
                    );
                }
            }
        }
        self.seen
            .retain(|p, _| rows.iter().any(|r| r.partition == *p));
    }

    /// How long the row of `partition` has gone unchanged, as far as this worker knows.
    pub(crate) fn unchanged_for(&self, partition: u32, now: Duration) -> Duration {
        self.seen
            .get(&partition)
            .map_or(Duration::ZERO, |seen| now.saturating_sub(seen.since))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskhub_core::Timestamp;

    fn row(partition: u32, etag: &str) -> PartitionRow {
        PartitionRow {
            partition,
            owner: Some("w".into()),
            next_owner: None,
            epoch: 1,
            draining: false,
            retiring: false,
            offline: false,
            updated_at: Timestamp::from_millis(0),
            etag: Some(ETag(etag.into())),
        }
    }

    #[test]
    fn age_restarts_when_the_etag_changes() {
        let mut o = Observations::default();
        let s = Duration::from_secs;
        o.observe(&[row(0, "a")], s(10));
        o.observe(&[row(0, "a")], s(25));
        assert_eq!(o.unchanged_for(0, s(25)), s(15));
        let mut renewed = row(0, "b");
        renewed.updated_at = Timestamp::from_millis(10_000);
        o.observe(&[renewed], s(30));
        assert_eq!(o.unchanged_for(0, s(31)), s(1));
    }

    #[test]
    fn a_next_owner_request_is_not_a_renewal() {
        let mut o = Observations::default();
        let s = Duration::from_secs;
        o.observe(&[row(0, "a")], s(0));
        let mut asked = row(0, "b");
        asked.next_owner = Some("x".into());
        o.observe(&[asked], s(20));
        assert_eq!(o.unchanged_for(0, s(30)), s(30));
        let mut renewed = row(0, "c");
        renewed.updated_at = Timestamp::from_millis(1);
        o.observe(&[renewed], s(31));
        assert_eq!(o.unchanged_for(0, s(31)), s(0));
    }

    #[test]
    fn a_row_never_seen_counts_as_just_changed() {
        let o = Observations::default();
        assert_eq!(o.unchanged_for(3, Duration::from_secs(100)), Duration::ZERO);
    }
}
