//! Expiry by observation (invariant 7): a row's lease has run out when its ETag has not changed
//! for a full lease interval, as measured by this worker's own monotonic clock since it first
//! saw that ETag. No other worker's timestamp is ever compared with this worker's clock.

use std::collections::BTreeMap;
use std::time::Duration;

use taskhub_storage::{ETag, PartitionRow};

/// When this worker first saw each partition row's current ETag.
#[derive(Debug, Default)]
pub(crate) struct Observations {
    seen: BTreeMap<u32, (ETag, Duration)>,
}

impl Observations {
    /// Records the rows read at monotonic time `now`.
    pub(crate) fn observe(&mut self, rows: &[PartitionRow], now: Duration) {
        for row in rows {
            let Some(etag) = row.etag.clone() else {
                continue;
            };
            match self.seen.get(&row.partition) {
                Some((seen, _)) if *seen == etag => {}
                _ => {
                    self.seen.insert(row.partition, (etag, now));
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
            .map_or(Duration::ZERO, |(_, since)| now.saturating_sub(*since))
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
        o.observe(&[row(0, "b")], s(30));
        assert_eq!(o.unchanged_for(0, s(31)), s(1));
    }

    #[test]
    fn a_row_never_seen_counts_as_just_changed() {
        let o = Observations::default();
        assert_eq!(o.unchanged_for(3, Duration::from_secs(100)), Duration::ZERO);
    }
}
