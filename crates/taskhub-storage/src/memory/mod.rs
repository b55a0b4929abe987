//! The in-memory backend: for tests and simulation.
//!
//! [`MemoryStore`] keeps the whole task hub in one process behind a mutex and reads all time
//! from the [`Clock`] it is given, so a [`ManualClock`](crate::ManualClock) drives visibility
//! timeouts and delays deterministically. It behaves like the Azure Storage layout it models:
//!
//! * queues with visibility timeouts, dequeue counts, enqueue times, and receipts that change on
//!   every dequeue and extend;
//! * ETag-conditional rows, and filters and continuation tokens when listing instances;
//! * **no transactions**: a checkpoint follows the ordered steps of
//!   [`CheckpointStore`](crate::CheckpointStore), run by the shared driver
//!   ([`ordered_checkpoint`](crate::ordered_checkpoint), the code Azure runs too), each step a
//!   separate critical section with a yield point in between, so other tasks interleave with it
//!   just as they would with Azure;
//! * seeded fault injection ([`FaultPlan`], see [`faults`](crate::faults)) and per-operation
//!   call counters ([`Faults`]).
//!
//! The store is cheap to clone; clones share the same task hub.

mod backend;
mod checkpoint;
mod clear;
mod history;
mod processes;
mod queues;
mod state;
mod tables;
#[cfg(feature = "testing")]
mod testing;

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

pub use crate::faults::{FaultPlan, Faults, Injected, InjectedFault, Op, TearAfter, Trigger};
pub use backend::MemoryBackend;
pub use processes::MEMORY_SCHEMA_VERSION;

use crate::clock::Clock;
use crate::error::StorageResult;
use crate::faults::Call;
use crate::store::TaskHubStore;
use state::State;

/// How a memory store's queues behave (the constructors' options).
struct Queues {
    plan: FaultPlan,
    max_message_bytes: usize,
    max_dequeue_batch: usize,
    newest_first: bool,
}

impl Default for Queues {
    fn default() -> Self {
        Self {
            plan: FaultPlan::none(),
            max_message_bytes: crate::MAX_MESSAGE_BYTES,
            max_dequeue_batch: crate::MAX_DEQUEUE_BATCH,
            newest_first: false,
        }
    }
}

/// A task hub held in memory. See the [module docs](self).
#[derive(Clone)]
pub struct MemoryStore {
    shared: Arc<Shared>,
}

struct Shared {
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    faults: Faults,
    max_message_bytes: usize,
    max_dequeue_batch: usize,
    /// Dequeues hand out the newest visible messages first (not FIFO, as on Azure).
    newest_first: bool,
}

impl MemoryStore {
    /// An empty task hub (no hub info, no partitions, empty queues) on `clock`.
    #[must_use]
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self::with_faults(clock, FaultPlan::none())
    }

    /// An empty task hub on `clock` that injects the faults of `plan`.
    #[must_use]
    pub fn with_faults(clock: Arc<dyn Clock>, plan: FaultPlan) -> Self {
        Self::build(
            clock,
            Queues {
                plan,
                ..Queues::default()
            },
        )
    }

    /// An empty task hub on `clock` whose queues accept bodies of at most
    /// `max_message_bytes` and dequeues of at most `max_dequeue_batch` messages, and report
    /// those limits: a backend whose limits are not Azure Storage's, for tests of code that
    /// must go by the limits a backend reports.
    #[must_use]
    pub fn with_queue_limits(
        clock: Arc<dyn Clock>,
        max_message_bytes: usize,
        max_dequeue_batch: usize,
    ) -> Self {
        Self::build(
            clock,
            Queues {
                max_message_bytes,
                max_dequeue_batch,
                ..Queues::default()
            },
        )
    }

    /// An empty task hub on `clock` whose dequeues hand out the newest visible messages
    /// first: queues that are not FIFO (neither are Azure Storage's), for tests that must not
    /// depend on the order of dequeues across messages.
    #[must_use]
    pub fn newest_first(clock: Arc<dyn Clock>) -> Self {
        Self::build(
            clock,
            Queues {
                newest_first: true,
                ..Queues::default()
            },
        )
    }

    fn build(clock: Arc<dyn Clock>, queues: Queues) -> Self {
        Self {
            shared: Arc::new(Shared {
                clock,
                state: Mutex::new(State::default()),
                faults: Faults::new(queues.plan),
                max_message_bytes: queues.max_message_bytes,
                max_dequeue_batch: queues.max_dequeue_batch,
                newest_first: queues.newest_first,
            }),
        }
    }

    /// The fault injector and call counters of this store (shared by its clones).
    #[must_use]
    pub fn faults(&self) -> &Faults {
        &self.shared.faults
    }

    /// The partition rows as stored, read past the fault plan and without counting a call:
    /// for checkers in tests and simulations.
    #[must_use]
    pub fn partitions_snapshot(&self) -> Vec<crate::PartitionRow> {
        self.state().partitions.values().cloned().collect()
    }

    /// Makes the hub look as if a build writing schema `version` had migrated it (the memory
    /// backend's own is [`MEMORY_SCHEMA_VERSION`]): for tests of what a process
    /// does when the schema moves under it.
    pub fn set_stored_schema(&self, version: u32) {
        self.state().stored_schema = Some(version);
    }

    /// The clock this store reads.
    #[must_use]
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.shared.clock
    }

    /// Locks the state. Callers never hold the guard across an `.await`.
    fn state(&self) -> MutexGuard<'_, State> {
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a call of `op` and applies the planned faults that happen before it runs.
    async fn enter(&self, op: Op) -> StorageResult<Call> {
        self.shared.faults.enter(op, &*self.shared.clock).await
    }
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryStore")
            .field("clock", &self.shared.clock)
            .field("faults", &self.shared.faults)
            .finish_non_exhaustive()
    }
}

impl TaskHubStore for MemoryStore {
    fn backend_name(&self) -> &'static str {
        "memory"
    }
}
