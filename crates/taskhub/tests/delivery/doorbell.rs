//! The work-item doorbell (`worker/shared/doorbell.rs`): a worker whose turn leaves work items on the
//! shared queue (more than its free activity slots) rings through its lease row, and another
//! worker, whose idle work-item poller would not poll again for most of an hour, runs them
//! after its next lease read — without waiting for its idle back-off.
//!
//! Two workers on one memory store, each on its own hub handle (so no in-process wake-up
//! crosses from one to the other, as between two processes). The clock is a `ManualClock`
//! moved only by the test; tokio time is paused on one thread, so `wait::idle` ("no task is
//! ready to run") is an observable state, and nothing here depends on the machine's speed.

use std::sync::Arc;
use std::time::Duration;

use crate::common::registries::add_fan_out;
use crate::common::*;
use taskhub::*;
use taskhub_storage::faults::{FaultPlan, Op};
use taskhub_storage::faulty::FaultyStore;
use taskhub_storage::memory::MemoryStore;
use taskhub_storage::{ManualClock, TaskHubStore};
use tokio::sync::Semaphore;

/// The holder's activity waits on `gate`, so its one activity slot stays busy.
fn holder_registry(gate: Arc<Semaphore>) -> Registry {
    let mut reg = Registry::new();
    reg.activity("Work", move |_c: ActivityContext, x: u64| {
        let gate = gate.clone();
        async move {
            let _permit = gate.acquire().await;
            Ok::<_, ActivityError>(x)
        }
    });
    add_fan_out(&mut reg, "Fan", "Work");
    reg
}

fn helper_registry() -> Registry {
    let mut reg = Registry::new();
    reg.activity("Work", |_c: ActivityContext, x: u64| async move {
        Ok::<_, ActivityError>(x)
    });
    reg
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_second_worker_joins_a_burst_without_waiting_for_its_idle_back_off() {
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_700_000_000_000)));
    let backend = Arc::new(MemoryStore::new(clock.clone()));
    // The helper's own view of the store counts its calls: it holds no partition, so its
    // dequeues are all work-item polls.
    let helper_store = Arc::new(FaultyStore::new(
        backend.clone(),
        clock.clone(),
        FaultPlan::none(),
    ));
    let holder_settings = Settings {
        partition_count: 1,
        max_concurrent_activities: 1,
        ..Settings::default()
    };
    // An hour-long idle cap: without the doorbell, the helper polls the work-item queue once
    // in 45 to 60 minutes.
    let helper_settings = Settings {
        partition_count: 1,
        max_queue_polling_interval: Duration::from_secs(3600),
        max_work_item_polling_interval: Duration::from_secs(3600),
        ..Settings::default()
    };
    let hub_a = TaskHub::open_with_clock(backend.clone(), holder_settings, clock.clone())
        .await
        .unwrap();
    let helper_dyn: Arc<dyn TaskHubStore> = helper_store.clone();
    let hub_b = TaskHub::open_with_clock(helper_dyn, helper_settings, clock.clone())
        .await
        .unwrap();
    let gate = Arc::new(Semaphore::new(0));
    let a = Worker::start(&hub_a, holder_registry(gate.clone()))
        .await
        .unwrap();
    let b = Worker::start(&hub_b, helper_registry()).await.unwrap();
    wait::idle().await;
    assert_eq!(
        a.partitions().len(),
        1,
        "the holder holds the one partition"
    );

    // The helper's idle work-item poller backs off from 10 ms to its cap of an hour: each
    // step moves the clock by the poller's current level (its wait is 75-100 % of it), so it
    // polls once per step.
    let polls = || helper_store.faults().calls(Op::Dequeue);
    let mut level = Duration::from_millis(10);
    while level < Duration::from_secs(3600) {
        let before = polls();
        clock.advance(level);
        wait::idle().await;
        assert_eq!(polls(), before + 1, "one idle poll per step at {level:?}");
        level = (level * 2).min(Duration::from_secs(3600));
    }
    clock.advance(level);
    wait::idle().await;
    // Now its next poll is 45 to 60 minutes away: a minute passes without one.
    let idle_polls = polls();
    for _ in 0..6 {
        clock.advance(Duration::from_secs(10));
        wait::idle().await;
    }
    assert_eq!(
        polls(),
        idle_polls,
        "the helper's poller is at its idle cap"
    );
    assert_eq!(backend.partitions_snapshot()[0].doorbell, 0);

    // A fan-out of three: the holder claims one work item (its one slot) and sends two to the
    // queue, then rings.
    let client = hub_a.client();
    client.start("Fan", 3u64).await.unwrap();
    wait::idle().await;
    let rows = backend.partitions_snapshot();
    assert_eq!(
        rows[0].doorbell, 1,
        "the holder rang in a renewal: {rows:?}"
    );
    assert_eq!(b.stats().activities, 0);

    // The helper's next lease read (at most an acquire interval away) sees the ring, and its
    // poller runs both work items at once.
    clock.advance(Duration::from_secs(10));
    wait::idle().await;
    assert_eq!(
        b.stats().activities,
        2,
        "the helper ran the overflow after its lease read; its work-item polls: {} -> {}",
        idle_polls,
        polls()
    );
    assert_eq!(
        a.partitions().len(),
        1,
        "the holder still holds the partition"
    );

    gate.add_permits(1);
    wait::idle().await;
    a.shutdown().await;
    b.shutdown().await;
}
