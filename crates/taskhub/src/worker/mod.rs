//! The worker: control-queue pollers, the orchestration and activity dispatchers, and graceful
//! shutdown.

mod activities;
mod backoff;
mod control;
mod delivery;
mod outbox;
mod partitions;
mod poison;
mod refused;
mod session;
mod turn;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use taskhub_core::{InstanceId, Registry};
use taskhub_storage::{QueueName, Receipt};
use tokio::sync::{mpsc, watch, Semaphore};
use tokio::task::JoinSet;

use crate::error::TaskhubError;
use crate::hub::TaskHub;
use delivery::Delivery;

/// Counters a worker keeps (read with [`WorkerHandle::stats`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WorkerStats {
    /// Orchestration turns committed.
    pub turns: u64,
    /// Activities executed.
    pub activities: u64,
    /// Messages moved to the dead-letter store.
    pub dead_lettered: u64,
    /// Messages discarded as duplicates or stale.
    pub discarded: u64,
    /// Checkpoints rejected (conflict, fenced) and retried by redelivery.
    pub checkpoint_conflicts: u64,
}

pub(crate) struct Shared {
    pub hub: TaskHub,
    pub registry: Arc<Registry>,
    pub sessions: Mutex<HashMap<InstanceId, mpsc::UnboundedSender<Vec<Delivery>>>>,
    pub buffer: Arc<Semaphore>,
    pub orchestration_slots: Arc<Semaphore>,
    pub activity_slots: Arc<Semaphore>,
    pub fences: Mutex<HashMap<u32, u64>>,
    pub stop: watch::Receiver<bool>,
    pub stats: Mutex<WorkerStats>,
    /// Work items being executed, by receipt, so a timed-out shutdown can abandon them.
    pub in_flight: Mutex<HashMap<u64, (QueueName, Receipt)>>,
    pub next_flight: std::sync::atomic::AtomicU64,
    pub tasks: Mutex<JoinSet<()>>,
}

impl Shared {
    pub(crate) fn stopping(&self) -> bool {
        *self.stop.borrow()
    }

    pub(crate) fn stat(&self, f: impl FnOnce(&mut WorkerStats)) {
        f(&mut self.stats.lock().unwrap_or_else(PoisonError::into_inner));
    }

    pub(crate) fn spawn(&self, fut: impl std::future::Future<Output = ()> + Send + 'static) {
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        // Reap finished tasks so the set does not grow with every task ever spawned.
        while tasks.try_join_next().is_some() {}
        tasks.spawn(fut);
    }

    pub(crate) fn fence(&self, partition: u32) -> Option<taskhub_storage::LeaseFence> {
        let fences = self.fences.lock().unwrap_or_else(PoisonError::into_inner);
        fences
            .get(&partition)
            .map(|epoch| taskhub_storage::LeaseFence {
                partition,
                epoch: *epoch,
            })
    }
}

/// Builds and starts a worker.
pub struct Worker;

impl Worker {
    /// Starts a worker on `hub` that runs the orchestrations and activities in `registry`.
    /// It claims the hub's partitions, then polls their control queues and the work-item queue.
    ///
    /// # Errors
    /// A storage error while claiming partitions.
    pub async fn start(hub: &TaskHub, registry: Registry) -> Result<WorkerHandle, TaskhubError> {
        let settings = hub.settings().clone();
        let (stop_tx, stop_rx) = watch::channel(false);
        let shared = Arc::new(Shared {
            hub: hub.clone(),
            registry: Arc::new(registry),
            sessions: Mutex::new(HashMap::new()),
            buffer: Arc::new(Semaphore::new(settings.control_queue_buffer_threshold)),
            orchestration_slots: Arc::new(Semaphore::new(settings.max_concurrent_orchestrations)),
            activity_slots: Arc::new(Semaphore::new(settings.max_concurrent_activities)),
            fences: Mutex::new(HashMap::new()),
            stop: stop_rx,
            stats: Mutex::new(WorkerStats::default()),
            in_flight: Mutex::new(HashMap::new()),
            next_flight: std::sync::atomic::AtomicU64::new(0),
            tasks: Mutex::new(JoinSet::new()),
        });
        let owned = partitions::claim_all(&shared).await?;
        let mut pollers = JoinSet::new();
        for p in owned {
            pollers.spawn(control::poll_partition(shared.clone(), p));
        }
        pollers.spawn(activities::poll_work_items(shared.clone()));
        Ok(WorkerHandle {
            shared,
            stop: stop_tx,
            pollers,
        })
    }
}

/// A running worker. Dropping it without [`shutdown`](Self::shutdown) stops its tasks abruptly
/// (their messages reappear after the visibility timeout).
pub struct WorkerHandle {
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    pollers: JoinSet<()>,
}

impl std::fmt::Debug for WorkerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerHandle")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl WorkerHandle {
    /// Counters so far.
    #[must_use]
    pub fn stats(&self) -> WorkerStats {
        self.shared
            .stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Instances this worker holds in memory right now (running or extended sessions).
    /// Finished instances are not held, so this stays bounded by the active ones.
    #[must_use]
    pub fn active_sessions(&self) -> usize {
        self.shared
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Stops polling, lets in-flight turns and activities finish for up to the settings'
    /// `shutdown_timeout`, abandons what is still running (so another worker picks it up at
    /// once), and releases the partitions.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        while self.pollers.join_next().await.is_some() {}
        let timeout = self.shared.hub.settings().shutdown_timeout;
        let mut tasks = std::mem::take(
            &mut *self
                .shared
                .tasks
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let drained = tokio::time::timeout(timeout, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tasks.abort_all();
            while tasks.join_next().await.is_some() {}
        }
        let abandoned: Vec<(QueueName, Receipt)> = self
            .shared
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, v)| v)
            .collect();
        for (queue, receipt) in abandoned {
            let _ = self
                .shared
                .hub
                .store()
                .abandon(queue, &receipt, Duration::ZERO)
                .await;
        }
        // Sessions still holding buffered deliveries: give the messages back.
        let senders: Vec<_> = self
            .shared
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .collect();
        drop(senders);
        partitions::release_all(&self.shared).await;
    }
}
