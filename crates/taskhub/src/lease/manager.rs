//! One worker's leases: each pass reads the partitions table once and acts on it.
//!
//! A pass reads the hub info and the rows with one `lease_table` call, drops lost rows, then
//! renews, drains and hands over with every write of the pass in one `renew_partitions` call
//! (which Azure sends as one entity-group batch), claims with epoch + 1, asks for partitions,
//! and releases offline rows their owner abandoned. A ring of the work-item doorbell from the
//! host goes out as `doorbell + 1` on a held row in that pass's batch.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use taskhub_storage::{Clock, ETag, PartitionRow, PartitionStore, StorageError};
use tracing::{debug, info, warn};

use super::balance::{self, View};
use super::cadence;
use super::observe::Observations;
use super::{PartitionHost, Released};
use crate::settings::Settings;

/// The lease manager's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseConfig {
    /// This worker's name in lease rows; unique among live workers.
    pub worker: String,
    /// A row unchanged this long (by the observer's clock) may be claimed; an owner that has
    /// not renewed for this long stops on its own.
    pub lease_interval: Duration,
    /// How often owned rows are renewed.
    pub renew_interval: Duration,
    /// How often other workers' rows are examined: the table is read once per interval while
    /// it is quiet, twice while something is in motion, and in any case when a row would
    /// expire (see the `cadence` module).
    pub acquire_interval: Duration,
    /// The most partitions this worker holds.
    pub max_partitions: usize,
    /// How long a handover waits for in-flight work before releasing anyway (the work's
    /// checkpoints are then fenced by the new owner's epoch).
    pub drain_timeout: Duration,
}

impl LeaseConfig {
    /// The lease settings of `settings`, for the worker named `worker`.
    #[must_use]
    pub fn from_settings(settings: &Settings, worker: String) -> Self {
        Self {
            worker,
            lease_interval: settings.lease_interval,
            renew_interval: settings.lease_renew_interval,
            acquire_interval: settings.lease_acquire_interval,
            max_partitions: settings.max_partitions_per_worker,
            drain_timeout: settings.partition_drain_timeout,
        }
    }

    /// The normal time between passes (after a gap or a claim, or while something is in
    /// motion).
    #[must_use]
    pub fn pass_interval(&self) -> Duration {
        (self.acquire_interval / 2).min(self.renew_interval)
    }

    /// The time between passes while the table is quiet (continuous observation, nothing in
    /// motion): one read per acquire interval, and no less often than renewals are due.
    #[must_use]
    pub fn slow_interval(&self) -> Duration {
        self.acquire_interval
            .min(self.renew_interval)
            .max(self.pass_interval())
    }

    /// The time between passes while a handover is under way.
    #[must_use]
    pub fn fast_interval(&self) -> Duration {
        (self.acquire_interval / 4).min(Duration::from_secs(1))
    }

    /// The longest time between two successful reads of the partitions table that still
    /// counts as continuous observation at the normal rate: twice the [pass
    /// interval](Self::pass_interval). A longer gap (the worker was paused, the store did not
    /// answer) restarts every expiry clock (invariant 7; see the `observe` module).
    #[must_use]
    pub fn max_observation_gap(&self) -> Duration {
        self.pass_interval() * 2
    }

    /// The same bound after a pass that asked for `wait` before the next one: the wait (at
    /// least a pass interval) plus one pass interval of allowance. At the normal rate that is
    /// [`max_observation_gap`](Self::max_observation_gap); at the slow rate it is
    /// `slow_interval + pass_interval` (15 s with the defaults), so a pause or a late read
    /// of the same length (more than a pass interval) is a gap at either rate.
    #[must_use]
    pub fn max_observation_gap_after(&self, wait: Duration) -> Duration {
        wait.max(self.pass_interval()) + self.pass_interval()
    }
}

#[derive(Debug)]
struct Held {
    epoch: u64,
    etag: ETag,
    /// Monotonic time at which the last successful write of the row was sent.
    renewed_at: Duration,
    /// When the drain began, if the partition is being handed over.
    draining_since: Option<Duration>,
    /// Turns the host committed on the partition that no successful write has added to the
    /// row's count yet.
    unreported: u64,
}

/// What [`LeaseManager::acquire`] did.
struct Acquired {
    /// A handover to this worker is pending.
    pending: bool,
    /// A partition was claimed.
    claimed: bool,
}

/// What a manager holds right now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaseSnapshot {
    /// Held partitions and their epochs.
    pub held: BTreeMap<u32, u64>,
    /// Held partitions being drained for handover.
    pub draining: BTreeSet<u32>,
}

/// Holds one worker's partition leases. Call [`tick`](Self::tick) repeatedly, waiting the
/// returned duration in between; call [`release_all`](Self::release_all) on shutdown.
pub struct LeaseManager {
    store: Arc<dyn PartitionStore>,
    clock: Arc<dyn Clock>,
    config: LeaseConfig,
    held: BTreeMap<u32, Held>,
    seen: Observations,
    prohibited: Vec<String>,
}

impl std::fmt::Debug for LeaseManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseManager")
            .field("worker", &self.config.worker)
            .field("held", &self.held)
            .finish_non_exhaustive()
    }
}

/// Whether a pass wants the next one soon.
#[derive(Default)]
struct Pass {
    busy: bool,
    reread: bool,
    /// A partition was claimed (the table is changing: watch at the normal rate).
    claimed: bool,
}

impl LeaseManager {
    /// A manager that holds nothing yet.
    #[must_use]
    pub fn new(store: Arc<dyn PartitionStore>, clock: Arc<dyn Clock>, config: LeaseConfig) -> Self {
        Self {
            store,
            clock,
            held: BTreeMap::new(),
            seen: Observations::new(config.max_observation_gap()),
            config,
            prohibited: Vec::new(),
        }
    }

    /// This worker's name.
    #[must_use]
    pub fn worker(&self) -> &str {
        &self.config.worker
    }

    /// The settings.
    #[must_use]
    pub fn config(&self) -> &LeaseConfig {
        &self.config
    }

    /// What is held now.
    #[must_use]
    pub fn snapshot(&self) -> LeaseSnapshot {
        LeaseSnapshot {
            held: self.held.iter().map(|(p, h)| (*p, h.epoch)).collect(),
            draining: self
                .held
                .iter()
                .filter(|(_, h)| h.draining_since.is_some())
                .map(|(p, _)| *p)
                .collect(),
        }
    }

    /// One pass: read the table, drop lost partitions, renew, drain and hand over, claim and
    /// ask for partitions. Returns how long to wait before the next pass.
    pub async fn tick(&mut self, host: &mut dyn PartitionHost) -> Duration {
        // The hub info (prohibited workers, partition count) and the rows in one read, which
        // one request serves on a backend that keeps them together (Azure).
        let (info, rows) = match self.store.lease_table().await {
            Ok(table) => (table.info, table.rows),
            Err(e) => {
                warn!(worker = %self.config.worker, error = %e, "could not read the partitions table; expiry clocks restart");
                self.seen.interrupted();
                self.stop_unrenewed(host);
                return self.config.fast_interval();
            }
        };
        let partition_count = info.as_ref().map(|i| i.partition_count);
        if let Some(info) = info {
            self.prohibited = info.prohibited_workers;
        }
        self.observe(&rows);
        self.drop_lost(&rows, host);
        self.restart_stopped(host);
        host.observed(&rows, partition_count);
        let mut pass = self.maintain(&rows, host).await;
        if pass.reread {
            // A write of ours conflicted: learn at once whether the row changed hands.
            match self.store.list_partitions().await {
                Ok(rows) => {
                    self.observe(&rows);
                    self.drop_lost(&rows, host);
                }
                Err(_) => self.seen.interrupted(),
            }
        }
        self.stop_unrenewed(host);
        let acquired = self.acquire(&rows, host).await;
        pass.busy |= acquired.pending;
        pass.claimed = acquired.claimed;
        self.release_abandoned_offline(&rows).await;
        let cadence = if pass.busy || pass.reread {
            self.config.fast_interval()
        } else if pass.claimed || !self.quiet(&rows, partition_count) {
            self.config.pass_interval()
        } else {
            self.config.slow_interval()
        };
        let wait = self.wait(cadence, &rows);
        self.seen
            .set_max_gap(self.config.max_observation_gap_after(wait));
        wait
    }

    /// True if the table is quiet: nothing is in motion and the last read followed the one
    /// before without a gap. Rows of other owners need no closer watch: a pass is scheduled
    /// for the moment each would expire (see [`wait`](Self::wait) and the `cadence` module).
    fn quiet(&self, rows: &[PartitionRow], partition_count: Option<u32>) -> bool {
        !cadence::in_motion(rows, partition_count)
            && self.seen.continuous()
            && !self.seen.stale_at(self.clock.monotonic())
    }

    /// `cadence`, cut short to the next renewal due and the next expiry of a row this worker
    /// does not hold: another worker's (a takeover), and a free one too (a row handed over to
    /// a worker that never took it, or beyond this worker's fair share, becomes claimable by
    /// anyone when it expires). Offline rows without an owner never expire into anything.
    fn wait(&self, cadence: Duration, rows: &[PartitionRow]) -> Duration {
        let lease = self.config.lease_interval;
        let renewals = self
            .held
            .values()
            .map(|h| h.renewed_at + self.config.renew_interval);
        let expiries = rows
            .iter()
            .filter(|r| !self.held.contains_key(&r.partition))
            .filter(|r| !r.offline || r.owner.is_some())
            .filter_map(|r| self.seen.expires_at(r.partition, lease));
        cadence::wait_until_first(cadence, self.clock.monotonic(), renewals.chain(expiries))
    }

    /// Releases every held partition for immediate takeover (after the worker has stopped
    /// its work on them).
    pub async fn release_all(&mut self, host: &mut dyn PartitionHost) {
        let rows = self.store.list_partitions().await.unwrap_or_default();
        for (p, held) in std::mem::take(&mut self.held) {
            let unreported = held.unreported + host.take_turns(p);
            host.released(p, Released::Shutdown);
            let Some(row) = rows.iter().find(|r| r.partition == p) else {
                continue;
            };
            if row.owner.as_deref() != Some(self.config.worker.as_str()) || row.epoch != held.epoch
            {
                continue;
            }
            let released = PartitionRow {
                owner: None,
                next_owner: None,
                draining: false,
                updated_at: self.clock.now(),
                turns: row.turns.saturating_add(unreported),
                etag: None,
                ..row.clone()
            };
            if let Err(e) = self.store.put_partition(&released, row.etag.as_ref()).await {
                warn!(partition = p, error = %e, "could not release partition at shutdown");
            }
        }
    }

    /// Records a successful read, timed when it returned (a read that took long, or a pause
    /// since the last one, is a gap that restarts the expiry clocks).
    fn observe(&mut self, rows: &[PartitionRow]) {
        let read_at = self.clock.monotonic();
        if self.seen.stale_at(read_at) {
            debug!(worker = %self.config.worker, "observation gap (first read, pause, or store outage); expiry clocks restart");
        }
        self.seen.observe(rows, read_at);
    }

    /// A lease write failed without a conflict: the store did not answer, so this worker's
    /// view of who renewed is not continuous.
    fn write_failed(&mut self, partition: u32, what: &str, e: &StorageError) {
        warn!(worker = %self.config.worker, partition, error = %e, "{what}; expiry clocks restart");
        self.seen.interrupted();
    }

    fn me(&self) -> &str {
        &self.config.worker
    }

    fn banned(&self) -> bool {
        self.prohibited.iter().any(|w| w == self.me())
    }

    /// Drops held partitions whose row names another owner or epoch (or is gone).
    fn drop_lost(&mut self, rows: &[PartitionRow], host: &mut dyn PartitionHost) {
        let me = self.config.worker.clone();
        let mut lost = Vec::new();
        for (p, held) in &mut self.held {
            match rows.iter().find(|r| r.partition == *p) {
                Some(r) if r.owner.as_deref() == Some(me.as_str()) && r.epoch == held.epoch => {
                    // Another writer touched our row (a next-owner request, an operator flag):
                    // still ours, under the new ETag.
                    if let Some(etag) = &r.etag {
                        held.etag.clone_from(etag);
                    }
                }
                _ => lost.push(*p),
            }
        }
        for p in lost {
            self.held.remove(&p);
            info!(worker = %me, partition = p, "partition lost to another owner");
            host.released(p, Released::Lost);
        }
    }

    /// Restarts held partitions the host stopped processing on its own although their row
    /// is still this worker's under the same epoch (`drop_lost` ran first): a checkpoint the
    /// host took as fenced did not mean the lease was gone. Without this the worker would
    /// keep renewing a partition nobody processes, and its messages would wait forever.
    fn restart_stopped(&mut self, host: &mut dyn PartitionHost) {
        for (p, held) in &self.held {
            if held.draining_since.is_none() && !host.processing(*p) {
                warn!(worker = %self.config.worker, partition = p, epoch = held.epoch, "partition still held but not processed (a checkpoint was fenced while the lease stayed ours); processing it again");
                host.acquired(*p, held.epoch);
            }
        }
    }

    /// Stops partitions not renewed for a full lease interval.
    fn stop_unrenewed(&mut self, host: &mut dyn PartitionHost) {
        let now = self.clock.monotonic();
        let lease = self.config.lease_interval;
        let stale: Vec<u32> = self
            .held
            .iter()
            .filter(|(_, h)| now.saturating_sub(h.renewed_at) >= lease)
            .map(|(p, _)| *p)
            .collect();
        for p in stale {
            self.held.remove(&p);
            warn!(worker = %self.config.worker, partition = p, "lease not renewed in time; stopped processing the partition");
            host.released(p, Released::Expired);
        }
    }

    /// Renews held rows; drains and hands over the ones to give up.
    async fn maintain(&mut self, rows: &[PartitionRow], host: &mut dyn PartitionHost) -> Pass {
        let mut pass = Pass::default();
        let banned = self.banned();
        let held: Vec<u32> = self.held.keys().copied().collect();
        let mut writes: Vec<(PartitionRow, ETag)> = Vec::new();
        // A ring goes out on the first held row that is not being given up, renewed now
        // whether or not its renewal is due.
        let mut ring = host.take_ring();
        for p in held {
            let Some(row) = rows.iter().find(|r| r.partition == p) else {
                continue;
            };
            let now = self.clock.monotonic();
            let asked = row.next_owner.as_deref().is_some_and(|n| n != self.me());
            let give_up = banned || row.offline || asked;
            let Some(held) = self.held.get_mut(&p) else {
                continue;
            };
            held.unreported += host.take_turns(p);
            let write = if give_up {
                pass.busy = true;
                match held.draining_since {
                    None => {
                        held.draining_since = Some(now);
                        host.stop_dequeuing(p);
                        info!(worker = %self.config.worker, partition = p, next = ?row.next_owner, "draining partition for handover");
                        Some(self.row_update(row, true, true))
                    }
                    Some(since) => {
                        let drained = host.in_flight(p) == 0;
                        let timed_out = now.saturating_sub(since) >= self.config.drain_timeout;
                        if drained || timed_out {
                            if timed_out && !drained {
                                warn!(
                                    partition = p,
                                    "drain timed out; releasing (late checkpoints will be fenced)"
                                );
                            }
                            Some(PartitionRow {
                                owner: None,
                                draining: false,
                                next_owner: row.next_owner.clone().filter(|_| asked),
                                updated_at: self.clock.now(),
                                etag: None,
                                ..row.clone()
                            })
                        } else if now.saturating_sub(held.renewed_at) >= self.config.renew_interval
                        {
                            Some(self.row_update(row, true, true))
                        } else {
                            None
                        }
                    }
                }
            } else if ring || now.saturating_sub(held.renewed_at) >= self.config.renew_interval {
                let mut renewed = self.row_update(row, false, false);
                if std::mem::take(&mut ring) {
                    renewed.doorbell = row.doorbell.wrapping_add(1);
                }
                Some(renewed)
            } else {
                None
            };
            let Some(mut new) = write else { continue };
            let Some(held) = self.held.get(&p) else {
                continue;
            };
            new.turns = row.turns.saturating_add(held.unreported);
            writes.push((new, held.etag.clone()));
        }
        if ring {
            debug!(worker = %self.config.worker, "no held partition to ring the work-item doorbell on");
        }
        if writes.is_empty() {
            return pass;
        }
        // Every write of the pass in one call: one request on a backend that batches them.
        let sent = self.clock.monotonic();
        let results = match self.store.renew_partitions(&writes).await {
            Ok(results) => results,
            Err(e) => {
                let p = writes.first().map_or(0, |(row, _)| row.partition);
                self.write_failed(p, "could not renew partition leases", &e);
                return pass;
            }
        };
        for ((new, _), result) in writes.iter().zip(results) {
            let p = new.partition;
            match result {
                Ok(etag) => {
                    if new.owner.is_none() {
                        self.held.remove(&p);
                        info!(worker = %self.config.worker, partition = p, "partition handed over");
                        host.released(p, Released::HandedOver);
                    } else if let Some(held) = self.held.get_mut(&p) {
                        held.etag = etag;
                        held.renewed_at = sent;
                        held.unreported = 0;
                    }
                }
                Err(StorageError::Conflict { .. }) => pass.reread = true,
                Err(e) => self.write_failed(p, "could not renew partition lease", &e),
            }
        }
        pass
    }

    /// The row as this worker rewrites it to renew (and flag draining).
    fn row_update(&self, row: &PartitionRow, draining: bool, keep_next: bool) -> PartitionRow {
        PartitionRow {
            draining,
            next_owner: if keep_next {
                row.next_owner.clone()
            } else {
                None
            },
            updated_at: self.clock.now(),
            etag: None,
            ..row.clone()
        }
    }

    /// `row` in its next epoch under `owner` (`None`: free), as written now: fenced against
    /// the previous owner, with no next owner and not draining.
    fn next_epoch(&self, row: &PartitionRow, owner: Option<String>) -> PartitionRow {
        PartitionRow {
            owner,
            next_owner: None,
            epoch: row.epoch + 1,
            draining: false,
            updated_at: self.clock.now(),
            etag: None,
            ..row.clone()
        }
    }

    /// Clears the owner of offline rows that nobody renews: nobody claims an offline row, so
    /// one whose owner stopped holding it (its lease expired, or it was killed) before it
    /// drained and released the row would otherwise stay owned forever (and a retiring
    /// partition never count as retired). Judged like a claim (unchanged for a lease interval
    /// by this worker's clock), and fenced like one (epoch + 1).
    async fn release_abandoned_offline(&mut self, rows: &[PartitionRow]) {
        for row in rows {
            let abandoned = row.offline
                && row.owner.is_some()
                && !self.held.contains_key(&row.partition)
                && self.seen.unchanged_for(row.partition) >= self.config.lease_interval;
            if !abandoned {
                continue;
            }
            let released = self.next_epoch(row, None);
            match self.store.put_partition(&released, row.etag.as_ref()).await {
                Ok(_) => {
                    info!(worker = %self.config.worker, partition = row.partition, previous = ?row.owner, "released an offline partition its owner no longer renews");
                }
                Err(e) => {
                    debug!(partition = row.partition, error = %e, "could not release an abandoned offline partition")
                }
            }
        }
    }

    /// Claims and handover requests.
    async fn acquire(&mut self, rows: &[PartitionRow], host: &mut dyn PartitionHost) -> Acquired {
        let now = self.clock.monotonic();
        let lease = self.config.lease_interval;
        // Held partitions this worker keeps, and those it is draining to give up.
        let (mut keeping, mut releasing) = (BTreeSet::new(), BTreeSet::new());
        for (p, held) in &self.held {
            if held.draining_since.is_some() {
                releasing.insert(*p);
            } else {
                keeping.insert(*p);
            }
        }
        let seen = &self.seen;
        // Rows read before a pause (or before writes that stalled) show nothing about now.
        let current = !seen.stale_at(now);
        let expired = |p: u32| current && seen.unchanged_for(p) >= lease;
        let plan = balance::plan(&View {
            me: &self.config.worker,
            rows,
            keeping: &keeping,
            releasing: &releasing,
            expired: &expired,
            prohibited: &self.prohibited,
            max_partitions: self.config.max_partitions,
        });
        let mut pending = rows.iter().any(|r| {
            r.next_owner.as_deref() == Some(self.me()) && !self.held.contains_key(&r.partition)
        });
        let mut claimed_any = false;
        for row in rows_of(rows, &plan.claims) {
            let p = row.partition;
            let claimed = self.next_epoch(row, Some(self.config.worker.clone()));
            let sent = self.clock.monotonic();
            match self.store.put_partition(&claimed, row.etag.as_ref()).await {
                Ok(etag) => {
                    info!(worker = %self.config.worker, partition = p, epoch = claimed.epoch, previous = ?row.owner, "partition acquired");
                    self.held.insert(
                        p,
                        Held {
                            epoch: claimed.epoch,
                            etag,
                            renewed_at: sent,
                            draining_since: None,
                            unreported: 0,
                        },
                    );
                    host.acquired(p, claimed.epoch);
                    claimed_any = true;
                }
                Err(StorageError::Conflict { .. }) => pending = true,
                Err(e) => self.write_failed(p, "could not claim partition", &e),
            }
        }
        for row in rows_of(rows, &plan.requests) {
            let p = row.partition;
            let asked = PartitionRow {
                next_owner: Some(self.config.worker.clone()),
                etag: None,
                ..row.clone()
            };
            match self.store.put_partition(&asked, row.etag.as_ref()).await {
                Ok(_) => {
                    debug!(worker = %self.config.worker, partition = p, owner = ?row.owner, "asked for partition");
                    pending = true;
                }
                Err(StorageError::Conflict { .. }) => {
                    debug!(
                        partition = p,
                        "could not ask for partition: the row changed"
                    );
                }
                Err(e) => self.write_failed(p, "could not ask for partition", &e),
            }
        }
        Acquired {
            pending,
            claimed: claimed_any,
        }
    }
}

/// The rows of `partitions`, in their order (a partition with no row is passed over).
fn rows_of<'a>(
    rows: &'a [PartitionRow],
    partitions: &'a [u32],
) -> impl Iterator<Item = &'a PartitionRow> {
    partitions
        .iter()
        .filter_map(|&p| rows.iter().find(|r| r.partition == p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskhub_core::Timestamp;
    use taskhub_storage::memory::{FaultPlan, MemoryStore, Op, Trigger};
    use taskhub_storage::ManualClock;

    #[derive(Default)]
    struct Host {
        acquired: Vec<u32>,
    }

    impl PartitionHost for Host {
        fn acquired(&mut self, partition: u32, _: u64) {
            self.acquired.push(partition);
        }
        fn stop_dequeuing(&mut self, _: u32) {}
        fn in_flight(&self, _: u32) -> usize {
            0
        }
        fn released(&mut self, _: u32, _: Released) {}
    }

    fn config(worker: &str) -> LeaseConfig {
        LeaseConfig {
            worker: worker.into(),
            lease_interval: Duration::from_secs(30),
            renew_interval: Duration::from_secs(10),
            acquire_interval: Duration::from_secs(10),
            max_partitions: 16,
            drain_timeout: Duration::from_secs(20),
        }
    }

    /// One partition, claimed by `dead` (which never runs again), and an observer `b`.
    async fn setup(plan: FaultPlan) -> (ManualClock, Arc<MemoryStore>, LeaseManager) {
        let clock = ManualClock::new(Timestamp::from_millis(1_700_000_000_000));
        let store = Arc::new(MemoryStore::new(Arc::new(clock.clone())));
        store.create_hub(1, clock.now()).await.unwrap();
        let mut dead = LeaseManager::new(store.clone(), Arc::new(clock.clone()), config("dead"));
        let mut host = Host::default();
        dead.tick(&mut host).await;
        assert_eq!(host.acquired, [0]);
        store.faults().set_plan(plan);
        let b = LeaseManager::new(store.clone(), Arc::new(clock.clone()), config("b"));
        (clock, store, b)
    }

    /// Ticks `m` every 5 s from now until it acquires something or `limit` passes; returns the
    /// elapsed time at the acquiring tick.
    async fn ticks_until_claim(m: &mut LeaseManager, clock: &ManualClock, limit: u64) -> u64 {
        let start = clock.monotonic();
        let mut host = Host::default();
        loop {
            m.tick(&mut host).await;
            let elapsed = (clock.monotonic() - start).as_secs();
            if !host.acquired.is_empty() {
                return elapsed;
            }
            assert!(elapsed < limit, "no claim within {limit} s");
            clock.advance(Duration::from_secs(5));
        }
    }

    /// How long `b` of [`setup`] with `plan` ticks until it claims the dead owner's row.
    async fn claim_time(plan: FaultPlan) -> u64 {
        let (clock, _store, mut b) = setup(plan).await;
        ticks_until_claim(&mut b, &clock, 100).await
    }

    /// A plan under which the `n`th call of `op` fails as if the store did not answer.
    fn failing(op: Op, n: u64) -> FaultPlan {
        FaultPlan::none().fail(
            Trigger::nth_of(op, n),
            StorageError::Unavailable("injected".into()),
        )
    }

    #[tokio::test]
    async fn continuous_observation_claims_a_dead_owners_row_after_the_lease() {
        assert_eq!(claim_time(FaultPlan::none()).await, 30);
    }

    #[tokio::test]
    async fn a_pause_of_the_observer_restarts_its_expiry_clocks() {
        let (clock, _store, mut b) = setup(FaultPlan::none()).await;
        let mut host = Host::default();
        b.tick(&mut host).await;
        // Paused for longer than the lease: the row is unchanged, but b did not watch it.
        clock.advance(Duration::from_secs(40));
        // Watched from the first read after the pause: a full lease interval again.
        assert_eq!(ticks_until_claim(&mut b, &clock, 100).await, 30);
    }

    #[tokio::test]
    async fn a_gap_just_over_the_bound_restarts_and_one_at_the_bound_does_not() {
        let (clock, _store, mut b) = setup(FaultPlan::none()).await;
        assert_eq!(b.config().max_observation_gap(), Duration::from_secs(10));
        let mut host = Host::default();
        b.tick(&mut host).await;
        clock.advance(Duration::from_secs(10));
        // The second read is continuous and nothing is in motion: b asks for the slow rate
        // (10 s), after which the bound is 10 + 5 s.
        let wait = b.tick(&mut host).await;
        assert_eq!(wait, Duration::from_secs(10));
        assert_eq!(
            b.config().max_observation_gap_after(wait),
            Duration::from_secs(15)
        );
        clock.advance(Duration::from_secs(16));
        // Watched 10 s, then a gap of 16 s: the clock restarted, so 30 s more are needed.
        assert_eq!(ticks_until_claim(&mut b, &clock, 100).await, 30);
    }

    #[tokio::test]
    async fn a_failed_read_restarts_the_expiry_clocks() {
        // b's reads are calls 1, 2, 3, ... of list_partitions after the plan: the 4th fails
        // (at 15 s), so b watches afresh from its read at 20 s and claims at 50 s, not 30 s.
        assert_eq!(claim_time(failing(Op::ListPartitions, 4)).await, 50);
    }

    #[tokio::test]
    async fn a_failed_lease_write_restarts_the_expiry_clocks() {
        // b's reads all succeed, but its claim at 30 s fails without a conflict (the store
        // did not answer, so it may not have answered the owner either): b watches afresh
        // from its next read at 35 s and claims at 65 s.
        assert_eq!(claim_time(failing(Op::PutPartition, 1)).await, 65);
    }
}
