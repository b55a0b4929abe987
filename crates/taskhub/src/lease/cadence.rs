//! When the next lease pass runs: the adaptive read cadence.
//!
//! A worker reads the partitions table at one of three rates:
//!
//! * **slow**, once per [`LeaseConfig::slow_interval`] (`min(lease_acquire_interval,
//!   lease_renew_interval)`), while the table is *quiet*: the previous read was continuous
//!   (no gap, invariant 7) and nothing is in motion (see [`in_motion`]);
//! * **normal**, once per [`LeaseConfig::pass_interval`] (half the acquire interval), after a
//!   gap or a first read, while something is in motion (a free live row included), and after
//!   a pass that claimed a partition;
//! * **fast**, once per [`LeaseConfig::fast_interval`], while a handover is under way.
//!
//! Whatever the rate, the next pass comes no later than the moment a held row's renewal is
//! due (so renewals keep to `lease_renew_interval`), nor than the moment a row this worker does
//! not hold will have gone unchanged for a full `lease_interval` by its observation (the
//! **expiry pass**: an expired row is claimed when it expires, not up to a pass later; this
//! includes free rows, which become claimable beyond the fair share, or by others than the
//! next owner they were handed to, when they expire).
//!
//! **Takeover bound.** A dead owner's last write (or the release of a row handed over to a
//! worker that never takes it) lands at `r`. An observer's reads are at most
//! `slow_interval` apart, so its first read after `r` returns at some `t₁ ≤ r +
//! slow_interval` and starts the row's age there. From then on every pass schedules the
//! expiry pass for `t₁ + lease_interval`, whose read (returning no earlier) sees the full age,
//! and the claim follows in the same pass. The takeover therefore comes at most
//! `lease_interval + slow_interval ≤ lease_interval + lease_acquire_interval` after `r`, the
//! same bound as reading twice as often without the expiry pass (`lease_interval + 2 ×
//! pass_interval`: up to a pass to see the last write, up to a pass after the age is full),
//! and the bound the lease simulation asserts. Reading faster once a row looks unchanged
//! would not shorten it (the end is already exact, and the start is one read before anyone
//! can know), so an unchanged row does not change the rate. The cost is one extra read per
//! expiring row, only when an owner has stopped renewing.
//!
//! A free row (no owner: bumped by an operator, released at shutdown) is claimed only within
//! the claimer's fair share until it expires itself, and a dead worker still counts in the
//! fair share until its last row is taken over: then another worker must see that takeover
//! to claim the free row. Free rows therefore keep every worker at the normal rate, so that
//! second step costs at most a pass interval after the takeover (`lease_interval +
//! slow_interval + pass_interval` in all, as the `lease_interval + 3 × pass_interval` of
//! reading at the normal rate throughout).
//!
//! [`LeaseConfig::slow_interval`]: super::LeaseConfig::slow_interval
//! [`LeaseConfig::pass_interval`]: super::LeaseConfig::pass_interval
//! [`LeaseConfig::fast_interval`]: super::LeaseConfig::fast_interval

use std::time::Duration;

use taskhub_storage::PartitionRow;

/// True if something in the table is changing hands or shape, so the worker reads at the
/// normal rate at least: a live row without an owner (released at shutdown, bumped by an
/// operator, new after a resize: whoever may claim it within its fair share should see it
/// soon, and whether one may can change with any other row, e.g. when a dead worker's last
/// row is taken over and its fair share is freed), a handover request or a drain, a row
/// being removed (retiring), an offline row that still names an owner (its release is
/// pending), or a live row count different from the hub's partition count (a resize under
/// way).
pub(super) fn in_motion(rows: &[PartitionRow], partition_count: Option<u32>) -> bool {
    let live = rows.iter().filter(|r| !r.offline).count();
    let resizing = partition_count.is_some_and(|n| usize::try_from(n).is_ok_and(|n| n != live));
    resizing
        || rows.iter().any(|r| {
            (r.owner.is_none() && !r.offline)
                || r.next_owner.is_some()
                || r.draining
                || (r.retiring && !r.offline)
                || (r.offline && r.owner.is_some())
        })
}

/// The earliest of `deadlines` (monotonic times) still after `now`, as a wait from `now`,
/// capped at `cadence`.
pub(super) fn wait_until_first(
    cadence: Duration,
    now: Duration,
    deadlines: impl IntoIterator<Item = Duration>,
) -> Duration {
    deadlines
        .into_iter()
        .filter(|d| *d > now)
        .map(|d| d - now)
        .fold(cadence, Duration::min)
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskhub_core::Timestamp;

    fn rows(n: u32) -> Vec<PartitionRow> {
        (0..n)
            .map(|p| PartitionRow {
                owner: Some(format!("w{p}")),
                ..PartitionRow::unowned(p, Timestamp::from_millis(0))
            })
            .collect()
    }

    #[test]
    fn a_settled_table_is_not_in_motion() {
        assert!(!in_motion(&rows(4), Some(4)));
        assert!(!in_motion(&rows(4), None));
        // A removed partition, released and offline, stays so for good: not in motion.
        let mut r = rows(4);
        r[3].offline = true;
        r[3].owner = None;
        assert!(!in_motion(&r, Some(3)));
    }

    #[test]
    fn handovers_drains_removals_and_resizes_are_in_motion() {
        let mut r = rows(4);
        r[1].next_owner = Some("x".into());
        assert!(in_motion(&r, Some(4)));
        let mut r = rows(4);
        r[1].draining = true;
        assert!(in_motion(&r, Some(4)));
        let mut r = rows(4);
        r[3].retiring = true;
        assert!(in_motion(&r, Some(3)));
        let mut r = rows(4);
        r[3].offline = true;
        assert!(in_motion(&r, Some(3)), "offline but still owned");
        assert!(in_motion(&rows(4), Some(8)));
        let mut r = rows(4);
        r[2].owner = None;
        assert!(in_motion(&r, Some(4)), "a free live row");
    }

    #[test]
    fn the_wait_ends_at_the_first_deadline_still_ahead() {
        let s = Duration::from_secs;
        assert_eq!(wait_until_first(s(10), s(100), []), s(10));
        assert_eq!(wait_until_first(s(10), s(100), [s(107), s(104)]), s(4));
        // Deadlines already past (an expired row this worker does not claim) are ignored.
        assert_eq!(wait_until_first(s(10), s(100), [s(90), s(100)]), s(10));
        assert_eq!(wait_until_first(s(10), s(100), [s(130)]), s(10));
    }
}
