//! The worker's side of the lease manager: a control-queue poller per held partition, started
//! when the lease is acquired and stopped at once when it is lost, handed over or released (a
//! mover, `retire`, for a partition being removed), and the partition layout the last lease
//! pass saw.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use std::collections::BTreeSet;

use taskhub_storage::PartitionRow;

use super::control;
use super::retire;
use crate::hub::TaskHub;
use crate::lease::{LeaseConfig, LeaseManager, PartitionHost, Released};
use crate::worker::shared::placement::{Active, Layout, Placement};
use crate::worker::shared::Shared;

/// A worker name unique within this process: the configured name for the first worker, then
/// `name-2`, `name-3`, … (so a row under this name that a worker does not hold can only be
/// a dead former incarnation's).
pub(crate) fn unique_name(configured: &str) -> String {
    static STARTED: AtomicU64 = AtomicU64::new(0);
    match STARTED.fetch_add(1, Ordering::SeqCst) {
        0 => configured.to_owned(),
        n => format!("{configured}-{}", n + 1),
    }
}

/// Connects the lease manager to the worker.
pub(crate) struct Host(pub Arc<Shared>);

impl PartitionHost for Host {
    fn acquired(&mut self, partition: u32, epoch: u64) {
        let placement = &self.0.placement;
        let retiring = placement.retiring(partition);
        let (stop, stop_rx) = watch::channel(false);
        let in_flight = Arc::new(AtomicUsize::new(0));
        let previous = placement.held().insert(
            partition,
            Active {
                epoch,
                stop,
                in_flight: in_flight.clone(),
                turns: AtomicU64::new(0),
                retiring,
            },
        );
        crate::telemetry::record::lease(
            partition,
            previous.is_none(),
            previous.as_ref().is_none_or(|old| old.epoch != epoch),
        );
        if let Some(old) = previous {
            let _ = old.stop.send(true);
        }
        let lease = control::Lease {
            partition,
            epoch,
            stop: stop_rx,
            in_flight,
        };
        if retiring {
            placement.spawn_poller(retire::run(self.0.clone(), lease));
        } else {
            placement.spawn_poller(control::poll_partition(self.0.clone(), lease));
        }
    }

    fn observed(&mut self, rows: &[PartitionRow], partition_count: Option<u32>) {
        self.0.doorbell.observe(rows, &self.0.placement.name);
        let retiring: BTreeSet<u32> = rows
            .iter()
            .filter(|r| r.retiring)
            .map(|r| r.partition)
            .collect();
        // New placements use partitions below both the hub's count and the lowest retiring
        // row: an admin sets the count before it marks rows retiring, one by one, so a pass
        // may see either change first.
        let lowest_retiring = retiring.iter().next().copied();
        let rows_count = u32::try_from(rows.len()).ok();
        let live_count = [partition_count, lowest_retiring, rows_count]
            .into_iter()
            .flatten()
            .min();
        if let Some(count) = partition_count {
            self.0
                .hub
                .inner
                .partition_count
                .store(count, Ordering::Relaxed);
        }
        // Held partitions whose role changed get a poller of the other kind.
        let switch: Vec<(u32, u64)> = self
            .0
            .placement
            .held()
            .iter()
            .filter(|(p, a)| a.retiring != retiring.contains(p))
            .map(|(p, a)| (*p, a.epoch))
            .collect();
        self.0.placement.set_layout(Layout {
            retiring,
            live_count: live_count.filter(|n| *n > 0),
        });
        for (p, epoch) in switch {
            self.acquired(p, epoch);
        }
    }

    fn stop_dequeuing(&mut self, partition: u32) {
        if let Some(a) = self.0.placement.held().get(&partition) {
            let _ = a.stop.send(true);
        }
    }

    fn take_ring(&mut self) -> bool {
        self.0.doorbell.take(self.0.hub.clock().monotonic())
    }

    fn take_turns(&mut self, partition: u32) -> u64 {
        self.0
            .placement
            .held()
            .get(&partition)
            .map_or(0, |a| a.turns.swap(0, Ordering::Relaxed))
    }

    fn in_flight(&self, partition: u32) -> usize {
        self.0
            .placement
            .held()
            .get(&partition)
            .map_or(0, |a| a.in_flight.load(Ordering::SeqCst))
    }

    fn processing(&self, partition: u32) -> bool {
        self.0.placement.held().contains_key(&partition)
    }

    fn released(&mut self, partition: u32, why: Released) {
        let removed = self.0.placement.held().remove(&partition);
        if let Some(a) = removed {
            crate::telemetry::record::lease(partition, false, false);
            let _ = a.stop.send(true);
            tracing::debug!(partition, ?why, "stopped processing partition");
        }
    }
}

/// Runs the first lease pass (so a lone worker holds every free partition when `start`
/// returns), then keeps passing in the background until the worker stops; the task returns
/// the manager so that shutdown can release the leases.
pub(crate) async fn start_leases(shared: &Arc<Shared>) -> JoinHandle<LeaseManager> {
    let settings = shared.hub.settings();
    let config = LeaseConfig::from_settings(settings, shared.placement.name.clone());
    let store: Arc<dyn taskhub_storage::PartitionStore> = shared.hub.store().clone();
    let clock = shared.hub.clock().clone();
    let mut manager = LeaseManager::new(store, clock.clone(), config);
    let mut host = Host(shared.clone());
    let mut wait = manager.tick(&mut host).await;
    sample_queues(&shared.hub, &shared.placement).await;
    let mut stop = shared.lifecycle.stop.clone();
    let ring_gap = manager.config().pass_interval();
    tokio::spawn(async move {
        loop {
            if *stop.borrow() {
                return manager;
            }
            let due = clock.monotonic() + wait;
            tokio::select! {
                () = clock.sleep(wait) => {}
                () = host.0.placement.pass_wanted() => {}
                () = host.0.doorbell.wanted() => {
                    // A ring brings the pass forward, but no sooner than a pass interval after
                    // the last ringing pass (and never later than the pass was due anyway).
                    let now = clock.monotonic();
                    if !host.0.doorbell.pending() {
                        // A wake-up left over from a ring the last pass already took.
                        wait = due.saturating_sub(now);
                        continue;
                    }
                    let hold = host.0.doorbell.hold(now, ring_gap).min(due.saturating_sub(now));
                    if !hold.is_zero() {
                        tokio::select! {
                            () = clock.sleep(hold) => {}
                            _ = stop.changed() => return manager,
                        }
                    }
                }
                _ = stop.changed() => return manager,
            }
            wait = manager.tick(&mut host).await;
            sample_queues(&host.0.hub, &host.0.placement).await;
        }
    })
}

/// Sets the queue gauges of the held partitions and the work-item queue (if sampling is due:
/// on, and under `WhileWatched` someone looked lately).
async fn sample_queues(hub: &TaskHub, placement: &Placement) {
    if !crate::telemetry::sampling::sampling_due(hub) {
        return;
    }
    let held: Vec<u32> = placement.held().keys().copied().collect();
    crate::telemetry::sample(hub, held).await;
}
