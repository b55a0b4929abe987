//! A start scheduled further ahead than the backend's longest message delay (7 days on the
//! memory backend, as on Azure Storage) is accepted, waits Pending, and runs at its time: its
//! message comes after one longest delay, goes round again, and starts when due. Driven by a
//! `ManualClock` over 30 days.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::common::stores::{manual_memory_hub, ManualMemoryHub};
use crate::common::*;
use taskhub::*;
use taskhub_storage::{Clock, QueueName, QueueStore};

const DAY: Duration = Duration::from_secs(24 * 3600);
const BOUND: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_thirty_days_ahead_waits_through_several_longest_delays_then_runs() {
    let ManualMemoryHub { clock, store, hub } = manual_memory_hub(fast_settings()).await;
    assert!(
        store.max_delay() < 30 * DAY,
        "the test needs a start beyond the longest delay"
    );
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let mut reg = Registry::new();
    reg.orchestration("Later", move |_ctx: OrchestrationContext, _: ()| {
        let counted = counted.clone();
        async move {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok::<_, OrchestrationError>("ran".to_owned())
        }
    });
    let worker = Worker::start(&hub, reg).await.unwrap();
    let client = hub.client();
    let id = InstanceId::new("far").unwrap();
    let at = clock.now().saturating_add(30 * DAY);
    client
        .start_with(
            "Later",
            (),
            StartOptions {
                instance_id: Some(id.clone()),
                start_at: Some(at.to_system_time()),
                ..StartOptions::default()
            },
        )
        .await
        .expect("a start 30 days ahead is accepted");
    let queue = QueueName::Control(id.partition(hub.partition_count()));

    // Each longest delay, the start comes, is early, and goes round again: a fresh copy
    // enqueued at the clock's new time. It never runs early.
    for hop in 1..=4 {
        clock.advance(store.max_delay());
        let now = clock.now();
        tokio::time::timeout(BOUND, async {
            loop {
                let stats = store.stats(queue).await.unwrap();
                if stats.length == 1 && stats.oldest_enqueued_at.is_some_and(|t| t >= now) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("hop {hop}: the early start went round again"));
        let status = find(&client, &id).await.unwrap();
        assert_eq!(status.status(), OrchestrationStatus::Pending, "hop {hop}");
        assert_eq!(
            runs.load(Ordering::SeqCst),
            0,
            "hop {hop}: not before its time"
        );
    }

    // Past its time: it runs, once.
    clock.advance(3 * DAY);
    tokio::time::timeout(BOUND, async {
        loop {
            let s = find(&client, &id).await.unwrap();
            if s.status() == OrchestrationStatus::Completed {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the start runs once it is due");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    worker.shutdown().await;
}
