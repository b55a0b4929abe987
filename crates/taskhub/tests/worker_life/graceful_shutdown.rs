//! Graceful shutdown with a timeout: an activity still running when `shutdown_timeout` runs
//! out is abandoned (stopped, and its work item visible again at once, not after its
//! visibility timeout) so a second worker completes the instance; an activity that finishes
//! within the timeout is committed and not run again.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::common::activity_probe::{ActivityProbe, StopFlag};
use crate::common::registries::add_call;
use crate::common::stores::memory_store;
use crate::common::*;
use taskhub::*;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{QueueName, QueueStore};

/// `Work` calls `Job` once. The first run of `Job` takes `first_run`; later runs are instant.
fn registry(probe: Arc<ActivityProbe>, first_run: Duration) -> Registry {
    let mut reg = Registry::new();
    reg.activity("Job", move |_c: ActivityContext, x: u64| {
        let probe = probe.clone();
        async move {
            let run = probe.runs.fetch_add(1, Ordering::SeqCst) + 1;
            probe.started.notify_one();
            if run == 1 {
                let flag = StopFlag::arm(&probe);
                tokio::time::sleep(first_run).await;
                flag.disarm();
            }
            Ok::<_, ActivityError>(x + 1)
        }
    });
    add_call(&mut reg, "Work", "Job");
    reg
}

async fn hub(shutdown_timeout: Duration) -> (Arc<MemoryStore>, TaskHub) {
    let store = memory_store();
    let settings = Settings {
        shutdown_timeout,
        // Long, so that only an explicit abandon makes the work item visible again soon.
        work_item_visibility_timeout: Duration::from_secs(300),
        ..fast_settings()
    };
    let hub = TaskHub::open(store.clone(), settings).await.unwrap();
    (store, hub)
}

/// A hub with its first worker running the first run of `Job` for a `Work` instance.
struct Run {
    probe: Arc<ActivityProbe>,
    store: Arc<MemoryStore>,
    hub: TaskHub,
    first: WorkerHandle,
    id: InstanceId,
}

/// Opens a hub with `shutdown_timeout`, starts its first worker (whose first run of `Job`
/// takes `first_run`) and a `Work` instance, and waits until that run started.
async fn first_run_started(shutdown_timeout: Duration, first_run: Duration) -> Run {
    let probe = Arc::new(ActivityProbe::default());
    let (store, hub) = hub(shutdown_timeout).await;
    let first = Worker::start(&hub, registry(probe.clone(), first_run))
        .await
        .unwrap();
    let id = hub.client().start("Work", 1u64).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), probe.started.notified())
        .await
        .expect("the activity did not start");
    Run {
        probe,
        store,
        hub,
        first,
        id,
    }
}

/// A second worker (whose runs of `Job` are instant) completes `id` with `Job`'s answer.
async fn a_second_worker_completes(hub: &TaskHub, probe: &Arc<ActivityProbe>, id: &InstanceId) {
    let second = Worker::start(hub, registry(probe.clone(), Duration::ZERO))
        .await
        .unwrap();
    let done = hub
        .client()
        .wait_for_completion(id, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(done.output::<u64>().unwrap(), Some(2));
    second.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activity_over_the_shutdown_timeout_is_abandoned_and_finished_elsewhere() {
    let Run {
        probe,
        store,
        hub,
        first,
        id,
    } = first_run_started(Duration::from_millis(300), Duration::from_secs(3600)).await;

    // The activity takes an hour: a shutdown that waited for it instead of stopping it at
    // `shutdown_timeout` would be stuck.
    tokio::time::timeout(wait::STUCK, first.shutdown())
        .await
        .expect("shutdown waited for the activity past its shutdown_timeout");
    wait::until(
        "the abandoned activity to stop",
        || probe.was_stopped(),
        || probe.runs(),
    )
    .await;
    // The work item is visible again at once (its visibility timeout is five minutes).
    let again = store
        .dequeue(QueueName::WorkItems, 1, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(again.len(), 1, "the work item was not given back");
    assert_eq!(again[0].dequeue_count, 2, "this is its second delivery");
    store
        .abandon(QueueName::WorkItems, &again[0].receipt, Duration::ZERO)
        .await
        .unwrap();

    a_second_worker_completes(&hub, &probe, &id).await;
    assert_eq!(probe.runs(), 2, "run again, once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activity_within_the_shutdown_timeout_is_committed_not_rerun() {
    let Run {
        probe,
        store,
        hub,
        first,
        id,
    } = first_run_started(Duration::from_secs(10), Duration::from_millis(300)).await;

    first.shutdown().await;
    assert!(!probe.was_stopped());
    // Committed: the work item is gone and its result waits in the control queue.
    let work = store.stats(QueueName::WorkItems).await.unwrap();
    assert_eq!(work.length, 0, "the work item was not deleted");
    let control = QueueName::Control(id.partition(hub.partition_count()));
    assert_eq!(store.stats(control).await.unwrap().length, 1);

    a_second_worker_completes(&hub, &probe, &id).await;
    assert_eq!(probe.runs(), 1, "the activity ran again");
}
