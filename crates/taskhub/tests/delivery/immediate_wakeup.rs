//! Immediate wake-up (DESIGN §6): a message enqueued by this process wakes its idle poller at
//! once, however long `max_queue_polling_interval` is. The clock is a `ManualClock` that is
//! never advanced, so an idle poller's back-off sleep never ends: only the in-process signal
//! can get a start, an activity, its result or a raised event processed.
//!
//! Tokio time is paused and the runtime has one thread, so "every poller is parked" is an
//! observable state (`wait::idle`: no task is ready to run), and a wake-up that did not happen
//! fails the bounded waits as soon as the runtime is idle without it.

use std::time::Duration;

use crate::common::registries::double_then_wait_registry;
use crate::common::stores::{manual_memory_hub, ManualMemoryHub};
use crate::common::*;
use taskhub::*;
use taskhub_storage::memory::Op;
use taskhub_storage::Clock;

/// Paused tokio time: this bound runs out only once the runtime is idle without the awaited
/// progress (a missed wake-up), whatever the machine's load.
const BOUND: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn start_and_raise_wake_idle_pollers_at_once() {
    let settings = Settings {
        max_queue_polling_interval: Duration::from_secs(3600),
        ..fast_settings()
    };
    let ManualMemoryHub { clock, store, hub } = manual_memory_hub(settings).await;
    let worker = Worker::start(&hub, double_then_wait_registry())
        .await
        .unwrap();
    let client = hub.client();
    wait::idle().await;
    let idle = store.faults().calls(Op::Dequeue);

    let id = client.start("DoubleThenWait", 20u64).await.unwrap();
    // The start ran its first turn, the activity ran and its result was applied: the
    // instance now waits for the event.
    tokio::time::timeout(BOUND, async {
        while worker.stats().turns < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the start and the activity result were not picked up without a poll");
    assert_eq!(worker.stats().activities, 1);
    let status = find(&client, &id).await.unwrap();
    assert_eq!(status.status(), OrchestrationStatus::Running);

    wait::idle().await;
    client.raise_event(&id, "extra", &2u64).await.unwrap();
    let done = tokio::time::timeout(BOUND, client.wait_for_completion(&id, BOUND))
        .await
        .expect("the raised event was not picked up without a poll")
        .unwrap();
    assert_eq!(done.output::<u64>().unwrap(), Some(42));

    // Each wake-up cost a few dequeues, not a polling loop.
    let woken = store.faults().calls(Op::Dequeue) - idle;
    assert!(woken < 40, "{woken} dequeues for three wake-ups");
    assert_eq!(clock.monotonic(), Duration::ZERO, "the clock never moved");
    worker.shutdown().await;
}
