//! `RestartInstance` reads the instance row once: the store's `get_instance` calls are counted
//! by `Instrumented`, with the worker stopped so that only the restart reads.

use std::sync::Arc;
use std::time::Duration;

use taskhub::{
    InstanceId, OrchestrationContext, OrchestrationError, Registry, Settings, TaskHub, Worker,
};
use taskhub_storage::instrumented::{Instrumented, StoreMetrics};
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{Operation, SystemClock, TaskHubStore};
use tonic::Code;

use super::*;

/// A hub over a counted memory store with instance `done` finished and `waiting` Pending.
async fn hub() -> (TaskHub, StoreMetrics) {
    let store = Instrumented::new(MemoryStore::new(Arc::new(SystemClock::new())));
    let metrics = store.metrics();
    let store: Arc<dyn TaskHubStore> = Arc::new(store);
    let settings = Settings {
        max_queue_polling_interval: Duration::from_millis(50),
        ..Settings::default()
    };
    let hub = TaskHub::open(store, settings).await.unwrap();
    let mut registry = Registry::new();
    registry.orchestration("Echo", |_ctx: OrchestrationContext, s: String| async move {
        Ok::<_, OrchestrationError>(s)
    });
    let worker = Worker::start(&hub, registry).await.unwrap();
    let client = hub.client();
    let done = InstanceId::new("done").unwrap();
    let options = taskhub::StartOptions {
        instance_id: Some(done.clone()),
        ..Default::default()
    };
    client.start_with("Echo", "in", options).await.unwrap();
    client
        .wait_for_completion(&done, Duration::from_secs(30))
        .await
        .unwrap();
    worker.shutdown().await;
    let options = taskhub::StartOptions {
        instance_id: Some(InstanceId::new("waiting").unwrap()),
        ..Default::default()
    };
    client.start_with("Echo", "in", options).await.unwrap();
    (hub, metrics)
}

/// Restarts `id` and answers the outcome with how many rows the restart read.
async fn counted(
    hub: &TaskHub,
    metrics: &StoreMetrics,
    id: &str,
    new_id: bool,
) -> (Result<RestartInstanceResponse, Status>, u64) {
    let reads = || metrics.snapshot().calls(Operation::GetInstance);
    let before = reads();
    let request = RestartInstanceRequest {
        instance_id: id.into(),
        restart_with_new_instance_id: new_id,
    };
    let answer = restart(&hub.client(), request).await;
    (answer, reads() - before)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_reads_the_row_once() {
    let (hub, metrics) = hub().await;
    let (answer, reads) = counted(&hub, &metrics, "done", false).await;
    assert_eq!(answer.unwrap().instance_id, "done");
    assert_eq!(reads, 1, "the finished row, read once");
    let (answer, reads) = counted(&hub, &metrics, "waiting", false).await;
    assert_eq!(answer.unwrap_err().code(), Code::FailedPrecondition);
    assert_eq!(reads, 1, "the active row, read once and refused");
    let (answer, reads) = counted(&hub, &metrics, "waiting", true).await;
    assert_ne!(answer.unwrap().instance_id, "waiting");
    assert_eq!(reads, 2, "the old row once, and the new ID's (none)");
    let (answer, reads) = counted(&hub, &metrics, "nobody", false).await;
    assert_eq!(answer.unwrap_err().code(), Code::NotFound);
    assert_eq!(reads, 1);
}
