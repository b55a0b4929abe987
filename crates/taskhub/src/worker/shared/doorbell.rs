//! The work-item doorbell: how a worker that leaves work items on the shared queue gets other
//! workers to poll it now, although their idle work-item pollers wait up to
//! `max_work_item_polling_interval` between polls.
//!
//! Since claimed work items ([`claims`](crate::worker::activity::claims)), the work-item queue carries only
//! *overflow* (the work items of a turn beyond its worker's free activity slots) and orphans
//! (claims of a crashed worker, visible again after their visibility timeout). Overflow is
//! the burst other workers should join; orphans can wait a poll. So the pollers idle longer
//! than the control-queue pollers, and a turn that sends overflow **rings**: its worker's next
//! lease pass, brought forward (at most one ringing pass per pass interval), renews one of its
//! held rows with the row's `doorbell` count plus one, in the renewal batch it sends anyway.
//! Every other worker reads the partitions table every `lease_acquire_interval` at the
//! latest; when a row it does not hold shows a new count, its work-item poller polls at once
//! and starts its back-off over. A worker joins a burst within a pass interval (the ringing
//! pass) plus an acquire interval (its lease read): 5 + 10 s with the defaults, against the 15 s
//! of an idle poll before. Messages of the worker's own process still wake its poller at
//! once (`Signals`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use taskhub_storage::PartitionRow;
use tokio::sync::Notify;

/// One worker's doorbell: rings to send, and rings heard from other workers' rows.
#[derive(Debug, Default)]
pub(crate) struct Doorbell {
    /// A ring waits for the next lease pass.
    pending: AtomicBool,
    /// Wakes the lease loop for a ringing pass.
    wanted: Notify,
    /// Wakes the work-item poller: another worker rang.
    heard: Notify,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Monotonic time of the last pass that took a ring.
    last_rang: Option<Duration>,
    /// The doorbell count last seen on each row.
    seen: BTreeMap<u32, u64>,
}

impl Doorbell {
    /// This worker sent work items to the shared queue that it did not claim: ring at the next
    /// lease pass, and bring that pass forward.
    pub(crate) fn ring(&self) {
        self.pending.store(true, Ordering::SeqCst);
        self.wanted.notify_one();
    }

    /// True if a ring waits for a lease pass.
    pub(crate) fn pending(&self) -> bool {
        self.pending.load(Ordering::SeqCst)
    }

    /// Completes when a ring wants a lease pass (a permit is stored if nobody waits).
    pub(crate) async fn wanted(&self) {
        self.wanted.notified().await;
    }

    /// How long the lease loop should hold a ringing pass back at monotonic time `now`: until
    /// `min_gap` after the last one, so a stream of rings costs at most one extra pass per
    /// `min_gap`.
    pub(crate) fn hold(&self, now: Duration, min_gap: Duration) -> Duration {
        self.lock()
            .last_rang
            .map_or(Duration::ZERO, |t| (t + min_gap).saturating_sub(now))
    }

    /// Takes a pending ring for the lease pass under way at monotonic time `now`.
    pub(crate) fn take(&self, now: Duration) -> bool {
        let rang = self.pending.swap(false, Ordering::SeqCst);
        if rang {
            self.lock().last_rang = Some(now);
        }
        rang
    }

    /// Looks at the rows a lease pass read: a row `me` does not own whose count changed since
    /// the last pass means another worker rang, and the work-item poller is woken. Returns
    /// whether it was.
    pub(crate) fn observe(&self, rows: &[PartitionRow], me: &str) -> bool {
        let mut inner = self.lock();
        let mut rung = false;
        for row in rows {
            let before = inner.seen.insert(row.partition, row.doorbell);
            let foreign = row.owner.as_deref() != Some(me);
            if foreign && before.is_some_and(|b| b != row.doorbell) {
                rung = true;
            }
        }
        inner
            .seen
            .retain(|p, _| rows.iter().any(|r| r.partition == *p));
        drop(inner);
        if rung {
            // A stored permit: the poller polls even if it is busy right now.
            self.heard.notify_one();
        }
        rung
    }

    /// Completes when another worker's ring was seen.
    pub(crate) async fn heard(&self) {
        self.heard.notified().await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskhub_core::Timestamp;

    fn row(partition: u32, owner: &str, doorbell: u64) -> PartitionRow {
        PartitionRow {
            owner: Some(owner.into()),
            doorbell,
            ..PartitionRow::unowned(partition, Timestamp::from_millis(0))
        }
    }

    #[test]
    fn another_owners_new_count_is_heard_and_the_first_sight_and_own_rings_are_not() {
        let d = Doorbell::default();
        assert!(
            !d.observe(&[row(0, "a", 7), row(1, "me", 3)], "me"),
            "first sight"
        );
        assert!(
            !d.observe(&[row(0, "a", 7), row(1, "me", 4)], "me"),
            "own ring"
        );
        assert!(d.observe(&[row(0, "a", 8), row(1, "me", 4)], "me"));
        assert!(!d.observe(&[row(0, "a", 8), row(1, "me", 4)], "me"));
        // A claim carries the count over: no ring.
        assert!(!d.observe(&[row(0, "b", 8), row(1, "me", 4)], "me"));
    }

    #[test]
    fn rings_are_taken_once_and_held_back_to_one_per_gap() {
        let d = Doorbell::default();
        let s = Duration::from_secs;
        assert!(!d.take(s(1)));
        assert_eq!(d.hold(s(1), s(5)), s(0));
        d.ring();
        assert!(d.pending());
        assert!(d.take(s(2)));
        assert!(!d.pending());
        assert!(!d.take(s(3)), "taken");
        d.ring();
        assert_eq!(d.hold(s(3), s(5)), s(4));
        assert_eq!(d.hold(s(8), s(5)), s(0));
    }
}
