//! A partition bump while messages are in flight (issue 10): the worker's checkpoints are
//! fenced until its lease manager notices the new epoch. Messages given back because their
//! lease ended are not failed deliveries: none may be dead-lettered, and the instance must
//! complete once the worker (or another) claims the partition again.

use std::sync::Arc;
use std::time::Duration;

use crate::common::stores::memory_store;
use crate::common::*;
use taskhub::*;
use taskhub_storage::TaskHubStore;

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.orchestration("Three", |ctx: OrchestrationContext, _: ()| async move {
        let mut sum = 0;
        for _ in 0..3 {
            sum += ctx.wait_for_event::<u64>("n").await?;
        }
        Ok::<_, OrchestrationError>(sum)
    });
    reg
}

fn settings() -> Settings {
    Settings {
        partition_count: 1,
        ..fast_settings()
    }
}

/// Whether the bump comes right after the events (as reported: some may be applied before it)
/// or right before them (every event is then dequeued under the fenced epoch).
#[derive(Clone, Copy)]
enum Bump {
    AfterEvents,
    BeforeEvents,
}

async fn bump_with_events_in_flight(store: Arc<dyn TaskHubStore>, when: Bump) {
    let hub = TaskHub::open(store.clone(), settings()).await.unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    let id = client.start("Three", ()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), async {
        while worker.stats().turns < 1 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();

    if let Bump::BeforeEvents = when {
        hub.admin().bump(0).await.unwrap();
    }
    for n in 1..=3u64 {
        client.raise_event(&id, "n", &n).await.unwrap();
    }
    if let Bump::AfterEvents = when {
        hub.admin().bump(0).await.unwrap();
    }

    let done = match client
        .wait_for_completion(&id, Duration::from_secs(30))
        .await
    {
        Ok(done) => done,
        Err(e) => {
            let letters = store.list_dead_letters(None, 100).await.unwrap();
            panic!(
                "the instance did not complete after the bump ({e}); dead letters: {letters:?}; \
                 worker: {worker:?}, partitions {:?}",
                worker.partitions()
            );
        }
    };
    assert_eq!(done.status(), OrchestrationStatus::Completed);
    assert_eq!(done.output::<u64>().unwrap(), Some(6));
    let letters = store.list_dead_letters(None, 100).await.unwrap();
    assert!(letters.is_empty(), "dead letters: {letters:?}");
    assert_eq!(worker.stats().dead_lettered, 0);
    worker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bump_with_events_in_flight_loses_nothing_on_sqlite() {
    let dir = TempDir::new("bump-in-flight");
    bump_with_events_in_flight(sqlite_store(&dir.0), Bump::AfterEvents).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_dequeued_under_a_bumped_epoch_are_not_dead_lettered_on_sqlite() {
    let dir = TempDir::new("bump-before-events");
    bump_with_events_in_flight(sqlite_store(&dir.0), Bump::BeforeEvents).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bump_with_events_in_flight_loses_nothing_in_memory() {
    let store = memory_store();
    bump_with_events_in_flight(store, Bump::AfterEvents).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_dequeued_under_a_bumped_epoch_are_not_dead_lettered_in_memory() {
    let store = memory_store();
    bump_with_events_in_flight(store, Bump::BeforeEvents).await;
}
