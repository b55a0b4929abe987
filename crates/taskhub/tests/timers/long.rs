//! Long durable timers are chunked: the backend caps a message's delay (7 days on the memory
//! backend, as on Azure Storage queues), so a 10-day timer travels as a 7-day message that is
//! re-sent with the remaining 3 days when it arrives early. Driven by a `ManualClock`: the
//! timer fires at its due time, not at the first chunk, and is not lost on the way.
//!
//! Tokio time is paused and the runtime has one thread: after each clock advance the test
//! waits until every task is idle (`wait::idle`), so "nothing fired yet" is checked after the
//! worker provably looked at the queue at the new time, not after an arbitrary sleep.

use std::time::{Duration, SystemTime};

use crate::common::stores::{manual_memory_hub, ManualMemoryHub};
use crate::common::*;
use taskhub::*;
use taskhub_storage::memory::{MemoryStore, Op};
use taskhub_storage::{Clock, QueueName, QueueStore};

const DAY: Duration = Duration::from_secs(24 * 3600);
const BOUND: Duration = Duration::from_secs(10);

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.orchestration("TenDays", |ctx: OrchestrationContext, _: ()| async move {
        let started = ctx.now();
        ctx.sleep(10 * DAY).await;
        let slept = ctx.now().duration_since(started).unwrap_or_default();
        Ok::<_, OrchestrationError>(slept.as_secs())
    });
    reg
}

/// Once the worker has woken at the clock's new time and gone idle again: no checkpoint since
/// `checkpoints` (`chunk` was not handled early), still the first turn only (the timer did not
/// fire), and nothing visible in `queue`.
async fn nothing_handled_yet(
    store: &MemoryStore,
    worker: &WorkerHandle,
    queue: QueueName,
    checkpoints: u64,
    chunk: &str,
) {
    wait::idle().await;
    assert_eq!(
        store.faults().calls(Op::Checkpoint),
        checkpoints,
        "{chunk} was handled early"
    );
    assert_eq!(worker.stats().turns, 1, "the timer fired early");
    assert!(store
        .dequeue(queue, 1, Duration::ZERO)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn ten_day_timer_fires_on_time_through_a_seven_day_cap() {
    let ManualMemoryHub { clock, store, hub } = manual_memory_hub(fast_settings()).await;
    assert_eq!(store.max_delay(), 7 * DAY, "the cap this test is about");
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    let id = client.start("TenDays", ()).await.unwrap();
    let queue = QueueName::Control(id.partition(hub.partition_count()));
    until_paused("the first turn", BOUND, || worker.stats().turns == 1).await;
    let first_turn_checkpoints = store.faults().calls(Op::Checkpoint);

    // Just before the first chunk is due: once the worker has woken at the new time and gone
    // idle again, nothing was processed and nothing is visible.
    clock.advance(7 * DAY - Duration::from_secs(1));
    nothing_handled_yet(&store, &worker, queue, first_turn_checkpoints, "the chunk").await;

    // The 7-day chunk arrives early and is re-sent for the remaining 3 days (one checkpoint
    // that sends the copy and deletes the original); the instance keeps waiting.
    clock.advance(Duration::from_secs(1));
    until_paused("the early chunk to be re-sent", BOUND, || {
        store.faults().calls(Op::Checkpoint) > first_turn_checkpoints
    })
    .await;
    assert_eq!(
        worker.stats().turns,
        1,
        "the timer fired at the first chunk"
    );
    assert_eq!(status_of(&client, &id).await, OrchestrationStatus::Running);
    assert_eq!(
        store.stats(queue).await.unwrap().length,
        1,
        "one timer message, not lost"
    );

    // Just before the due time: after the worker went idle at the new time, still nothing
    // processed or visible, still running.
    let resent_checkpoints = store.faults().calls(Op::Checkpoint);
    clock.advance(3 * DAY - Duration::from_secs(1));
    nothing_handled_yet(
        &store,
        &worker,
        queue,
        resent_checkpoints,
        "the re-sent chunk",
    )
    .await;
    assert_eq!(status_of(&client, &id).await, OrchestrationStatus::Running);

    // Due: it fires, and the orchestration sees exactly ten days pass.
    clock.advance(Duration::from_secs(1));
    let done = tokio::time::timeout(BOUND, client.wait_for_completion(&id, BOUND))
        .await
        .expect("the timer did not fire at its due time")
        .unwrap();
    assert_eq!(done.output::<u64>().unwrap(), Some((10 * DAY).as_secs()));
    let fired_at = done.row.completed_at.unwrap().to_system_time();
    let started_at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_000);
    assert_eq!(fired_at.duration_since(started_at).unwrap(), 10 * DAY);
    assert_eq!(clock.monotonic(), 10 * DAY);
    worker.shutdown().await;
}
