//! A durable timer's message becomes visible `TIMER_LEAD` before the timer is due; the worker
//! fetches it then, holds it without a prefetch-buffer slot, and runs the turn at the due time
//! exactly (never before), even when each dequeue is slow. Driven by a `ManualClock` under paused tokio time: after each clock
//! advance the test waits until every task is idle (`wait::idle`).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::common::*;
use taskhub::worker::TIMER_LEAD;
use taskhub::*;
use taskhub_storage::memory::{FaultPlan, MemoryStore, Op, Trigger};
use taskhub_storage::{Clock, ManualClock, QueueName, QueueStore};

const T0: u64 = 1_700_000_000_000;
const BOUND: Duration = Duration::from_secs(10);
const DELAY: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);
/// How long each dequeue takes once the timer's lead has begun.
const SLOW: Duration = Duration::from_millis(10);
/// The gap between the two timers of `Two`.
const APART: Duration = Duration::from_millis(30);

/// How late `now` is after `due`, in ms (negative: early).
fn late_ms(now: SystemTime, due: SystemTime) -> i64 {
    match now.duration_since(due) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

fn registry() -> Registry {
    let mut reg = Registry::new();
    // Returns how late (ms) the turn after the timer ran; negative if early.
    reg.orchestration("Sleep", |ctx: OrchestrationContext, _: ()| async move {
        let due = ctx.now() + DELAY;
        ctx.create_timer(due).await;
        Ok::<_, OrchestrationError>(late_ms(ctx.now(), due))
    });
    // An approval or the timer, whichever comes first.
    reg.orchestration("Race", |ctx: OrchestrationContext, _: ()| async move {
        let won = match when_any2(
            ctx.wait_for_event::<()>("approve"),
            ctx.create_timer(ctx.now() + DELAY),
        )
        .await
        {
            Either::Left(_) => "event",
            Either::Right(()) => "timer",
        };
        Ok::<_, OrchestrationError>(won.to_owned())
    });
    // Two timers set in one turn, 30 ms apart: how late each turn after them ran (ms).
    reg.orchestration("Two", |ctx: OrchestrationContext, _: ()| async move {
        let (first, second) = (ctx.now() + DELAY, ctx.now() + DELAY + APART);
        let (a, b) = (ctx.create_timer(first), ctx.create_timer(second));
        a.await;
        let late_a = late_ms(ctx.now(), first);
        b.await;
        Ok::<_, OrchestrationError>((late_a, late_ms(ctx.now(), second)))
    });
    reg.orchestration("Quick", |_: OrchestrationContext, _: ()| async move {
        Ok::<_, OrchestrationError>(7u32)
    });
    reg
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_timer_is_fetched_its_lead_early_held_without_a_buffer_slot_and_fires_on_time() {
    let t0 = Timestamp::from_millis(T0);
    let due = Timestamp::from_millis(T0 + 1_000);
    assert_eq!(due.saturating_since(t0), DELAY);
    // One partition and a prefetch buffer of one message: a held timer that kept its buffer
    // slot would keep every other message of the hub from being fetched.
    let (clock, store, hub, worker) = hub_at_t0(Settings {
        control_queue_batch_size: 1,
        control_queue_buffer_threshold: 1,
        ..fast_settings()
    })
    .await;
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
    let done = wait_done(&client, &id, BOUND).await;
    assert_eq!(done.output::<i64>().unwrap(), Some(0), "lateness in ms");
    // Dequeues already waiting out their delay need the clock to move to end.
    store.faults().set_plan(FaultPlan::none());
    clock.advance(SLOW);
    worker.shutdown().await;
}

/// A hub of one partition on a manual clock at `T0`, its store and its worker.
async fn hub_at_t0(
    settings: Settings,
) -> (Arc<ManualClock>, Arc<MemoryStore>, TaskHub, WorkerHandle) {
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(T0)));
    let store = Arc::new(MemoryStore::new(clock.clone()));
    let settings = Settings {
        partition_count: 1,
        ..settings
    };
    let hub = TaskHub::open_with_clock(store.clone(), settings, clock.clone())
        .await
        .unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    (clock, store, hub, worker)
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_event_that_comes_while_the_timer_is_held_still_comes_first() {
    let (clock, _store, hub, worker) = hub_at_t0(fast_settings()).await;
    let client = hub.client();
    let id = client.start("Race", ()).await.unwrap();
    until_paused("the first turn", BOUND, || worker.stats().turns == 1).await;
    // Inside the timer's lead: the worker holds the timer message.
    clock.advance(DELAY - TIMER_LEAD + 10 * MS);
    wait::idle().await;
    assert_eq!(worker.stats().turns, 1, "the timer fired inside its lead");
    // The approval comes 40 ms before the timer's time: it wins, as it did before the lead.
    client.raise_event(&id, "approve", &()).await.unwrap();
    until_paused("the event's turn", BOUND, || worker.stats().turns == 2).await;
    assert_eq!(
        status_of(&client, &id).await,
        OrchestrationStatus::Completed,
        "the event waited for the held timer"
    );
    let done = wait_done(&client, &id, BOUND).await;
    assert_eq!(done.output::<String>().unwrap().as_deref(), Some("event"));
    worker.shutdown().await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn two_held_timers_of_one_instance_each_fire_at_their_own_time() {
    let (clock, _store, hub, worker) = hub_at_t0(fast_settings()).await;
    let client = hub.client();
    let id = client.start("Two", ()).await.unwrap();
    until_paused("the first turn", BOUND, || worker.stats().turns == 1).await;
    // Both timers inside the lead of the first (the second is fetched with it).
    clock.advance(DELAY - TIMER_LEAD + APART);
    wait::idle().await;
    assert_eq!(worker.stats().turns, 1, "a timer fired inside its lead");
    // The first fires at its time, not at the second's.
    clock.advance(TIMER_LEAD - APART);
    wait::idle().await;
    assert_eq!(
        worker.stats().turns,
        2,
        "the first timer did not fire at its time"
    );
    clock.advance(APART);
    let done = tokio::time::timeout(BOUND, client.wait_for_completion(&id, BOUND))
        .await
        .expect("the second timer did not fire at its time")
        .unwrap();
    assert_eq!(
        done.output::<(i64, i64)>().unwrap(),
        Some((0, 0)),
        "lateness in ms"
    );
    worker.shutdown().await;
}
