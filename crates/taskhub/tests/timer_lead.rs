//! A durable timer's message becomes visible `TIMER_LEAD` before the timer is due; the worker
//! fetches it then, holds it without a prefetch-buffer slot, and runs the turn at the due time
//! exactly (never before), even when each dequeue is slow. Driven by a `ManualClock` under paused tokio time: after each clock
//! advance the test waits until every task is idle (`wait::idle`).
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests"
)]

mod common;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use taskhub::worker::TIMER_LEAD;
use taskhub::*;
use taskhub_storage::memory::{FaultPlan, MemoryStore, Op, Trigger};
use taskhub_storage::{Clock, ManualClock, QueueName, QueueStore};

const BOUND: Duration = Duration::from_secs(10);
const DELAY: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);
/// How long each dequeue takes once the timer's lead has begun.
const SLOW: Duration = Duration::from_millis(10);

fn registry() -> Registry {
    let mut reg = Registry::new();
    // Returns how late (ms) the turn after the timer ran; negative if early.
    reg.orchestration("Sleep", |ctx: OrchestrationContext, _: ()| async move {
        let due = ctx.now() + DELAY;
        ctx.create_timer(due).await;
        let late = match ctx.now().duration_since(due) {
            Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
            Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
        };
        Ok::<_, OrchestrationError>(late)
    });
    reg.orchestration("Quick", |_: OrchestrationContext, _: ()| async move {
        Ok::<_, OrchestrationError>(7u32)
    });
    reg
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_timer_is_fetched_its_lead_early_held_without_a_buffer_slot_and_fires_on_time() {
    let t0 = Timestamp::from_millis(1_700_000_000_000);
    let due = Timestamp::from_millis(1_700_000_001_000);
    assert_eq!(due.saturating_since(t0), DELAY);
    let clock = Arc::new(ManualClock::new(t0));
    let store = Arc::new(MemoryStore::new(clock.clone()));
    // One partition and a prefetch buffer of one message: a held timer that kept its buffer
    // slot would keep every other message of the hub from being fetched.
    let settings = Settings {
        partition_count: 1,
        control_queue_batch_size: 1,
        control_queue_buffer_threshold: 1,
        ..fast_settings()
    };
    let hub = TaskHub::open_with_clock(store.clone(), settings, clock.clone())
        .await
        .unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    let queue = QueueName::Control(0);
    let id = client.start("Sleep", ()).await.unwrap();
    until_paused("the first turn", BOUND, || worker.stats().turns == 1).await;

    // Just before the lead: the timer message is not visible yet.
    clock.advance(DELAY - TIMER_LEAD - MS);
    wait::idle().await;
    assert_eq!(worker.stats().turns, 1, "the timer fired early");
    assert_eq!(store.stats(queue).await.unwrap().length, 1);

    // From here every dequeue takes SLOW on the clock: fetched when it is due, the timer would
    // fire SLOW late; fetched at the start of its lead, it is in hand in time.
    // (Trigger numbering starts afresh with the plan.)
    let mut plan = FaultPlan::none();
    for n in 1..=1_000 {
        plan = plan.delay(Trigger::nth_of(Op::Dequeue, n), SLOW);
    }
    store.faults().set_plan(plan);
    clock.advance(2 * MS);
    wait::idle().await;
    clock.advance(SLOW);
    wait::idle().await;
    assert_eq!(worker.stats().turns, 1, "the timer fired inside its lead");
    assert_eq!(store.stats(queue).await.unwrap().length, 1, "not consumed");

    // While the timer is held, the buffer's one slot is free: another instance runs.
    let quick = client.start("Quick", ()).await.unwrap();
    for _ in 0..6 {
        if worker.stats().turns >= 2 {
            break;
        }
        clock.advance(5 * MS);
        wait::idle().await;
    }
    assert_eq!(
        status_of(&client, &quick).await,
        OrchestrationStatus::Completed
    );
    assert_eq!(status_of(&client, &id).await, OrchestrationStatus::Running);

    // A millisecond before the due time: still held, not fired.
    clock.advance(due.saturating_since(clock.now()) - MS);
    wait::idle().await;
    assert_eq!(status_of(&client, &id).await, OrchestrationStatus::Running);

    // Due: the turn runs at the due time exactly.
    clock.advance(MS);
    wait::idle().await;
    assert_eq!(
        status_of(&client, &id).await,
        OrchestrationStatus::Completed,
        "the held timer did not fire at its due time"
    );
    let done = client.wait_for_completion(&id, BOUND).await.unwrap();
    assert_eq!(done.output::<i64>().unwrap(), Some(0), "lateness in ms");
    // Dequeues already waiting out their delay need the clock to move to end.
    store.faults().set_plan(FaultPlan::none());
    clock.advance(SLOW);
    worker.shutdown().await;
}
