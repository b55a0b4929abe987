//! The graceful-shutdown timeout runs on the hub's `Clock` (issue 10): with a manual clock,
//! shutdown waits for running work until the clock has moved past `shutdown_timeout`, and
//! then abandons it, however little real time passed.

use std::time::Duration;

use crate::common::activity_probe::worker_running_forever;
use crate::common::stores::{manual_memory_hub, ManualMemoryHub};
use crate::common::*;
use taskhub::*;

use taskhub_storage::{Clock, QueueName, QueueStore};

const TIMEOUT: Duration = Duration::from_secs(3600);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shutdown_timeout_is_measured_on_the_hub_clock() {
    let settings = Settings {
        partition_count: 1,
        shutdown_timeout: TIMEOUT,
        ..fast_settings()
    };
    let ManualMemoryHub { clock, store, hub } = manual_memory_hub(settings).await;
    let (worker, probe) = worker_running_forever(&hub).await;

    let began = clock.monotonic();
    let shutdown = tokio::spawn(worker.shutdown());
    // Manual time moves in steps of a minute; real time hardly at all.
    let advancing = keep_advancing_by(&clock, Duration::from_millis(2), Duration::from_secs(60));
    tokio::time::timeout(Duration::from_secs(20), shutdown)
        .await
        .expect("shutdown ends once the manual clock passes its timeout")
        .unwrap();
    let waited = clock.monotonic() - began;
    advancing.abort();
    assert!(
        waited >= TIMEOUT,
        "shutdown gave up after {waited:?} of hub time, before its timeout of {TIMEOUT:?}"
    );
    // The activity's own task is aborted when its runner is: its future is dropped by the
    // runtime a moment later, not necessarily before `shutdown` returns.
    wait::until(
        "the running activity stopped",
        || probe.was_stopped(),
        || (),
    )
    .await;
    let again = store
        .dequeue(QueueName::WorkItems, 1, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(again.len(), 1, "the work item is visible again");
}
