//! Extended sessions avoid history reloads: with them on, an orchestration stays in memory
//! between turns and its history is loaded once; with them off, every turn loads it. Counted
//! with the memory backend's per-operation call counters.

use std::time::Duration;

use crate::common::registries::{add_inc, add_seq};
use crate::common::stores::memory_store;
use crate::common::*;
use taskhub::*;
use taskhub_storage::memory::Op;

const ACTIVITIES: u64 = 6;

fn registry() -> Registry {
    let mut reg = Registry::new();
    add_inc(&mut reg);
    add_seq(&mut reg);
    reg
}

/// Runs one `Seq` of `ACTIVITIES` steps; returns (history loads, turns).
async fn run_chain(extended: bool) -> (u64, u64) {
    let store = memory_store();
    let settings = Settings {
        extended_sessions_enabled: extended,
        extended_session_idle_timeout: Duration::from_secs(60),
        ..fast_settings()
    };
    let hub = TaskHub::open(store.clone(), settings).await.unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    store.faults().reset_counts();
    let id = client.start("Seq", ACTIVITIES).await.unwrap();
    let done = wait_done(&client, &id, Duration::from_secs(20)).await;
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

/// With more waiting instances than `max_extended_sessions`, the longest idle sessions leave
/// memory (DESIGN invariant 5: memory grows with active sessions, not with instances); an
/// evicted instance loads its history again when its event comes, and finishes correctly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_beyond_the_cap_leave_memory_and_reload_on_their_next_message() {
    const INSTANCES: usize = 6;
    const CAP: usize = 2;
    let store = memory_store();
    let settings = Settings {
        extended_session_idle_timeout: Duration::from_secs(3600),
        max_extended_sessions: CAP,
        ..fast_settings()
    };
    let hub = TaskHub::open(store.clone(), settings).await.unwrap();
    let mut reg = registry();
    reg.orchestration("Waiter", |ctx: OrchestrationContext, ()| async move {
        let got: u64 = ctx.wait_for_event("go").await?;
        Ok::<_, OrchestrationError>(got * 2)
    });
    let worker = Worker::start(&hub, reg).await.unwrap();
    let client = hub.client();
    let mut ids = Vec::new();
    for _ in 0..INSTANCES {
        ids.push(client.start("Waiter", ()).await.unwrap());
    }
    // Every instance reaches its wait (one turn each); at most CAP stay in memory.
    wait::until(
        "every instance waiting, at most CAP in memory",
        || worker.stats().turns >= INSTANCES as u64 && worker.active_sessions() <= CAP,
        || (worker.stats(), worker.active_sessions()),
    )
    .await;
    assert_eq!(worker.stats().sessions_evicted, (INSTANCES - CAP) as u64);

    store.faults().reset_counts();
    for (i, id) in ids.iter().enumerate() {
        client.raise_event(id, "go", &(i as u64)).await.unwrap();
    }
    for (i, id) in ids.iter().enumerate() {
        let done = wait_done(&client, id, Duration::from_secs(20)).await;
        assert_eq!(done.output::<u64>().unwrap(), Some(i as u64 * 2));
    }
    // The evicted ones loaded their history again; each held one loaded it at most once (a
    // held session may itself be pushed out by the reloads before its event arrives).
    let loads = store.faults().calls(Op::LoadHistory);
    assert!(
        loads >= (INSTANCES - CAP) as u64 && loads <= INSTANCES as u64,
        "{loads} history loads"
    );
    worker.shutdown().await;
}
