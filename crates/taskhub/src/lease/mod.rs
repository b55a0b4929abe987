//! The lease manager (DESIGN §5, invariants 1 and 7): partition ownership on the partitions
//! table, the same code on every backend.
//!
//! Every pass (see `cadence`: once per `lease_acquire_interval` while the table
//! is quiet, twice as often while something is in motion, faster during a handover, and always
//! in time for the next renewal and the next expiry) a worker reads all partition rows and:
//!
//! * drops at once a partition whose row names another owner or another epoch, and one it has
//!   not managed to renew for a full `lease_interval` by its own clock; restarts one the host
//!   stopped on its own (a checkpoint fenced) while the row is still its own, same epoch;
//! * renews its own rows every `lease_renew_interval` with an ETag-conditional write;
//! * drains and hands over a partition for which another worker asked (next owner), one that
//!   went offline, or all of them if it is prohibited: it stops dequeuing, lets in-flight work
//!   finish for up to the drain timeout, then writes the row without owner;
//! * claims free rows, rows handed over to it, and rows whose ETag has not changed for a full
//!   `lease_interval` as measured by its own clock (never by another worker's timestamp),
//!   counting only time it spent observing: a pause of its own lease loop, a read that failed
//!   or came back late, or a lease write the store did not answer restarts those clocks
//!   (see `observe`);
//!   each claim increments the partition's epoch, which fences the previous owner's
//!   checkpoints in storage;
//! * asks over-loaded workers for partitions until it holds its fair share (`balance`).
//!
//! Reads at most a slow interval apart (`min(lease_acquire_interval, lease_renew_interval)`)
//! and a pass at each row's expiry bound the takeover of a dead worker's partitions by
//! `lease_interval + lease_acquire_interval` after its last renewal (see `cadence`).

mod balance;
mod cadence;
mod manager;
mod observe;

pub use manager::{LeaseConfig, LeaseManager, LeaseSnapshot};

/// Why a worker stopped processing a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Released {
    /// The row names another owner or epoch: someone took it (or an operator bumped it).
    Lost,
    /// Renewals failed for a full lease interval: the worker stopped on its own.
    Expired,
    /// Drained and handed over (to a next owner, or because it went offline or this worker
    /// was prohibited).
    HandedOver,
    /// Released at shutdown.
    Shutdown,
}

/// What the lease manager drives: the part of a worker that processes partitions.
pub trait PartitionHost: Send {
    /// Starts processing `partition`; checkpoints carry `epoch`.
    fn acquired(&mut self, partition: u32, epoch: u64);
    /// Stops dequeuing `partition` (a drain began); work already fetched may finish.
    fn stop_dequeuing(&mut self, partition: u32);
    /// Messages of `partition` fetched and not yet finished.
    fn in_flight(&self, partition: u32) -> usize;
    /// Stops processing `partition` at once and gives back its fetched messages.
    fn released(&mut self, partition: u32, why: Released);
    /// True if the host is processing `partition` (a poller runs for it). A host that
    /// stopped on its own without the manager releasing the row (a checkpoint it believed
    /// fenced) answers false, and the manager starts it again while the row is still this
    /// worker's under the same epoch. True by default.
    fn processing(&self, partition: u32) -> bool {
        let _ = partition;
        true
    }
    /// Turns the host committed on `partition` since the last call (the manager adds them to
    /// the row's count at its next write). None by default.
    fn take_turns(&mut self, partition: u32) -> u64 {
        let _ = partition;
        0
    }
    /// True once per ring: the host sent work items to the shared queue that it did not claim,
    /// and the manager should add one to the `doorbell` of a held row in this pass (see the
    /// worker's `doorbell` module). False by default.
    fn take_ring(&mut self) -> bool {
        false
    }
    /// Every pass shows the host the rows it read and the hub's partition count for new
    /// instances (live partition-count changes). Does nothing by default.
    fn observed(&mut self, rows: &[taskhub_storage::PartitionRow], partition_count: Option<u32>) {
        let _ = (rows, partition_count);
    }
}
