//! Dropping a `WorkerHandle` without `shutdown` stops the worker (issue 10): its running
//! activities stop, and the work it held is visible again at once rather than after its
//! visibility timeout.

use std::time::Duration;

use crate::common::activity_probe::worker_running_forever;
use crate::common::stores::memory_store;
use crate::common::*;
use taskhub::*;
use taskhub_storage::{QueueName, QueueStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_handle_stops_the_worker_and_gives_its_work_back() {
    let store = memory_store();
    let settings = Settings {
        partition_count: 1,
        ..fast_settings()
    };
    let hub = TaskHub::open(store.clone(), settings).await.unwrap();
    let (worker, probe) = worker_running_forever(&hub).await;

    drop(worker);

    wait::until(
        "the running activity to stop",
        || probe.was_stopped(),
        || (),
    )
    .await;
    // Its work item is visible again at once, not after the 5-minute visibility timeout.
    let store2 = store.clone();
    tokio::time::timeout(Duration::from_secs(10), async move {
        loop {
            let got = store2
                .dequeue(QueueName::WorkItems, 1, Duration::from_secs(60))
                .await
                .unwrap();
            if let Some(m) = got.first() {
                assert_eq!(
                    m.dequeue_count, 2,
                    "the stopped run counts as a delivery, as at a timed-out shutdown"
                );
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the work item is visible again");
    assert_eq!(probe.runs(), 1, "nothing ran it again");
}
