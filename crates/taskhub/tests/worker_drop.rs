//! Dropping a `WorkerHandle` without `shutdown` stops the worker (issue 10): its running
//! activities stop, and the work it held is visible again at once rather than after its
//! visibility timeout.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests"
)]

mod common;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use taskhub::*;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{QueueName, QueueStore, SystemClock};
use tokio::sync::Notify;

#[derive(Default)]
struct Probe {
    runs: AtomicU32,
    started: Notify,
    stopped: AtomicBool,
}

/// Sets `stopped` when the activity's future is dropped.
struct StopFlag(Arc<Probe>);

impl Drop for StopFlag {
    fn drop(&mut self) {
        self.0.stopped.store(true, Ordering::SeqCst);
    }
}

fn registry(probe: Arc<Probe>) -> Registry {
    let mut reg = Registry::new();
    reg.activity("Forever", move |_c: ActivityContext, _: ()| {
        let probe = probe.clone();
        async move {
            probe.runs.fetch_add(1, Ordering::SeqCst);
            let _flag = StopFlag(probe.clone());
            probe.started.notify_one();
            std::future::pending::<()>().await;
            Ok::<_, ActivityError>(())
        }
    });
    reg.orchestration("Work", |ctx: OrchestrationContext, _: ()| async move {
        ctx.call_activity::<_, ()>("Forever", ()).await?;
        Ok::<_, OrchestrationError>(())
    });
    reg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_handle_stops_the_worker_and_gives_its_work_back() {
    let store = Arc::new(MemoryStore::new(Arc::new(SystemClock::new())));
    let settings = Settings {
        partition_count: 1,
        ..fast_settings()
    };
    let hub = TaskHub::open(store.clone(), settings).await.unwrap();
    let probe = Arc::new(Probe::default());
    let worker = Worker::start(&hub, registry(probe.clone())).await.unwrap();
    let started = probe.started.notified();
    hub.client().start("Work", ()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), started)
        .await
        .expect("the activity starts");

    drop(worker);

    wait::until(
        "the running activity to stop",
        || probe.stopped.load(Ordering::SeqCst),
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
    assert_eq!(probe.runs.load(Ordering::SeqCst), 1, "nothing ran it again");
}
