//! Extended sessions avoid history reloads: with them on, an orchestration stays in memory
//! between turns and its history is loaded once; with them off, every turn loads it. Counted
//! with the memory backend's per-operation call counters.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use taskhub::*;
use taskhub_storage::memory::{MemoryStore, Op};
use taskhub_storage::SystemClock;

const ACTIVITIES: u64 = 6;

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.activity("Inc", |_c: ActivityContext, x: u64| async move {
        Ok::<_, ActivityError>(x + 1)
    });
    reg.orchestration("Chain", |ctx: OrchestrationContext, n: u64| async move {
        let mut x = 0;
        for _ in 0..n {
            x = ctx.call_activity::<_, u64>("Inc", x).await?;
        }
        Ok::<_, OrchestrationError>(x)
    });
    reg
}

/// Runs one `Chain` of `ACTIVITIES` steps; returns (history loads, turns).
async fn run_chain(extended: bool) -> (u64, u64) {
    let store = Arc::new(MemoryStore::new(Arc::new(SystemClock::new())));
    let settings = Settings {
        extended_sessions_enabled: extended,
        extended_session_idle_timeout: Duration::from_secs(60),
        ..fast_settings()
    };
    let hub = TaskHub::open(store.clone(), settings).await.unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    store.faults().reset_counts();
    let id = client.start("Chain", ACTIVITIES).await.unwrap();
    let done = client
        .wait_for_completion(&id, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(done.output::<u64>().unwrap(), Some(ACTIVITIES));
    let loads = store.faults().calls(Op::LoadHistory);
    let turns = worker.stats().turns;
    worker.shutdown().await;
    (loads, turns)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_is_loaded_once_with_extended_sessions() {
    let (loads, turns) = run_chain(true).await;
    assert_eq!(turns, ACTIVITIES + 1, "one turn per result, plus the start");
    assert_eq!(loads, 1, "the session was reloaded between turns");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_is_loaded_every_turn_without_extended_sessions() {
    let (loads, turns) = run_chain(false).await;
    assert_eq!(turns, ACTIVITIES + 1, "one turn per result, plus the start");
    assert_eq!(loads, turns, "each turn loads the history");
}
