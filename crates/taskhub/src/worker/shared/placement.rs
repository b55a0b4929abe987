//! Where this worker stands in the hub's partition layout: the partitions it holds (with the
//! epoch of their lease), the layout the last lease pass saw (partitions being removed, the live
//! count), the control-queue pollers of the held partitions, and what a step reports back to
//! the lease manager (a turn counted on a partition, a lease found lost).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use taskhub_storage::LeaseFence;
use tokio::sync::{watch, Notify};
use tokio::task::JoinSet;

/// The partition layout as of the last lease pass.
#[derive(Debug, Default)]
pub(crate) struct Layout {
    /// Partitions being removed (or removed).
    pub retiring: BTreeSet<u32>,
    /// Partitions below this number are live.
    pub live_count: Option<u32>,
}

/// A partition this worker holds.
pub(crate) struct Active {
    /// The lease epoch: checkpoints carry it, and messages dequeued under it are processed
    /// only while it is current.
    pub epoch: u64,
    /// Stops the partition's poller.
    pub stop: watch::Sender<bool>,
    /// Messages fetched from the partition and not yet finished.
    pub in_flight: Arc<AtomicUsize>,
    /// Turns committed under this lease and not yet taken by the lease manager.
    pub turns: AtomicU64,
    /// True when its poller moves work away instead of running turns (removed partition).
    pub retiring: bool,
}

/// The partitions this worker holds and the layout it last saw.
pub(crate) struct Placement {
    /// This worker's name in lease rows.
    pub name: String,
    /// Partitions this worker holds, with the epoch of their lease.
    held: Mutex<HashMap<u32, Active>>,
    /// Partitions being removed or removed (from the last lease pass), and the live count.
    layout: Mutex<Layout>,
    /// Control-queue pollers, one per held partition.
    pollers: Mutex<JoinSet<()>>,
    /// Wakes the lease manager for a pass now (a checkpoint found the lease gone).
    lease_check: Notify,
}

impl Placement {
    /// A worker named `name` that holds nothing yet.
    pub(crate) fn new(name: String) -> Self {
        Self {
            name,
            held: Mutex::new(HashMap::new()),
            layout: Mutex::new(Layout::default()),
            pollers: Mutex::new(JoinSet::new()),
            lease_check: Notify::new(),
        }
    }

    /// The held partitions, locked.
    pub(crate) fn held(&self) -> MutexGuard<'_, HashMap<u32, Active>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The held partitions and their lease epochs.
    pub(crate) fn epochs(&self) -> BTreeMap<u32, u64> {
        self.held().iter().map(|(p, a)| (*p, a.epoch)).collect()
    }

    /// Counts a committed turn on `partition` (its lease row's count, added at the next
    /// renewal).
    pub(crate) fn count_turn(&self, partition: u32) {
        if let Some(a) = self.held().get(&partition) {
            a.turns.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records the layout a lease pass saw.
    pub(crate) fn set_layout(&self, layout: Layout) {
        *self.layout.lock().unwrap_or_else(PoisonError::into_inner) = layout;
    }

    /// Runs a partition's poller (control queue, or the mover of a removed partition).
    pub(crate) fn spawn_poller(&self, poller: impl Future<Output = ()> + Send + 'static) {
        self.pollers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .spawn(poller);
    }

    /// Completes when a step asks the lease manager for a pass now (see [`lease_lost`]).
    ///
    /// [`lease_lost`]: Self::lease_lost
    pub(crate) async fn pass_wanted(&self) {
        self.lease_check.notified().await;
    }

    /// The live partition count the last lease pass saw (`None`: no pass has seen a smaller
    /// one than the hub's count).
    pub(crate) fn live_count(&self) -> Option<u32> {
        self.layout
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .live_count
    }

    /// True if `partition` is being removed (or removed).
    pub(crate) fn retiring(&self, partition: u32) -> bool {
        self.layout
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retiring
            .contains(&partition)
    }

    /// A checkpoint under `epoch` of `partition` was fenced: storage has a newer epoch, so this
    /// worker lost the lease whatever its lease manager still believes. Stops processing the
    /// partition under that epoch at once (its poller stops; its fetched messages go back
    /// without counting as failed deliveries) and asks the lease manager for a pass now, so
    /// the partition is claimed again (or left to its new owner) without waiting a pass.
    pub(crate) fn lease_lost(&self, partition: u32, epoch: u64) {
        let mut held = self.held();
        if held.get(&partition).is_some_and(|a| a.epoch == epoch) {
            if let Some(a) = held.remove(&partition) {
                crate::telemetry::record::lease(partition, false, false);
                let _ = a.stop.send(true);
            }
        }
        drop(held);
        self.lease_check.notify_one();
    }

    /// The lease under which `partition` is processed now, if this worker holds it.
    pub(crate) fn fence(&self, partition: u32) -> Option<LeaseFence> {
        self.held().get(&partition).map(|a| LeaseFence {
            partition,
            epoch: a.epoch,
        })
    }

    /// Stops every control-queue poller (shutdown).
    pub(crate) fn stop_pollers(&self) {
        for a in self.held().values() {
            let _ = a.stop.send(true);
        }
    }

    /// Forgets every held partition (an abandoned worker: its leases are left to expire) and
    /// returns their numbers.
    pub(crate) fn forget_all(&self) -> Vec<u32> {
        std::mem::take(&mut *self.held()).into_keys().collect()
    }

    /// Takes the control-queue pollers out, leaving an empty set.
    pub(crate) fn take_pollers(&self) -> JoinSet<()> {
        std::mem::take(&mut *self.pollers.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(placement: &Placement, partition: u32, epoch: u64) -> watch::Receiver<bool> {
        let (stop, rx) = watch::channel(false);
        placement.held().insert(
            partition,
            Active {
                epoch,
                stop,
                in_flight: Arc::new(AtomicUsize::new(0)),
                turns: AtomicU64::new(0),
                retiring: false,
            },
        );
        rx
    }

    #[test]
    fn a_lost_lease_stops_its_epoch_only() {
        let placement = Placement::new("w".to_owned());
        let poller = hold(&placement, 3, 7);
        assert_eq!(placement.fence(3).map(|f| f.epoch), Some(7));
        placement.lease_lost(3, 6);
        assert_eq!(
            placement.fence(3).map(|f| f.epoch),
            Some(7),
            "an older epoch's loss leaves the current lease"
        );
        assert!(!*poller.borrow());
        placement.lease_lost(3, 7);
        assert!(placement.fence(3).is_none());
        assert!(*poller.borrow(), "the poller of the lost lease is stopped");
    }

    #[test]
    fn turns_are_counted_on_held_partitions_and_the_layout_is_read_back() {
        let placement = Placement::new("w".to_owned());
        let _poller = hold(&placement, 1, 1);
        placement.count_turn(1);
        placement.count_turn(2);
        let turns = placement
            .held()
            .get(&1)
            .map(|a| a.turns.load(Ordering::Relaxed));
        assert_eq!(turns, Some(1));
        assert_eq!(placement.epochs(), BTreeMap::from([(1, 1)]));
        assert_eq!(placement.live_count(), None);
        {
            let mut layout = placement
                .layout
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            layout.retiring.insert(5);
            layout.live_count = Some(5);
        }
        assert!(placement.retiring(5));
        assert!(!placement.retiring(1));
        assert_eq!(placement.live_count(), Some(5));
        assert_eq!(placement.forget_all(), vec![1]);
        assert!(placement.epochs().is_empty());
    }
}
