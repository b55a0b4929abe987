//! Pieces of the fake `RemoteExecutor`s the executor-seam tests build: an executor that runs
//! only entities, a question that never answers (counting its drop), the errors of the tests
//! that count deliveries by error kind, a lease taken away while a question is out, and the
//! hub with such a worker that the tests drive.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use taskhub::executor::{
    ActivityOutcome, ActivityWork, EntityBatchOutcome, EntityWork, ExecutorError, ExecutorFuture,
    OrchestrationDecision, OrchestrationWork, RemoteExecutor,
};
use taskhub::{Registry, TaskHub, TaskHubClient, Worker, WorkerHandle};
use taskhub_storage::TaskHubStore;

/// Adds one to its counter when dropped.
pub struct CountDrop(pub Arc<AtomicUsize>);

impl Drop for CountDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A question that never answers; `dropped` counts its future's drop.
pub fn never_answers<T: Send + 'static>(dropped: &Arc<AtomicUsize>) -> ExecutorFuture<'static, T> {
    let guard = CountDrop(dropped.clone());
    Box::pin(async move {
        let _guard = guard;
        std::future::pending::<()>().await;
        unreachable!("a pending future never completes")
    })
}

/// The errors of the "counted by kind" tests, for a question about `name`: the first four asks
/// about `flaky` (counted in `flaky_asks`) are `Unavailable` (no worker connected: the
/// delivery is not counted), every ask about `hangs` is `TimedOut` (taken and never answered:
/// each delivery counts); `None` (no error) otherwise.
pub fn flaky_or_hanging<T>(
    name: &str,
    flaky: &str,
    hangs: &str,
    flaky_asks: &AtomicUsize,
) -> Option<Result<T, ExecutorError>> {
    if name == flaky && flaky_asks.fetch_add(1, Ordering::SeqCst) < 4 {
        return Some(Err(ExecutorError::Unavailable {
            what: "flaky".into(),
        }));
    }
    (name == hangs).then(|| {
        Err(ExecutorError::TimedOut {
            what: "hangs".into(),
            seconds: 0,
        })
    })
}

/// How a fake SDK worker that hosts only entities runs a batch.
pub trait EntityRunner: Send + Sync + 'static {
    /// Runs one entity batch.
    fn run_entity(&self, work: EntityWork) -> ExecutorFuture<'_, EntityBatchOutcome>;
}

/// An executor that runs entities through `R` and answers every orchestration and activity
/// as `Unavailable`.
pub struct EntitiesOnly<R>(pub Arc<R>);

impl<R: EntityRunner> RemoteExecutor for EntitiesOnly<R> {
    fn orchestrate(&self, work: OrchestrationWork) -> ExecutorFuture<'_, OrchestrationDecision> {
        let what = format!("orchestration {}", work.name);
        Box::pin(async move { Err(ExecutorError::Unavailable { what }) })
    }

    fn run_activity(&self, work: ActivityWork) -> ExecutorFuture<'_, ActivityOutcome> {
        let what = format!("activity {}", work.name);
        Box::pin(async move { Err(ExecutorError::Unavailable { what }) })
    }

    fn runs_entities(&self) -> bool {
        true
    }

    fn run_entity(&self, work: EntityWork) -> ExecutorFuture<'_, EntityBatchOutcome> {
        self.0.run_entity(work)
    }
}

/// Another owner, "thief", takes the only partition's lease under a higher epoch (and never
/// renews it); returns that epoch.
pub async fn steal_the_lease(store: &dyn TaskHubStore) -> u64 {
    let mut row = store.list_partitions().await.unwrap().remove(0);
    let stolen = row.epoch + 1;
    row.owner = Some("thief".into());
    row.epoch = stolen;
    store.put_partition(&row, row.etag.as_ref()).await.unwrap();
    stolen
}

/// `base` on one partition with a short lease (2 s, renewed and acquired every 300 ms), so a
/// lease taken away comes back soon.
pub fn short_lease(base: taskhub::Settings) -> taskhub::Settings {
    taskhub::Settings {
        partition_count: 1,
        lease_interval: std::time::Duration::from_secs(2),
        lease_renew_interval: std::time::Duration::from_millis(300),
        lease_acquire_interval: std::time::Duration::from_millis(300),
        ..base
    }
}

/// A hub whose worker runs `registry` here and the rest in a remote executor; `S` keeps the
/// test's store alive.
pub struct RemoteEnv<S> {
    pub hub: TaskHub,
    pub client: TaskHubClient,
    /// Taken when a test stops the worker itself.
    pub worker: Option<WorkerHandle>,
    pub store: S,
}

impl<S> RemoteEnv<S> {
    /// Starts the worker on `hub`.
    pub async fn with_worker(
        hub: TaskHub,
        store: S,
        registry: Registry,
        executor: Arc<dyn RemoteExecutor>,
    ) -> Self {
        let worker = Worker::start_with_executor(&hub, registry, executor)
            .await
            .unwrap();
        Self {
            client: hub.client(),
            hub,
            worker: Some(worker),
            store,
        }
    }

    /// Waits for the dead letter whose body contains `text` (`what` names it if it never
    /// comes).
    pub async fn dead_letter_containing(
        &self,
        what: &str,
        text: &str,
    ) -> taskhub_storage::DeadLetter {
        taskhub_test_support::wait::until_some(what, || async {
            let letters = self.client.list_dead_letters(None, 100).await.unwrap();
            letters.into_iter().find(|l| l.body.contains(text))
        })
        .await
    }

    /// Stops the worker, unless the test did.
    pub async fn shutdown(mut self) {
        if let Some(w) = self.worker.take() {
            w.shutdown().await;
        }
    }
}
