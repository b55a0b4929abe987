//! The lease manager's adaptive read cadence (`lease/cadence.rs`), driven by a manual clock:
//! each manager's next pass comes exactly when the wait its last pass returned runs out.
//!
//! * while every other owner renews, a worker reads the partitions table once per
//!   `lease_acquire_interval` (not twice) and still renews every `lease_renew_interval`;
//! * a dead worker's partition is claimed no earlier than `lease_interval` and no later than
//!   `lease_interval + slow_interval` after its last renewal, whatever the phase between the
//!   two workers' passes and whether or not the lease is a multiple of the read interval (the
//!   derivation is in `lease/cadence.rs`);
//! * a gap in the observer's own loop longer than the slow-rate bound restarts its expiry
//!   clocks (invariant 7), one within it does not.
//! * a dead worker's row bumped free by an operator is claimed at most a pass interval after
//!   the takeover of the worker's last row (free rows keep every worker at the normal rate).

use std::sync::Arc;
use std::time::Duration;

use taskhub::lease::{LeaseConfig, LeaseManager, PartitionHost, Released};
use taskhub_core::Timestamp;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{Clock, ManualClock, PartitionStore};

const LEASE: Duration = Duration::from_secs(30);
const RENEW: Duration = Duration::from_secs(10);
const ACQUIRE: Duration = Duration::from_secs(10);

#[derive(Default)]
struct Host {
    held: Vec<u32>,
}

impl PartitionHost for Host {
    fn acquired(&mut self, partition: u32, _: u64) {
        self.held.push(partition);
    }
    fn stop_dequeuing(&mut self, _: u32) {}
    fn in_flight(&self, _: u32) -> usize {
        0
    }
    fn released(&mut self, partition: u32, _: Released) {
        self.held.retain(|p| *p != partition);
    }
}

struct W {
    manager: LeaseManager,
    host: Host,
    next: Duration,
    alive: bool,
    /// (monotonic time of the pass, the wait it returned)
    passes: Vec<(Duration, Duration)>,
}

struct Sim {
    clock: ManualClock,
    store: Arc<MemoryStore>,
    workers: Vec<W>,
    lease: Duration,
}

fn config(worker: &str, lease_interval: Duration) -> LeaseConfig {
    LeaseConfig {
        worker: worker.into(),
        lease_interval,
        renew_interval: RENEW,
        acquire_interval: ACQUIRE,
        max_partitions: 16,
        drain_timeout: Duration::from_secs(20),
    }
}

impl Sim {
    async fn new(partitions: u32) -> Self {
        Self::with_lease(partitions, LEASE).await
    }

    async fn with_lease(partitions: u32, lease: Duration) -> Self {
        let clock = ManualClock::new(Timestamp::from_millis(1_700_000_000_000));
        let store = Arc::new(MemoryStore::new(Arc::new(clock.clone())));
        store.create_hub(partitions, clock.now()).await.unwrap();
        Self {
            clock,
            store,
            workers: Vec::new(),
            lease,
        }
    }

    /// Adds a worker whose first pass is `after` from now.
    fn add(&mut self, name: &str, after: Duration) -> usize {
        let manager = LeaseManager::new(
            self.store.clone(),
            Arc::new(self.clock.clone()),
            config(name, self.lease),
        );
        self.workers.push(W {
            manager,
            host: Host::default(),
            next: self.clock.monotonic() + after,
            alive: true,
            passes: Vec::new(),
        });
        self.workers.len() - 1
    }

    /// Runs every live worker's passes due up to `until` (monotonic), in time order (ties by
    /// index), and leaves the clock at `until`.
    async fn run_until(&mut self, until: Duration) {
        while let Some(i) = (0..self.workers.len())
            .filter(|i| self.workers[*i].alive)
            .min_by_key(|i| (self.workers[*i].next, *i))
        {
            let due = self.workers[i].next;
            if due > until {
                break;
            }
            let now = self.clock.monotonic();
            if due > now {
                self.clock.advance(due - now);
            }
            let w = &mut self.workers[i];
            let wait = w.manager.tick(&mut w.host).await;
            assert!(!wait.is_zero(), "a pass asked for no wait at all");
            w.passes.push((due, wait));
            w.next = due + wait;
        }
        let now = self.clock.monotonic();
        if until > now {
            self.clock.advance(until - now);
        }
    }

    fn now(&self) -> Duration {
        self.clock.monotonic()
    }
}

fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

#[tokio::test]
async fn a_quiet_table_is_read_once_per_acquire_interval_and_renewals_keep_their_pace() {
    for offset_ms in (0..10_000).step_by(1_250) {
        let mut sim = Sim::new(2).await;
        sim.add("a", Duration::ZERO);
        sim.add("b", Duration::from_millis(offset_ms));
        // Settle: b asks for half, a hands over, both hold one.
        sim.run_until(s(120)).await;
        assert_eq!(sim.workers[0].host.held.len(), 1, "offset {offset_ms} ms");
        assert_eq!(sim.workers[1].host.held.len(), 1, "offset {offset_ms} ms");
        let from = sim.now();
        let renewals_before: Vec<_> = sim.store.partitions_snapshot();
        sim.run_until(from + s(120)).await;
        for w in &sim.workers {
            let passes = w.passes.iter().filter(|(t, _)| *t >= from).count();
            // Two minutes at one read per 10 s: 12 passes (13 if one lands on each end).
            assert!(
                passes <= 13,
                "offset {offset_ms} ms: {} passes in 2 min: {:?}",
                passes,
                w.passes
            );
        }
        // Each row was renewed in time: its owner's last write is less than a renew interval
        // (plus this step) old, and the owner never stopped holding it.
        let rows = sim.store.partitions_snapshot();
        for (row, before) in rows.iter().zip(&renewals_before) {
            assert_eq!(row.owner, before.owner, "offset {offset_ms} ms");
            assert_eq!(row.epoch, before.epoch, "offset {offset_ms} ms");
            let age = sim.clock.now().as_millis() - row.updated_at.as_millis();
            assert!(
                age <= RENEW.as_millis() as u64,
                "offset {offset_ms} ms: {age} ms"
            );
        }
    }
}

#[tokio::test]
async fn a_dead_workers_partition_is_taken_over_within_lease_plus_the_slow_interval() {
    // Every phase between the two workers' passes, in half-second steps; with the default
    // lease, and with one that is not a multiple of the read interval (without the expiry
    // pass the claim would then wait for the first read after the age is full: up to
    // lease + 2 × slow interval).
    for (lease, offset_ms) in [LEASE, s(25)]
        .into_iter()
        .flat_map(|l| (0..10_000).step_by(500).map(move |o| (l, o)))
    {
        let mut sim = Sim::with_lease(2, lease).await;
        sim.add("a", Duration::ZERO);
        sim.add("b", Duration::from_millis(offset_ms));
        sim.run_until(s(120)).await;
        let a_holds = sim.workers[0].host.held.clone();
        assert_eq!(a_holds.len(), 1);
        let p = a_holds[0];
        // a dies right after its next pass (which renews its row: renewals are due every pass
        // at the slow rate, and the pass comes when one is due).
        let before = sim.store.partitions_snapshot()[p as usize].updated_at;
        let next = sim.workers[0].next;
        let mut last_renewal = None;
        while last_renewal.is_none() {
            let until = sim.workers[0].next;
            sim.run_until(until).await;
            let row = &sim.store.partitions_snapshot()[p as usize];
            if row.updated_at != before {
                last_renewal = Some(sim.now());
            }
            assert!(sim.now() < next + s(60));
        }
        let r = last_renewal.unwrap();
        sim.workers[0].alive = false;
        // b takes over: not before the lease, and within lease + slow interval.
        let mut taken = None;
        while taken.is_none() {
            let until = sim.workers[1].next;
            sim.run_until(until).await;
            if sim.workers[1].host.held.contains(&p) {
                taken = Some(sim.now());
            }
            assert!(
                sim.now() < r + s(120),
                "offset {offset_ms} ms: never taken over"
            );
        }
        let after = taken.unwrap() - r;
        assert!(
            after >= lease,
            "offset {offset_ms} ms: taken over {after:?} after the last renewal"
        );
        // slow_interval = min(acquire, renew) = 10 s.
        let bound = lease + ACQUIRE.min(RENEW);
        assert!(
            after <= bound,
            "lease {lease:?}, offset {offset_ms} ms: taken over {after:?} after the last renewal (bound {bound:?})"
        );
    }
}

#[tokio::test]
async fn a_gap_longer_than_the_slow_rate_bound_restarts_the_expiry_clocks() {
    // A dead owner's row; b watches it, quiet at first (b's reads at the slow rate while the
    // owner renewed). b's loop then stalls: by 5 s (a pass interval, within the bound of 15 s
    // after a 10 s wait) it still claims a lease after its first sighting; by 6 s its clocks
    // restart and the claim comes a full lease after the read that followed the stall.
    for (stall, restarts) in [(5, false), (6, true)] {
        let mut sim = Sim::new(1).await;
        sim.add("a", Duration::ZERO);
        sim.add("b", Duration::from_secs(3));
        sim.run_until(s(60)).await;
        assert_eq!(sim.workers[0].host.held, [0]);
        let (_, last_wait) = *sim.workers[1].passes.last().unwrap();
        assert_eq!(
            last_wait, ACQUIRE,
            "b reads at the slow rate while a renews"
        );
        // a dies now; b's next read sees a's last renewal (the row's age starts there).
        sim.workers[0].alive = false;
        let first_sighting = sim.workers[1].next;
        sim.run_until(first_sighting).await;
        // b's loop stalls before its next pass.
        sim.workers[1].next += s(stall);
        let resumed = sim.workers[1].next;
        let mut taken = None;
        while taken.is_none() {
            let until = sim.workers[1].next;
            sim.run_until(until).await;
            if sim.workers[1].host.held.contains(&0) {
                taken = Some(sim.now());
            }
            assert!(sim.now() < first_sighting + s(120));
        }
        let expected = if restarts {
            resumed + LEASE
        } else {
            first_sighting + LEASE
        };
        assert_eq!(taken.unwrap(), expected, "stall of {stall} s");
    }
}

#[tokio::test]
async fn a_bumped_row_of_a_dead_worker_is_taken_over_a_pass_after_its_last_row() {
    // Three workers share six partitions, two each; one dies right after renewing, and an
    // operator bumps one of its rows (free, no owner). The free row is claimed within a fair
    // share only, and the dead worker counts in the shares until its other row expires and is
    // taken over; the third worker, whose clocks restarted after a stall (so that it is not
    // the one whose expiry pass takes that row), must see the takeover to claim the free row. Free rows
    // keep the table in motion (the normal rate), so that costs at most a pass interval:
    // lease + slow interval + pass interval (45 s) after the last renewal.
    let mut worst = Duration::ZERO;
    // Phases between the three workers' passes, half a second apart.
    for (offset_b, offset_c) in (0..10_000)
        .step_by(500)
        .flat_map(|b| (0..10_000).step_by(500).map(move |c| (b, c)))
    {
        let mut sim = Sim::new(6).await;
        sim.add("a", Duration::ZERO);
        sim.add("b", Duration::from_millis(offset_b));
        sim.add("c", Duration::from_millis(offset_c));
        sim.run_until(s(180)).await;
        assert!(
            (0..3).all(|i| sim.workers[i].host.held.len() == 2),
            "balanced"
        );
        let d = 2;
        let held = sim.workers[d].host.held.clone();
        // d dies right after a pass that renewed its rows.
        let before = sim.store.partitions_snapshot()[held[0] as usize].updated_at;
        let mut r = None;
        while r.is_none() {
            let until = sim.workers[d].next;
            sim.run_until(until).await;
            if sim.store.partitions_snapshot()[held[0] as usize].updated_at != before {
                r = Some(sim.now());
            }
        }
        let r = r.unwrap();
        sim.workers[d].alive = false;
        let rows = sim.store.partitions_snapshot();
        let bumped = rows[held[1] as usize].clone();
        let free = taskhub_storage::PartitionRow {
            owner: None,
            next_owner: None,
            epoch: bumped.epoch + 1,
            etag: None,
            ..bumped.clone()
        };
        sim.store
            .put_partition(&free, bumped.etag.as_ref())
            .await
            .unwrap();
        // b's lease loop stalls past the slow-rate gap bound: its expiry clocks restart, so a
        // takes the dead worker's other row over, and b must see that to claim the free row.
        sim.workers[1].next += s(16);
        let live: Vec<usize> = (0..3).filter(|i| *i != d).collect();
        let mut taken = None;
        while taken.is_none() {
            let until = live.iter().map(|i| sim.workers[*i].next).min().unwrap();
            sim.run_until(until).await;
            if live
                .iter()
                .any(|i| sim.workers[*i].host.held.contains(&held[1]))
            {
                taken = Some(sim.now() - r);
            }
            assert!(sim.now() < r + s(180), "never taken over");
        }
        worst = worst.max(taken.unwrap());
    }
    let bound = LEASE + ACQUIRE.min(RENEW) + ACQUIRE / 2;
    assert!(
        worst <= bound,
        "the bumped row was taken over {worst:?} after the last renewal (bound {bound:?})"
    );
}
