//! Work items claimed by the turn that schedules them (`worker/activity/claims.rs`): a worker runs the
//! activities of the orchestrations it holds itself, so their results are handed over in
//! process on every worker, not only when its own poller happened to win the work item; and
//! once its activity slots are full, the rest go to the queue for any worker.

use std::sync::Arc;
use std::time::Duration;

use crate::common::registries::{add_fan_out, add_inc, add_seq};
use crate::common::stores::memory_store;
use crate::common::*;
use taskhub::*;
use taskhub_storage::instrumented::Instrumented;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{Operation, SystemClock, TaskHubStore};

const STEPS: u64 = 4;
const INSTANCES: u64 = 12;

fn registry() -> Registry {
    let mut reg = Registry::new();
    add_inc(&mut reg);
    reg.activity("Slow", |_ctx: ActivityContext, x: u64| async move {
        // Long enough that the claiming worker's two slots stay busy while the others wait.
        tokio::time::sleep(Duration::from_millis(100)).await;
        Ok::<_, ActivityError>(x)
    });
    add_seq(&mut reg);
    add_fan_out(&mut reg, "FanOut", "Slow");
    reg
}

/// Two workers, each on its own hub handle (so neither is woken by the other's enqueues),
/// holding two of four partitions each: every result is handed over in process, so each
/// instance costs its start, its first turn and one turn per result — no result checkpoint
/// of its own. Without claims, a work item goes to whichever poller gets it first, and the
/// results of the other worker's runs take the control queue (one checkpoint more each).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_worker_runs_the_activities_of_its_own_partitions() {
    let store = Instrumented::new(MemoryStore::new(Arc::new(SystemClock::new())));
    let metrics = store.metrics();
    let store: Arc<dyn TaskHubStore> = Arc::new(store);
    let settings = Settings {
        partition_count: 4,
        max_partitions_per_worker: 2,
        // Blind polls come often, so an unclaimed work item would be raced for.
        max_queue_polling_interval: Duration::from_millis(20),
        ..fast_settings()
    };
    let hub_a = TaskHub::open(store.clone(), settings.clone())
        .await
        .unwrap();
    let hub_b = TaskHub::open(store.clone(), settings).await.unwrap();
    let a = Worker::start(&hub_a, registry()).await.unwrap();
    let b = Worker::start(&hub_b, registry()).await.unwrap();
    wait::until(
        "both workers hold two partitions",
        || a.partitions().len() == 2 && b.partitions().len() == 2,
        || (a.partitions(), b.partitions()),
    )
    .await;
    let before = metrics.snapshot();
    let client = hub_a.client();
    let mut ids = Vec::new();
    for i in 0..INSTANCES {
        let options = StartOptions {
            instance_id: Some(InstanceId::new(format!("seq-{i}")).unwrap()),
            ..StartOptions::default()
        };
        ids.push(client.start_with("Seq", STEPS, options).await.unwrap());
    }
    for id in &ids {
        let done = wait_done(&client, id, Duration::from_secs(60)).await;
        assert_eq!(done.output::<u64>().unwrap(), Some(STEPS), "{id}");
    }
    let used = metrics.snapshot().since(&before);
    let checkpoints = used.calls(Operation::Checkpoint);
    assert!(
        checkpoints <= INSTANCES * (STEPS + 2),
        "{checkpoints} checkpoints for {INSTANCES} sequences of {STEPS}: some results took \
         the control queue (a work item ran on the worker that does not hold its instance)"
    );
    let (ran_a, ran_b) = (a.stats().activities, b.stats().activities);
    assert_eq!(ran_a + ran_b, INSTANCES * STEPS);
    assert!(
        ran_a > 0 && ran_b > 0,
        "both workers hold instances, so both run activities: {ran_a} / {ran_b}"
    );
    a.shutdown().await;
    b.shutdown().await;
}

/// A worker claims only as many work items as it has free activity slots; the rest are sent
/// visible, and a worker that holds no partition runs them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_items_beyond_free_slots_go_to_other_workers() {
    let store: Arc<dyn TaskHubStore> = memory_store();
    let holder_settings = Settings {
        partition_count: 1,
        max_concurrent_activities: 2,
        ..fast_settings()
    };
    let hub_a = TaskHub::open(store.clone(), holder_settings.clone())
        .await
        .unwrap();
    let a = Worker::start(&hub_a, registry()).await.unwrap();
    wait::until(
        "the first worker holds the only partition",
        || a.partitions().len() == 1,
        || a.partitions(),
    )
    .await;
    let hub_b = TaskHub::open(store.clone(), fast_settings()).await.unwrap();
    let b = Worker::start(&hub_b, registry()).await.unwrap();
    let fan = 20u64;
    let client = hub_a.client();
    let id = client.start("FanOut", fan).await.unwrap();
    let done = wait_done(&client, &id, Duration::from_secs(60)).await;
    assert_eq!(done.output::<u64>().unwrap(), Some((0..fan).sum()));
    assert!(b.partitions().is_empty(), "the second worker holds nothing");
    let (ran_a, ran_b) = (a.stats().activities, b.stats().activities);
    assert_eq!(ran_a + ran_b, fan);
    assert!(
        ran_b > 0,
        "work items beyond the holder's two free slots are sent visible, for other workers: \
         the holder ran {ran_a}, the other {ran_b}"
    );
    a.shutdown().await;
    b.shutdown().await;
}

/// A claim hides its work item for `work_item_visibility_timeout`, which must be above zero
/// (a zero claim is refused by every backend): the setting is refused up front, by name.
#[test]
fn a_zero_visibility_timeout_is_refused_by_name() {
    for (name, settings) in [
        (
            "work_item_visibility_timeout",
            Settings {
                work_item_visibility_timeout: Duration::ZERO,
                ..Settings::default()
            },
        ),
        (
            "control_queue_visibility_timeout",
            Settings {
                control_queue_visibility_timeout: Duration::ZERO,
                ..Settings::default()
            },
        ),
    ] {
        let err = settings.validate().unwrap_err().to_string();
        assert!(err.contains(name), "{err}");
    }
}
