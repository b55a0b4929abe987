//! Each partition row counts the turns committed on it, across owners: a worker adds its own
//! at every lease renewal, so a process that runs no worker (`taskhub serve`, the dashboard)
//! can chart the hub's throughput from the partitions table alone.

use std::sync::Arc;
use std::time::Duration;

use crate::common::two_stores::memory_and_sqlite;
use crate::common::*;
use taskhub::*;
use taskhub_storage::TaskHubStore;

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.activity("Inc", |_ctx: ActivityContext, x: u64| async move {
        Ok::<_, ActivityError>(x + 1)
    });
    reg.orchestration("Three", |ctx: OrchestrationContext, x: u64| async move {
        let mut x = x;
        for _ in 0..3 {
            x = ctx.call_activity("Inc", x).await?;
        }
        Ok::<_, OrchestrationError>(x)
    });
    reg
}

async fn rows_turns(store: &dyn TaskHubStore) -> u64 {
    store
        .list_partitions()
        .await
        .unwrap()
        .iter()
        .map(|r| r.turns)
        .sum()
}

async fn turns_reach_the_partition_rows(store: Arc<dyn TaskHubStore>) {
    let settings = Settings {
        partition_count: 4,
        lease_renew_interval: Duration::from_millis(300),
        ..fast_settings()
    };
    let hub = TaskHub::open(store.clone(), settings.clone())
        .await
        .unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    run_each(&client, "Three", 0..8u64, Duration::from_secs(30)).await;
    // At least a turn per instance (a turn may take several messages at once). A client can
    // see an instance completed just before the worker counts the turn that completed it, so
    // the worker's count is read again on every look, after the rows: the rows never count
    // more than the worker has counted by then.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let committed = loop {
        let counted = rows_turns(store.as_ref()).await;
        let committed = worker.stats().turns;
        assert!(committed >= 8, "{committed} turns");
        if counted == committed {
            break committed;
        }
        assert!(
            counted < committed,
            "rows count {counted} of {committed} turns"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "the rows count {counted} of {committed} turns after 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    worker.shutdown().await;

    // A second owner adds to the count it finds.
    let hub = TaskHub::open(store.clone(), settings).await.unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let id = hub.client().start("Three", 0u64).await.unwrap();
    hub.client()
        .wait_for_completion(&id, Duration::from_secs(30))
        .await
        .unwrap();
    let more = worker.stats().turns;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while rows_turns(store.as_ref()).await != committed + more {
        assert!(
            std::time::Instant::now() < deadline,
            "the rows never counted the second owner's {more} turns on top of {committed}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    worker.shutdown().await;
}

memory_and_sqlite!(
    turns_reach_the_partition_rows, "partition-turns":
    turns_reach_the_partition_rows_in_memory,
    turns_reach_the_partition_rows_on_sqlite,
);
