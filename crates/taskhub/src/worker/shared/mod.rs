//! The leaf every stage of the worker uses, which imports none of them: the context of the
//! worker's steps ([`Shared`], grouped by concern, each part in its own file with its
//! methods), the counters ([`WorkerStats`]), a delivery and what it holds (`delivery`,
//! `orphans`, `held_item`), the pollers' timed dequeue and back-off (`poll`, `backoff`), and
//! the encoding and delays of outbound messages (`outbound`).
//!
//! The parts of [`Shared`]: `placement` (the worker's name, the partitions held with their
//! lease epochs, the layout seen, the control-queue pollers), `slots` (the prefetch buffer and
//! the turn and activity limits as semaphores), `lifecycle` (the stop signal, spawned tasks,
//! work items in flight for a timed-out shutdown, orphaned deliveries, the counters),
//! `watches` (the run ledger, the outbox and start watches, each bounded by `recent`),
//! `sessions` (the instances' sessions and the idle cap, `idle`) and `doorbell`; `Shared` itself
//! keeps the hub, the registry, the executor, and what combines them (`home`, `route`:
//! placement and the instance row), and `dispatch`, the intake's entry point.
//!
//! A step that needs one or two of these takes them, not `Shared`: the hub alone (encoding,
//! `refused::notice`, the retried commit, `row_repair::write`, the entity's sends, the poller,
//! a rewound child's messages, an event a turn sends), the hub and
//! `Lifecycle` (dead letters, `result_commit`, `local::fall_back`, the held item, a remote
//! activity's run), both as [`Returns`] (giving deliveries back or abandoning them,
//! `orchestration::redeliver`, and what needs no more: an undecided remote turn, a blamed
//! entity operation, a retired partition's retry, judging and refusing starts), settings only
//! (the version gate); a
//! helper that needs storage alone takes the trait it uses (`QueueStore` for timer delays, a
//! remote activity's give-back and an abandoned worker's, `InstanceStore` to re-home an
//! instance). The entity batch takes `&Shared`: it reads most parts (its remote wait the
//! sessions, slots and placement), as do the turn's decision and its preparation. Pollers,
//! sessions and the turn's run keep `Arc<Shared>`: they spawn tasks that outlive the call (a
//! turn's checkpoint starts the activities it claimed).

pub(crate) mod backoff;
pub(crate) mod delivery;
pub(crate) mod doorbell;
pub(crate) mod executor_errors;
pub(crate) mod held_item;
pub(crate) mod idle;
pub(crate) mod lifecycle;
pub(crate) mod orphans;
pub(crate) mod outbound;
pub(crate) mod outbox_watch;
pub(crate) mod placement;
pub(crate) mod poll;
pub(crate) mod recent;
pub(crate) mod run_ledger;
pub(crate) mod sessions;
pub(crate) mod slots;
pub(crate) mod start_watch;
mod stats;
pub(crate) mod watches;

use std::sync::Arc;

use taskhub_core::{InstanceId, Registry};

use crate::executor::RemoteExecutor;
use crate::hub::TaskHub;
use delivery::Delivery;
use doorbell::Doorbell;
use lifecycle::Lifecycle;
use placement::Placement;
use sessions::Sessions;
use slots::Slots;
pub use stats::WorkerStats;
use watches::Watches;

/// What the worker's steps share, grouped by concern. A step that needs one or two of the
/// groups takes them (and the storage trait it uses) rather than all of this.
pub(crate) struct Shared {
    /// The store, clock, settings and in-process wake-ups.
    pub hub: TaskHub,
    /// The orchestrations, activities and entities this worker runs.
    pub registry: Arc<Registry>,
    /// Where orchestrations and activities that are not in `registry` run, if anywhere.
    pub executor: Option<Arc<dyn RemoteExecutor>>,
    /// The partitions held and the layout seen (see `placement`).
    pub placement: Placement,
    /// The prefetch buffer and the turn and activity limits (see `slots`).
    pub slots: Slots,
    /// Stop signal, spawned tasks, work items in flight, orphans, counters (see `lifecycle`).
    pub lifecycle: Lifecycle,
    /// The run ledger and the outbox and start watches (see `watches`).
    pub watches: Watches,
    /// The instance sessions and the idle cap (see `sessions`).
    pub sessions: Sessions,
    /// Rings other workers' work-item pollers, and hears theirs (see `doorbell`).
    pub doorbell: Doorbell,
    /// Hands a batch to its instance's session (the intake's entry point, set by the worker):
    /// how a later stage feeds a session (an activity's result handed over in process)
    /// without importing the intake.
    pub dispatch: Dispatch,
}

/// The hub and the lifecycle: what returning deliveries to their queues (or to the dead
/// letters) uses (`orchestration::redeliver`), and a step that needs no more.
#[derive(Clone, Copy)]
pub(crate) struct Returns<'a> {
    /// The store, settings and clock.
    pub hub: &'a TaskHub,
    /// Dead letters, in-process fall-backs, the halt when the schema moves.
    pub lifecycle: &'a Lifecycle,
}

/// Gives a batch to the instance's running session, or starts one.
pub(crate) type Dispatch = fn(&Arc<Shared>, InstanceId, Vec<Delivery>);

impl Shared {
    /// What returning deliveries uses.
    pub(crate) fn returns(&self) -> Returns<'_> {
        Returns {
            hub: &self.hub,
            lifecycle: &self.lifecycle,
        }
    }

    /// The partition count of the live layout: partitions at or above it are being removed.
    pub(crate) fn live_partition_count(&self) -> u32 {
        self.placement
            .live_count()
            .unwrap_or_else(|| self.hub.partition_count())
    }

    /// `partition`, or the instance's place in the live layout if `partition` is being removed.
    pub(crate) fn home(&self, instance: &InstanceId, partition: u32) -> u32 {
        if self.placement.retiring(partition) {
            instance.partition(self.live_partition_count())
        } else {
            partition
        }
    }

    /// Where to send a message for `instance` that names partition `hint`: the hint, unless
    /// that partition is being removed (then the instance row decides, and if the row still
    /// names a removed partition, the live layout does).
    pub(crate) async fn route(
        &self,
        instance: &InstanceId,
        hint: u32,
    ) -> Result<u32, taskhub_storage::StorageError> {
        if !self.placement.retiring(hint) {
            return Ok(hint);
        }
        let row = self.hub.partition_of(instance).await?;
        Ok(self.home(instance, row))
    }
}
