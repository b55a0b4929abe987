//! Expiry by observation (invariant 7): a row's lease has run out when its ETag has not changed
//! for a full lease interval, as measured by this worker's own monotonic clock since it first
//! saw that ETag. No other worker's timestamp is ever compared with this worker's clock.
//!
//! Only time actually spent observing counts. Ages are taken at the moment a read of the
//! partitions table returned, and the observation is *continuous* only while successive reads
//! return at most [`LeaseConfig::max_observation_gap`](super::LeaseConfig::max_observation_gap)
//! apart (twice the pass interval). A **gap** is either of:
//!
//! * two successful reads returning further apart than that bound: the worker's lease loop was
//!   paused (SIGSTOP, a stalled VM, a starved thread) or the store did not answer in time;
//! * a read of the partitions table that failed, or a lease write of this worker's that failed
//!   for any reason other than a conflict (the store did not answer: while it could not answer
//!   this worker, it may not have answered the owners either).
//!
//! After a gap every row's age restarts from zero at the next successful read, and until that
//! read no row counts as unchanged at all. A worker that was paused, or that could not see
//! the store, therefore waits a full lease interval of fresh observation before it claims
//! anything by expiry — a stale clock never steals a live worker's lease.
//!
//! One refinement: a write that only asks for the partition (sets a next owner) changes the
//! ETag but is no renewal. A row whose owner, epoch, flags and `updated_at` are unchanged keeps
//! its age; `updated_at` serves here only as a token that every renewal rewrites, and is never
//! compared with a clock. Otherwise a worker asking a dead owner for a partition would delay
//! its takeover by another lease interval.

use std::collections::BTreeMap;
use std::time::Duration;

use taskhub_storage::{ETag, PartitionRow};

/// When this worker first saw each partition row's current ETag, and when it last read them.
#[derive(Debug)]
pub(crate) struct Observations {
    seen: BTreeMap<u32, Seen>,
    /// The longest time between two reads that still counts as continuous observation.
    max_gap: Duration,
    /// When the last successful read returned, unless a gap happened since.
    last_read: Option<Duration>,
    /// The last read followed the one before it without a gap.
    continuous: bool,
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
    /// No observations yet; reads further apart than `max_gap` are a gap.
    pub(crate) fn new(max_gap: Duration) -> Self {
        Self {
            seen: BTreeMap::new(),
            max_gap,
            last_read: None,
            continuous: false,
        }
    }

    /// From the next read on, reads further apart than `max_gap` are a gap (the bound follows
    /// the wait the lease loop asked for: see [`LeaseConfig::max_observation_gap_after`]).
    ///
    /// [`LeaseConfig::max_observation_gap_after`]: super::LeaseConfig::max_observation_gap_after
    pub(crate) fn set_max_gap(&mut self, max_gap: Duration) {
        self.max_gap = max_gap;
    }

    /// Records the rows of a successful read that returned at monotonic time `read_at`. If the
    /// previous read returned more than `max_gap` earlier, or a gap was reported since, every
    /// row's age restarts at `read_at`.
    pub(crate) fn observe(&mut self, rows: &[PartitionRow], read_at: Duration) {
        let continuous = self
            .last_read
            .is_some_and(|last| read_at.saturating_sub(last) <= self.max_gap);
        if !continuous {
            for seen in self.seen.values_mut() {
                seen.since = read_at;
            }
        }
        self.last_read = Some(read_at);
        self.continuous = continuous;
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
                            since: read_at,
                        },
                    );
                }
            }
        }
        self.seen
            .retain(|p, _| rows.iter().any(|r| r.partition == *p));
    }

    /// A gap in observation (a failed read, a lease write the store did not answer): no row
    /// counts as unchanged until the next read, and from that read every age starts over.
    pub(crate) fn interrupted(&mut self) {
        self.last_read = None;
    }

    /// Whether the last read was more than `max_gap` ago at monotonic time `now`: the lease
    /// loop was paused (or a write stalled) after it, so its rows are no basis for a claim.
    pub(crate) fn stale_at(&self, now: Duration) -> bool {
        self.last_read
            .is_none_or(|last| now.saturating_sub(last) > self.max_gap)
    }

    /// True if the last read followed the previous one without a gap (and none was reported
    /// since).
    pub(crate) fn continuous(&self) -> bool {
        self.last_read.is_some() && self.continuous
    }

    /// The monotonic time at which the row of `partition` will have gone unchanged for
    /// `lease`, if it stays unchanged and observation continues without a gap (`None` after a
    /// gap until the next read, or for a row never seen).
    pub(crate) fn expires_at(&self, partition: u32, lease: Duration) -> Option<Duration> {
        self.last_read?;
        self.seen.get(&partition).map(|seen| seen.since + lease)
    }

    /// How long the row of `partition` had gone unchanged when the last read returned, as far
    /// as this worker observed it without a gap (zero after a gap until the next read).
    pub(crate) fn unchanged_for(&self, partition: u32) -> Duration {
        let Some(last) = self.last_read else {
            return Duration::ZERO;
        };
        self.seen
            .get(&partition)
            .map_or(Duration::ZERO, |seen| last.saturating_sub(seen.since))
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
            turns: 0,
            doorbell: 0,
            etag: Some(ETag(etag.into())),
        }
    }

    const GAP: Duration = Duration::from_secs(10);

    #[test]
    fn age_restarts_when_the_etag_changes() {
        let mut o = Observations::new(GAP);
        let s = Duration::from_secs;
        o.observe(&[row(0, "a")], s(10));
        o.observe(&[row(0, "a")], s(20));
        o.observe(&[row(0, "a")], s(25));
        assert_eq!(o.unchanged_for(0), s(15));
        let mut renewed = row(0, "b");
        renewed.updated_at = Timestamp::from_millis(10_000);
        o.observe(&[renewed.clone()], s(30));
        o.observe(&[renewed], s(31));
        assert_eq!(o.unchanged_for(0), s(1));
    }

    #[test]
    fn a_next_owner_request_is_not_a_renewal() {
        let mut o = Observations::new(GAP);
        let s = Duration::from_secs;
        o.observe(&[row(0, "a")], s(0));
        o.observe(&[row(0, "a")], s(10));
        let mut asked = row(0, "b");
        asked.next_owner = Some("x".into());
        o.observe(&[asked.clone()], s(20));
        o.observe(&[asked], s(30));
        assert_eq!(o.unchanged_for(0), s(30));
        let mut renewed = row(0, "c");
        renewed.updated_at = Timestamp::from_millis(1);
        o.observe(&[renewed], s(31));
        assert_eq!(o.unchanged_for(0), s(0));
    }

    #[test]
    fn a_row_never_seen_counts_as_just_changed() {
        let mut o = Observations::new(GAP);
        assert_eq!(o.unchanged_for(3), Duration::ZERO);
        o.observe(&[row(0, "a")], Duration::from_secs(100));
        assert_eq!(o.unchanged_for(3), Duration::ZERO);
    }

    #[test]
    fn continuous_observation_ages_a_dead_owners_row_to_the_lease() {
        let mut o = Observations::new(GAP);
        let lease = Duration::from_secs(30);
        let mut t = Duration::from_secs(7);
        o.observe(&[row(0, "a")], t);
        while t < Duration::from_secs(37) {
            t += Duration::from_secs(5);
            o.observe(&[row(0, "a")], t);
        }
        assert!(o.unchanged_for(0) >= lease, "{:?}", o.unchanged_for(0));
    }

    #[test]
    fn a_gap_between_reads_restarts_every_age() {
        let mut o = Observations::new(GAP);
        let s = Duration::from_secs;
        o.observe(&[row(0, "a"), row(1, "x")], s(0));
        o.observe(&[row(0, "a"), row(1, "x")], s(10));
        assert_eq!(o.unchanged_for(0), s(10));
        // The loop was paused for 40 s: the rows look unchanged, but nobody watched them.
        o.observe(&[row(0, "a"), row(1, "x")], s(50));
        assert_eq!(o.unchanged_for(0), s(0));
        assert_eq!(o.unchanged_for(1), s(0));
        o.observe(&[row(0, "a"), row(1, "x")], s(55));
        assert_eq!(o.unchanged_for(0), s(5));
        // A read exactly at the bound is still continuous.
        o.observe(&[row(0, "a"), row(1, "x")], s(65));
        assert_eq!(o.unchanged_for(1), s(15));
    }

    #[test]
    fn a_failed_read_restarts_every_age() {
        let mut o = Observations::new(GAP);
        let s = Duration::from_secs;
        o.observe(&[row(0, "a")], s(0));
        o.observe(&[row(0, "a")], s(8));
        o.interrupted();
        assert_eq!(
            o.unchanged_for(0),
            s(0),
            "nothing counts until the next read"
        );
        o.observe(&[row(0, "a")], s(12));
        assert_eq!(o.unchanged_for(0), s(0));
        o.observe(&[row(0, "a")], s(20));
        assert_eq!(o.unchanged_for(0), s(8));
    }

    #[test]
    fn a_row_expires_a_lease_after_its_first_sighting_and_only_while_watched() {
        let mut o = Observations::new(GAP);
        let s = Duration::from_secs;
        o.observe(&[row(0, "a")], s(0));
        o.observe(&[row(0, "a")], s(5));
        assert_eq!(o.expires_at(0, s(30)), Some(s(30)));
        let mut renewed = row(0, "b");
        renewed.updated_at = Timestamp::from_millis(1);
        o.observe(&[renewed], s(10));
        assert_eq!(o.expires_at(0, s(30)), Some(s(40)));
        assert_eq!(o.expires_at(1, s(30)), None, "never seen");
        assert!(o.continuous());
        o.interrupted();
        assert!(!o.continuous());
        assert_eq!(
            o.expires_at(0, s(30)),
            None,
            "after a gap, until the next read"
        );
    }

    #[test]
    fn a_longer_bound_tolerates_longer_waits() {
        let mut o = Observations::new(GAP);
        let s = Duration::from_secs;
        o.observe(&[row(0, "a")], s(0));
        o.set_max_gap(s(15));
        o.observe(&[row(0, "a")], s(15));
        assert_eq!(o.unchanged_for(0), s(15));
        assert!(!o.stale_at(s(30)));
        assert!(o.stale_at(s(31)));
    }

    #[test]
    fn the_last_read_goes_stale_after_the_bound() {
        let mut o = Observations::new(GAP);
        let s = Duration::from_secs;
        assert!(o.stale_at(s(0)));
        o.observe(&[row(0, "a")], s(0));
        assert!(!o.stale_at(s(10)));
        assert!(o.stale_at(s(11)));
    }
}
