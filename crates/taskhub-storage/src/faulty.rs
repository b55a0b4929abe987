//! [`FaultyStore`]: the [`FaultPlan`] of the [`faults`](crate::faults) module around any store
//! (feature `testing`), so that every backend runs the same seeded-fault and torn-checkpoint
//! tests.
//!
//! Every call is counted and may fail before it runs, lose its response after it ran, or wait
//! first (on the clock given to [`FaultyStore::new`]). A torn checkpoint is stopped between two
//! steps of the wrapped backend's own ordered checkpoint: the wrapper hands the driver a
//! [`StepObserver`] through [`CheckpointStore::checkpoint_observed`]. A backend whose checkpoint
//! is one transaction (SQLite) has no steps: it is never torn (and no tear is recorded), only
//! failed, delayed or answered with a lost response.
//!
//! ```
//! use std::sync::Arc;
//! use taskhub_storage::faults::{FaultPlan, TearAfter};
//! use taskhub_storage::faulty::FaultyStore;
//! use taskhub_storage::memory::MemoryStore;
//! use taskhub_storage::{SystemClock, TaskHubStore};
//!
//! let clock = Arc::new(SystemClock::new());
//! let backend = Arc::new(MemoryStore::new(clock.clone()));
//! let store = FaultyStore::new(backend, clock, FaultPlan::none().tear_checkpoint(1, TearAfter::OutboundSent));
//! let store: Arc<dyn TaskHubStore> = Arc::new(store);
//! # let _ = store;
//! ```

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

use crate::checkpoint::{CheckpointOutcome, CheckpointRequest, CheckpointStore};
use crate::clock::Clock;
use crate::error::StorageResult;
use crate::faults::{FaultPlan, Faults, Op};
use crate::ordered_checkpoint::{BothObservers, NoObserver, StepObserver};
use crate::store::TaskHubStore;

/// A store that injects the faults of a [`FaultPlan`] into the calls it passes on to `S`.
/// See the [module docs](self).
pub struct FaultyStore<S: ?Sized> {
    inner: Arc<S>,
    clock: Arc<dyn Clock>,
    faults: Faults,
    observer: Option<Arc<dyn StepObserver>>,
}

impl<S: TaskHubStore + ?Sized> FaultyStore<S> {
    /// Wraps `inner`; planned delays wait on `clock`.
    #[must_use]
    pub fn new(inner: Arc<S>, clock: Arc<dyn Clock>, plan: FaultPlan) -> Self {
        Self {
            inner,
            clock,
            faults: Faults::new(plan),
            observer: None,
        }
    }

    /// Also tells `observer` after each step of every checkpoint (after the plan's own tear
    /// check), e.g. to pause the process at a chosen step.
    #[must_use]
    pub fn observe_steps(mut self, observer: Arc<dyn StepObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The fault injector and call counters (`set_plan` replaces the plan).
    #[must_use]
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// The wrapped store, for checks that must not go through the plan.
    #[must_use]
    pub fn inner(&self) -> &Arc<S> {
        &self.inner
    }
}

impl<S: ?Sized> FaultyStore<S> {
    /// Runs `call` under the plan's faults for `op`.
    async fn around<T, F>(&self, op: Op, call: F) -> StorageResult<T>
    where
        F: std::future::Future<Output = StorageResult<T>>,
    {
        let entered = self.faults.enter(op, &*self.clock).await?;
        entered.finish(call.await)
    }
}

impl<S: ?Sized> fmt::Debug for FaultyStore<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultyStore")
            .field("faults", &self.faults)
            .finish_non_exhaustive()
    }
}

// Every seam call but the checkpoint goes through `around`; `lease_table` and
// `renew_partitions` keep the trait's defaults, so the plan aims at the calls they make.
forward_seam!(FaultyStore<S: ?Sized>, around: around, lease_calls: default, checkpoint: own);

#[async_trait]
impl<S: CheckpointStore + ?Sized> CheckpointStore for FaultyStore<S> {
    async fn checkpoint(&self, request: CheckpointRequest) -> StorageResult<CheckpointOutcome> {
        self.checkpoint_observed(request, &NoObserver).await
    }

    /// The plan tears the wrapped backend's checkpoint first, then this store's own observer
    /// (see [`observe_steps`](FaultyStore::observe_steps)), then `observer` may stop it.
    async fn checkpoint_observed(
        &self,
        request: CheckpointRequest,
        observer: &dyn StepObserver,
    ) -> StorageResult<CheckpointOutcome> {
        let call = self.faults.enter(Op::Checkpoint, &*self.clock).await?;
        let tearing = self.faults.tearing(&call);
        let own: &dyn StepObserver = match &self.observer {
            Some(o) => o.as_ref(),
            None => &NoObserver,
        };
        let first = BothObservers(&tearing, own);
        let result = self
            .inner
            .checkpoint_observed(request, &BothObservers(&first, observer))
            .await;
        call.finish(result)
    }
}
