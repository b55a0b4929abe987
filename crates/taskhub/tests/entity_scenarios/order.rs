//! Requests from one sender are applied by an entity in send order and each once, whatever
//! order the queue delivers them in (`taskhub_core::entity::order`): on every backend in
//! `entities.rs`. Here the safety valve: a request whose predecessor
//! never comes runs after the reorder window — not before — and a predecessor that comes
//! after all is still applied (driven by a `ManualClock`).

use std::sync::Arc;
use std::time::Duration;

use crate::order_suite::*;
use taskhub::*;
use taskhub_core::entity::order::REORDER_WINDOW;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{Clock, ManualClock, TaskHubStore};

/// Lets every task run until the worker is idle at the clock's current time.
async fn settle() {
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_request_whose_predecessor_never_comes_runs_after_the_reorder_window() {
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_700_000_000_000)));
    let store: Arc<dyn TaskHubStore> = Arc::new(MemoryStore::new(clock.clone()));
    let hub = TaskHub::open_with_clock(store.clone(), settings(), clock.clone())
        .await
        .unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    let now = clock.now();

    put(&store, &[request("exec-1", 1, None, now)]).await;
    // 2 is lost (say, dead-lettered); 3 names it.
    put(&store, &[request("exec-1", 3, Some(2), now)]).await;
    settle().await;
    assert_eq!(state(&client).await, vec![1], "3 waits for 2");

    clock.advance(REORDER_WINDOW - Duration::from_secs(1));
    settle().await;
    assert_eq!(
        state(&client).await,
        vec![1],
        "3 ran before its window ran out"
    );

    // The entity woke itself for the window's end: nothing else arrives meanwhile.
    clock.advance(Duration::from_secs(2));
    tokio::time::timeout(Duration::from_secs(60), async {
        while state(&client).await.len() < 2 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("3 never ran");
    assert_eq!(state(&client).await, vec![1, 3]);

    // 2 turns up after all (a dead letter replayed): applied, not taken for a duplicate;
    // a redelivery of 3 still is one.
    put(
        &store,
        &[
            request("exec-1", 2, Some(1), now),
            request("exec-1", 3, Some(2), now),
        ],
    )
    .await;
    // Written to the queue directly, they wake no poller: let the clock move.
    tokio::time::timeout(Duration::from_secs(60), async {
        while state(&client).await.len() < 3 {
            clock.advance(Duration::from_secs(1));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the late predecessor was dropped: {:?}", worker.stats()));
    for _ in 0..20 {
        clock.advance(Duration::from_secs(1));
        settle().await;
    }
    assert_eq!(state(&client).await, vec![1, 3, 2]);
    worker.shutdown().await;
}
