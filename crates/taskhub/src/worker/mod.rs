//! The worker: control-queue pollers, the orchestration and activity dispatchers, and graceful
//! shutdown (`Worker::start`, `WorkerHandle`).
//!
//! Its modules follow a message through the worker, one way, by stage (each a folder):
//! `intake` (the control-queue pollers, the lease manager's host, retired partitions, and the
//! session of each active instance) hands each batch to `entity` (an entity's batch) or
//! `orchestration` (an orchestration's turn), whose checkpoints hand claimed work items to
//! `activity` (running activities and reporting their results); `lifecycle` is where a
//! message or the worker ends (dead letters, a halt). What every stage uses — the context
//! `Shared` and its parts, deliveries, the pollers' waits, outbound
//! encoding — is the leaf `shared`, which imports no stage. A stage imports only itself, the
//! stages after it and `shared`, and no two files of a stage import each other in a circle
//! (both checked by `tests/worker_layers.rs`); this file wires them.

mod activity;
mod entity;
mod intake;
mod lifecycle;
mod orchestration;
mod shared;

use std::sync::Arc;
use std::time::Duration;

use taskhub_core::Registry;
use taskhub_storage::QueueStore;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::error::TaskhubError;
use crate::executor::RemoteExecutor;
use crate::hub::TaskHub;
use intake::partitions;
pub use orchestration::versioning::VERSION_MISMATCH;
use shared::lifecycle::Lifecycle;
pub use shared::outbound::TIMER_LEAD;
use shared::sessions::Sessions;
pub use shared::WorkerStats;
use shared::{placement, slots, watches, Shared};

fn stats_of(shared: &Shared) -> WorkerStats {
    let mut stats = shared.lifecycle.stats();
    stats.sessions_evicted = shared.sessions.idle.evictions();
    stats
}

/// Builds and starts a worker.
///
/// A worker runs the orchestrations and activities of a [`Registry`] on a [`TaskHub`]: it
/// takes its share of the hub's partitions, polls their control queues and the work-item
/// queue, and checkpoints every orchestration turn. Any number of workers, in one process or
/// many, can share a hub. Stop one with [`WorkerHandle::shutdown`].
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use taskhub::*;
/// use taskhub_storage::{memory::MemoryStore, SystemClock};
///
/// async fn say_hello(_ctx: ActivityContext, city: String) -> Result<String, ActivityError> {
///     Ok(format!("Hello {city}!"))
/// }
///
/// async fn hello_cities(ctx: OrchestrationContext, _: ()) -> Result<Vec<String>, OrchestrationError> {
///     let mut out = Vec::new();
///     for city in ["Tokyo", "Seattle"] {
///         out.push(ctx.call_activity("SayHello", city).await?);
///     }
///     Ok(out)
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = Arc::new(MemoryStore::new(Arc::new(SystemClock::new())));
/// let hub = TaskHub::open(store, Settings::default()).await?;
/// let mut registry = Registry::new();
/// registry
///     .orchestration("HelloCities", hello_cities)
///     .activity("SayHello", say_hello);
/// let worker = Worker::start(&hub, registry).await?;
///
/// let client = hub.client();
/// let id = client.start("HelloCities", ()).await?;
/// let done = client.wait_for_completion(&id, Duration::from_secs(30)).await?;
/// assert_eq!(done.status(), OrchestrationStatus::Completed);
/// assert_eq!(
///     done.output::<Vec<String>>()?,
///     Some(vec!["Hello Tokyo!".to_owned(), "Hello Seattle!".to_owned()])
/// );
/// assert!(worker.stats().activities >= 2);
/// worker.shutdown().await; // finishes in-flight work and releases the partitions
/// # Ok(())
/// # }
/// ```
pub struct Worker;

impl Worker {
    /// Starts a worker on `hub` that runs the orchestrations and activities in `registry`.
    /// It takes its share of the partitions (all free ones at once; others as the lease
    /// manager balances them), polls their control queues, and polls the work-item queue.
    ///
    /// # Errors
    /// A storage error while reading the partitions table for the first time.
    pub async fn start(hub: &TaskHub, registry: Registry) -> Result<WorkerHandle, TaskhubError> {
        Self::start_inner(hub, registry, None).await
    }

    /// Starts a worker as [`start`](Self::start) does, whose orchestrations and activities
    /// that are not in `registry` run in `executor` (e.g. SDK workers connected over gRPC):
    /// names in the registry run here in Rust; a turn of any other orchestration is decided
    /// by [`RemoteExecutor::orchestrate`], any other activity runs in
    /// [`RemoteExecutor::run_activity`]. Everything else (leases, checkpoints, timers,
    /// de-duplication, poison handling) is this worker's, as for Rust code.
    ///
    /// # Errors
    /// A storage error while reading the partitions table for the first time.
    pub async fn start_with_executor(
        hub: &TaskHub,
        registry: Registry,
        executor: Arc<dyn RemoteExecutor>,
    ) -> Result<WorkerHandle, TaskhubError> {
        Self::start_inner(hub, registry, Some(executor)).await
    }

    async fn start_inner(
        hub: &TaskHub,
        registry: Registry,
        executor: Option<Arc<dyn RemoteExecutor>>,
    ) -> Result<WorkerHandle, TaskhubError> {
        let settings = hub.settings().clone();
        crate::startup::Retry {
            clock: hub.clock().as_ref(),
            limit: settings.startup_busy_timeout,
            operation: "starting a worker (reading the partitions table)",
        }
        .run(|| hub.store().list_partitions())
        .await?;
        let process = hub.announce(taskhub_storage::ProcessKind::Worker).await?;
        let stop_tx = Arc::new(watch::channel(false).0);
        let shared = Arc::new(Shared {
            hub: hub.clone(),
            registry: Arc::new(registry),
            executor,
            placement: placement::Placement::new(partitions::unique_name(&settings.worker_id)),
            slots: slots::Slots::new(&settings),
            lifecycle: Lifecycle::new(stop_tx.clone()),
            watches: watches::Watches::new(hub.clock().clone(), &settings),
            sessions: Sessions::new(
                settings.max_extended_sessions,
                shared::sessions::instance_share(settings.control_queue_buffer_threshold),
            ),
            doorbell: shared::doorbell::Doorbell::default(),
            dispatch: intake::control::dispatch,
        });
        let leases = partitions::start_leases(&shared).await;
        let mut pollers = JoinSet::new();
        pollers.spawn(activity::activities::poll_work_items(shared.clone()));
        let process = Arc::new(process);
        pollers.spawn(lifecycle::schema_watch::halt_when_moved(
            shared.clone(),
            process.clone(),
        ));
        Ok(WorkerHandle {
            shared,
            stop: stop_tx,
            pollers,
            leases,
            process: Some(process),
        })
    }
}

/// A running worker. Dropping it without [`shutdown`](Self::shutdown) stops it abruptly, as a
/// crash would for its leases (they are not released, so others take them over when they
/// expire), but inside the process nothing keeps running: its pollers, sessions and running
/// activities are aborted, and the messages it held are given back at once (visible again,
/// their deliveries not counted as failures) when a Tokio runtime is there to do it.
pub struct WorkerHandle {
    shared: Arc<Shared>,
    stop: Arc<watch::Sender<bool>>,
    pollers: JoinSet<()>,
    leases: tokio::task::JoinHandle<crate::lease::LeaseManager>,
    /// This worker's record in the hub's process registry.
    process: Option<Arc<crate::process::Announced>>,
}

impl std::fmt::Debug for WorkerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerHandle")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Drop for WorkerHandle {
    fn drop(&mut self) {
        // Without a graceful shutdown (or after one), nothing of this worker keeps running:
        // in particular the lease manager stops renewing, as a crashed process would.
        let _ = self.stop.send(true);
        self.leases.abort();
        // The leases are left to expire, but this process no longer processes them.
        for partition in self.shared.placement.forget_all() {
            crate::telemetry::record::lease(partition, false, false);
        }
        let mut sets = [
            std::mem::take(&mut self.pollers),
            self.shared.placement.take_pollers(),
            self.shared.lifecycle.take_tasks(),
        ];
        self.shared.lifecycle.orphans.abandon_all();
        for set in &mut sets {
            set.abort_all();
        }
        // Give back what the aborted tasks held, once they are gone (so no commit races the
        // give-back). Without a runtime the sets are dropped (which aborts them too) and the
        // messages reappear after their visibility timeout.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let shared = self.shared.clone();
            runtime.spawn(async move {
                for mut set in sets {
                    while set.join_next().await.is_some() {}
                }
                give_back_held(
                    shared.hub.store().as_ref(),
                    &shared.lifecycle,
                    &shared.sessions,
                )
                .await;
            });
        }
    }
}

/// Gives back, visible at once, everything an abandoned worker still held: the work items of
/// activities it stopped (abandoned: a run cut short counts as a delivery, as at a timed-out
/// shutdown), and the control deliveries its sessions and pollers dropped or still had
/// buffered (released: uncounted). Call once its tasks have ended.
async fn give_back_held(queues: &dyn QueueStore, lifecycle: &Lifecycle, sessions: &Sessions) {
    // Dropping the senders drops the batches still queued for sessions (orphans now).
    lifecycle.orphans.abandon_all();
    crate::telemetry::record::sessions_left(sessions.drop_all());
    let stopped = lifecycle.take_in_flight();
    // A stale receipt means the message was finished (or given back) after all.
    for (queue, receipt) in stopped {
        let _ = queues.abandon(queue, &receipt, Duration::ZERO).await;
    }
    for (queue, receipt) in lifecycle.orphans.take() {
        let _ = queues.release(queue, &receipt, Duration::ZERO).await;
    }
}

impl WorkerHandle {
    /// This worker's name in lease rows.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.shared.placement.name
    }

    /// The partitions this worker processes now, with their lease epochs.
    #[must_use]
    pub fn partitions(&self) -> std::collections::BTreeMap<u32, u64> {
        self.shared.placement.epochs()
    }

    /// This worker's record in the hub's process registry (as announced; `None` once shut
    /// down).
    #[must_use]
    pub fn process(&self) -> Option<&taskhub_storage::ProcessRecord> {
        self.process
            .as_deref()
            .map(crate::process::Announced::record)
    }

    /// Why this worker stopped taking work by itself, if it did: the hub was migrated by a
    /// newer build under it (the `NewerSchema` error's message). It then dequeues nothing
    /// more, gives back what it held uncounted, and dead-letters nothing for that reason;
    /// shut it down and start the newer build.
    #[must_use]
    pub fn halted(&self) -> Option<String> {
        self.shared.lifecycle.halted()
    }

    /// Counters so far.
    #[must_use]
    pub fn stats(&self) -> WorkerStats {
        stats_of(&self.shared)
    }

    /// A reader of this worker's counters that does not borrow the handle (for a dashboard's
    /// throughput chart while the handle is kept for shutdown).
    #[must_use]
    pub fn stats_source(&self) -> Arc<dyn Fn() -> WorkerStats + Send + Sync> {
        let shared = Arc::clone(&self.shared);
        Arc::new(move || stats_of(&shared))
    }

    /// Instances this worker holds in memory right now (running or extended sessions).
    /// Finished instances are not held, so this stays bounded by the active ones.
    #[must_use]
    pub fn active_sessions(&self) -> usize {
        self.shared.sessions.count()
    }

    /// Stops polling, lets in-flight turns and activities finish for up to the settings'
    /// `shutdown_timeout`, abandons what is still running (so another worker picks it up at
    /// once), and releases the partitions.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        self.shared.placement.stop_pollers();
        while self.pollers.join_next().await.is_some() {}
        let manager = (&mut self.leases).await.ok();
        let mut control = self.shared.placement.take_pollers();
        while control.join_next().await.is_some() {}
        let timeout = self.shared.hub.settings().shutdown_timeout;
        let clock = self.shared.hub.clock().clone();
        let deadline = clock.monotonic() + timeout;
        // Tasks spawned while draining (a turn that committed just now starts its claimed
        // activities, or gives them back) are waited for too, within the same timeout.
        loop {
            let mut tasks = self.shared.lifecycle.take_tasks();
            if tasks.is_empty() {
                break;
            }
            let left = deadline.saturating_sub(clock.monotonic());
            // The timeout runs on the hub's clock, like every other wait of the runtime.
            let drained = tokio::select! {
                () = async { while tasks.join_next().await.is_some() {} } => true,
                () = clock.sleep(left) => false,
            };
            if !drained {
                // What is still running is abandoned: stopped, and its messages given back.
                self.shared.lifecycle.orphans.abandon_all();
                tasks.abort_all();
                while tasks.join_next().await.is_some() {}
                let mut late = self.shared.lifecycle.take_tasks();
                late.abort_all();
                while late.join_next().await.is_some() {}
                break;
            }
        }
        let shared = &self.shared;
        give_back_held(
            shared.hub.store().as_ref(),
            &shared.lifecycle,
            &shared.sessions,
        )
        .await;
        if let Some(mut manager) = manager {
            manager
                .release_all(&mut partitions::Host(self.shared.clone()))
                .await;
        }
        // Every poller has ended, the schema watch with them: this is the last reference.
        if let Some(process) = self.process.take().and_then(|p| Arc::try_unwrap(p).ok()) {
            process.retire().await;
        }
    }
}
