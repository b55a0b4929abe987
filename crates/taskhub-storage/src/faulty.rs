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
use std::time::Duration;

use async_trait::async_trait;
use taskhub_core::{InstanceId, Timestamp};

use crate::checkpoint::{CheckpointOutcome, CheckpointRequest, CheckpointStore};
use crate::clock::Clock;
use crate::dead_letters::{DeadLetter, DeadLetterStore};
use crate::error::StorageResult;
use crate::faults::{FaultPlan, Faults, Op};
use crate::history::{ETag, HistorySnapshot, HistoryStore};
use crate::instances::{Expect, InstancePage, InstanceQuery, InstanceRow, InstanceStore};
use crate::ordered_checkpoint::{BothObservers, NoObserver, StepObserver};
use crate::partitions::{HubInfo, PartitionRow, PartitionStore};
use crate::payloads::PayloadStore;
use crate::queue::{Dequeued, NewQueueMessage, QueueName, QueueStats, QueueStore, Receipt};
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

    /// Runs `call` under the plan's faults for `op`.
    async fn faulty<T, F>(&self, op: Op, call: F) -> StorageResult<T>
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

#[async_trait]
impl<S: TaskHubStore + ?Sized> QueueStore for FaultyStore<S> {
    async fn enqueue(&self, queue: QueueName, messages: Vec<NewQueueMessage>) -> StorageResult<()> {
        self.faulty(Op::Enqueue, self.inner.enqueue(queue, messages))
            .await
    }
    async fn dequeue(
        &self,
        queue: QueueName,
        max: usize,
        visibility: Duration,
    ) -> StorageResult<Vec<Dequeued>> {
        self.faulty(Op::Dequeue, self.inner.dequeue(queue, max, visibility))
            .await
    }
    async fn delete(&self, queue: QueueName, receipt: &Receipt) -> StorageResult<()> {
        self.faulty(Op::Delete, self.inner.delete(queue, receipt))
            .await
    }
    async fn abandon(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        delay: Duration,
    ) -> StorageResult<()> {
        self.faulty(Op::Abandon, self.inner.abandon(queue, receipt, delay))
            .await
    }
    async fn release(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        delay: Duration,
    ) -> StorageResult<()> {
        self.faulty(Op::Release, self.inner.release(queue, receipt, delay))
            .await
    }
    async fn extend(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        visibility: Duration,
    ) -> StorageResult<Receipt> {
        self.faulty(Op::Extend, self.inner.extend(queue, receipt, visibility))
            .await
    }
    async fn stats(&self, queue: QueueName) -> StorageResult<QueueStats> {
        self.faulty(Op::Stats, self.inner.stats(queue)).await
    }
    fn max_message_bytes(&self) -> usize {
        self.inner.max_message_bytes()
    }
    fn max_dequeue_batch(&self) -> usize {
        self.inner.max_dequeue_batch()
    }
    fn max_delay(&self) -> Duration {
        self.inner.max_delay()
    }
    fn delay_granularity(&self) -> Duration {
        self.inner.delay_granularity()
    }
}

#[async_trait]
impl<S: TaskHubStore + ?Sized> HistoryStore for FaultyStore<S> {
    async fn load_history(&self, instance: &InstanceId) -> StorageResult<Option<HistorySnapshot>> {
        self.faulty(Op::LoadHistory, self.inner.load_history(instance))
            .await
    }
    async fn delete_history(&self, instance: &InstanceId) -> StorageResult<()> {
        self.faulty(Op::DeleteHistory, self.inner.delete_history(instance))
            .await
    }
}

#[async_trait]
impl<S: TaskHubStore + ?Sized> InstanceStore for FaultyStore<S> {
    async fn get_instance(&self, instance: &InstanceId) -> StorageResult<Option<InstanceRow>> {
        self.faulty(Op::GetInstance, self.inner.get_instance(instance))
            .await
    }
    async fn put_instance(&self, row: &InstanceRow, expect: Expect) -> StorageResult<ETag> {
        self.faulty(Op::PutInstance, self.inner.put_instance(row, expect))
            .await
    }
    async fn list_instances(&self, query: &InstanceQuery) -> StorageResult<InstancePage> {
        self.faulty(Op::ListInstances, self.inner.list_instances(query))
            .await
    }
    async fn delete_instance(&self, instance: &InstanceId) -> StorageResult<bool> {
        self.faulty(Op::DeleteInstance, self.inner.delete_instance(instance))
            .await
    }
    async fn delete_instance_if(&self, instance: &InstanceId, etag: &ETag) -> StorageResult<bool> {
        self.faulty(
            Op::DeleteInstanceIf,
            self.inner.delete_instance_if(instance, etag),
        )
        .await
    }
}

#[async_trait]
impl<S: TaskHubStore + ?Sized> PayloadStore for FaultyStore<S> {
    async fn put_payload(
        &self,
        instance: &InstanceId,
        name: &str,
        data: Vec<u8>,
    ) -> StorageResult<()> {
        self.faulty(Op::PutPayload, self.inner.put_payload(instance, name, data))
            .await
    }
    async fn get_payload(
        &self,
        instance: &InstanceId,
        name: &str,
    ) -> StorageResult<Option<Vec<u8>>> {
        self.faulty(Op::GetPayload, self.inner.get_payload(instance, name))
            .await
    }
    async fn delete_payloads(&self, instance: &InstanceId) -> StorageResult<u64> {
        self.faulty(Op::DeletePayloads, self.inner.delete_payloads(instance))
            .await
    }
}

#[async_trait]
impl<S: TaskHubStore + ?Sized> DeadLetterStore for FaultyStore<S> {
    async fn add_dead_letter(&self, letter: DeadLetter) -> StorageResult<String> {
        self.faulty(Op::AddDeadLetter, self.inner.add_dead_letter(letter))
            .await
    }
    async fn list_dead_letters(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> StorageResult<Vec<DeadLetter>> {
        self.faulty(
            Op::ListDeadLetters,
            self.inner.list_dead_letters(after, limit),
        )
        .await
    }
    async fn take_dead_letter(&self, id: &str) -> StorageResult<Option<DeadLetter>> {
        self.faulty(Op::TakeDeadLetter, self.inner.take_dead_letter(id))
            .await
    }
    async fn move_to_dead_letters(
        &self,
        queue: QueueName,
        receipt: &Receipt,
        letter: DeadLetter,
    ) -> StorageResult<String> {
        self.faulty(
            Op::MoveToDeadLetters,
            self.inner.move_to_dead_letters(queue, receipt, letter),
        )
        .await
    }
}

#[async_trait]
impl<S: TaskHubStore + ?Sized> PartitionStore for FaultyStore<S> {
    async fn create_hub(&self, partition_count: u32, now: Timestamp) -> StorageResult<HubInfo> {
        self.faulty(Op::CreateHub, self.inner.create_hub(partition_count, now))
            .await
    }
    async fn hub_info(&self) -> StorageResult<Option<HubInfo>> {
        self.faulty(Op::HubInfo, self.inner.hub_info()).await
    }
    async fn set_partition_count(&self, partition_count: u32) -> StorageResult<()> {
        self.faulty(
            Op::SetPartitionCount,
            self.inner.set_partition_count(partition_count),
        )
        .await
    }
    async fn set_prohibited_workers(&self, workers: Vec<String>) -> StorageResult<()> {
        self.faulty(
            Op::SetProhibitedWorkers,
            self.inner.set_prohibited_workers(workers),
        )
        .await
    }
    async fn list_partitions(&self) -> StorageResult<Vec<PartitionRow>> {
        self.faulty(Op::ListPartitions, self.inner.list_partitions())
            .await
    }
    async fn put_partition(
        &self,
        row: &PartitionRow,
        expected: Option<&ETag>,
    ) -> StorageResult<ETag> {
        self.faulty(Op::PutPartition, self.inner.put_partition(row, expected))
            .await
    }
}

#[async_trait]
impl<S: TaskHubStore + ?Sized> CheckpointStore for FaultyStore<S> {
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

impl<S: TaskHubStore + ?Sized> TaskHubStore for FaultyStore<S> {
    fn backend_name(&self) -> &'static str {
        self.inner.backend_name()
    }

    fn owns_time(&self) -> bool {
        self.inner.owns_time()
    }

    fn atomic_checkpoints(&self) -> bool {
        self.inner.atomic_checkpoints()
    }
}
