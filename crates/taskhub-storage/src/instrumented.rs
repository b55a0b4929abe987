//! [`Instrumented`]: a store wrapper that counts the seam's calls (metrics as a wrapper, not
//! inside each backend).
//!
//! `Instrumented<S>` implements every seam trait by delegating to `S` and recording, per
//! [`Operation`], how many calls were made, how many failed, and how long they took in total
//! (wall time from the call to its answer, so it includes queueing inside the backend).
//! The counters live behind an `Arc`: take a [`StoreMetrics`] handle with
//! [`Instrumented::metrics`] before the store moves into an `Arc<dyn TaskHubStore>`, and read
//! [`StoreMetrics::snapshot`] whenever you like. Calls and errors are also counted through the
//! `metrics` facade as [`STORAGE_CALLS`] and [`STORAGE_ERRORS`] by `operation` (a no-op unless
//! the process installed a recorder).
//!
//! ```
//! use std::sync::Arc;
//! use taskhub_storage::instrumented::Instrumented;
//! use taskhub_storage::memory::MemoryStore;
//! use taskhub_storage::{Operation, SystemClock, TaskHubStore};
//!
//! let store = Instrumented::new(MemoryStore::new(Arc::new(SystemClock::new())));
//! let metrics = store.metrics();
//! let store: Arc<dyn TaskHubStore> = Arc::new(store);
//! # let _ = store;
//! assert_eq!(metrics.snapshot().calls(Operation::Checkpoint), 0);
//! ```

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::StorageResult;
use crate::operation::Operation;

/// The `metrics` counter of storage calls, by `operation` ([`Operation::name`]).
pub const STORAGE_CALLS: &str = "taskhub_storage_calls_total";
/// The `metrics` counter of storage calls that returned an error, by `operation`.
pub const STORAGE_ERRORS: &str = "taskhub_storage_errors_total";

#[derive(Debug, Default)]
struct Cell {
    calls: AtomicU64,
    errors: AtomicU64,
    nanos: AtomicU64,
}

#[derive(Debug)]
struct Counters {
    cells: [Cell; Operation::ALL.len()],
}

impl Counters {
    #[expect(
        clippy::indexing_slicing,
        reason = "Operation::index is the position in Operation::ALL, whose length sizes the array"
    )]
    fn cell(&self, op: Operation) -> &Cell {
        &self.cells[op.index()]
    }
}

/// A handle on the counters of an [`Instrumented`] store (shared by its clones).
#[derive(Debug, Clone)]
pub struct StoreMetrics {
    counters: Arc<Counters>,
}

impl StoreMetrics {
    fn new() -> Self {
        Self {
            counters: Arc::new(Counters {
                cells: std::array::from_fn(|_| Cell::default()),
            }),
        }
    }

    fn record(&self, op: Operation, ok: bool, took: Duration) {
        let cell = self.counters.cell(op);
        cell.calls.fetch_add(1, Ordering::Relaxed);
        // The same counts through the `metrics` facade (a no-op without a recorder).
        metrics::counter!(STORAGE_CALLS, "operation" => op.name()).increment(1);
        if !ok {
            cell.errors.fetch_add(1, Ordering::Relaxed);
            metrics::counter!(STORAGE_ERRORS, "operation" => op.name()).increment(1);
        }
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        cell.nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// The counters as they are now.
    #[must_use]
    pub fn snapshot(&self) -> MetricsSnapshot {
        MetricsSnapshot {
            ops: Operation::ALL.map(|op| {
                let cell = self.counters.cell(op);
                OpStats {
                    calls: cell.calls.load(Ordering::Relaxed),
                    errors: cell.errors.load(Ordering::Relaxed),
                    total: Duration::from_nanos(cell.nanos.load(Ordering::Relaxed)),
                }
            }),
        }
    }
}

/// The counters of one operation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpStats {
    /// Calls made (finished, successful or not).
    pub calls: u64,
    /// Calls that returned an error.
    pub errors: u64,
    /// Total wall time of the calls.
    pub total: Duration,
}

/// The counters of every operation at one moment. Subtract two snapshots with
/// [`since`](Self::since) to measure a stretch of work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsSnapshot {
    ops: [OpStats; Operation::ALL.len()],
}

impl MetricsSnapshot {
    /// The counters of `op`.
    #[must_use]
    #[expect(
        clippy::indexing_slicing,
        reason = "Operation::index is the position in Operation::ALL, whose length sizes the array"
    )]
    pub fn op(&self, op: Operation) -> OpStats {
        self.ops[op.index()]
    }

    /// Calls of `op`.
    #[must_use]
    pub fn calls(&self, op: Operation) -> u64 {
        self.op(op).calls
    }

    /// Calls of every operation together.
    #[must_use]
    pub fn total_calls(&self) -> u64 {
        self.ops.iter().map(|s| s.calls).sum()
    }

    /// What happened between `earlier` and this snapshot.
    #[must_use]
    pub fn since(&self, earlier: &Self) -> Self {
        let mut ops = self.ops;
        for (now, before) in ops.iter_mut().zip(&earlier.ops) {
            *now = OpStats {
                calls: now.calls.saturating_sub(before.calls),
                errors: now.errors.saturating_sub(before.errors),
                total: now.total.saturating_sub(before.total),
            };
        }
        Self { ops }
    }

    /// The operations with at least one call, with their counters.
    pub fn nonzero(&self) -> impl Iterator<Item = (Operation, OpStats)> + '_ {
        Operation::ALL
            .iter()
            .map(|op| (*op, self.op(*op)))
            .filter(|(_, s)| s.calls > 0)
    }
}

/// A store that delegates every call to `S` and counts it. See the [module docs](self).
#[derive(Debug)]
pub struct Instrumented<S> {
    inner: S,
    metrics: StoreMetrics,
}

impl<S> Instrumented<S> {
    /// Wraps `inner` with fresh counters.
    #[must_use]
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            metrics: StoreMetrics::new(),
        }
    }

    /// A handle on the counters; keep it to read them after the store moved.
    #[must_use]
    pub fn metrics(&self) -> StoreMetrics {
        self.metrics.clone()
    }

    /// The wrapped store.
    #[must_use]
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Runs `call` for `op` and counts it.
    async fn around<T, F>(&self, op: Operation, call: F) -> StorageResult<T>
    where
        F: Future<Output = StorageResult<T>>,
    {
        #[expect(
            clippy::disallowed_methods,
            reason = "a store call's latency is real elapsed time (on a ManualClock it would \
                      be zero); the wrapper has no clock"
        )]
        let started = Instant::now();
        let result = call.await;
        self.metrics.record(op, result.is_ok(), started.elapsed());
        result
    }
}

// Every seam call goes through `around`, the lease calls and both checkpoint calls as
// themselves.
forward_seam!(Instrumented<S>, around: around, lease_calls: forward, checkpoint: forward);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryStore;
    use crate::{NewQueueMessage, QueueName, SystemClock, TaskHubStore};
    use taskhub_core::Timestamp;

    #[test]
    fn operation_indexes_match_all() {
        for (i, op) in Operation::ALL.iter().enumerate() {
            assert_eq!(op.index(), i, "{op}");
        }
    }

    #[tokio::test]
    async fn counts_calls_and_errors_per_operation() {
        let store = Instrumented::new(MemoryStore::new(Arc::new(SystemClock::new())));
        let metrics = store.metrics();
        let store: Arc<dyn TaskHubStore> = Arc::new(store);
        let before = metrics.snapshot();
        store
            .create_hub(2, Timestamp::from_millis(0))
            .await
            .map_err(|e| e.to_string())
            .ok();
        let msg = NewQueueMessage {
            body: "x".into(),
            delay: Duration::ZERO,
        };
        for _ in 0..3 {
            assert!(store
                .enqueue(QueueName::WorkItems, vec![msg.clone()])
                .await
                .is_ok());
        }
        let got = store
            .dequeue(QueueName::WorkItems, 32, Duration::from_secs(30))
            .await;
        assert_eq!(got.map(|v| v.len()).ok(), Some(3));
        // A dequeue of 0 messages breaks the contract: an error, counted as one.
        assert!(store
            .dequeue(QueueName::WorkItems, 0, Duration::from_secs(1))
            .await
            .is_err());
        let stats = metrics.snapshot().since(&before);
        assert_eq!(stats.calls(Operation::CreateHub), 1);
        assert_eq!(stats.calls(Operation::Enqueue), 3);
        assert_eq!(stats.op(Operation::Dequeue).calls, 2);
        assert_eq!(stats.op(Operation::Dequeue).errors, 1);
        assert_eq!(stats.calls(Operation::Checkpoint), 0);
        assert_eq!(stats.total_calls(), 6);
        let names: Vec<&str> = stats.nonzero().map(|(op, _)| op.name()).collect();
        assert_eq!(names, ["enqueue", "dequeue", "create_hub"]);
        assert_eq!(store.backend_name(), "memory");
    }
}
