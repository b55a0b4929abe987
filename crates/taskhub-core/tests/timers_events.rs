//! Durable timers, buffered external events, when-all and when-any.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a failed test"
)]

mod common;
use std::time::Duration;

use common::*;
use taskhub_core::*;

async fn approval(ctx: OrchestrationContext, _: ()) -> Result<String, OrchestrationError> {
    let timeout = ctx.sleep(Duration::from_secs(60));
    let answer = ctx.wait_for_event::<bool>("approval");
    Ok(match when_any2(timeout, answer).await {
        Either::Left(()) => "timed out".into(),
        Either::Right(Ok(true)) => "approved".into(),
        Either::Right(Ok(false)) => "rejected".into(),
        Either::Right(Err(e)) => format!("bad event: {e}"),
    })
}

fn approval_driver() -> Driver {
    let mut reg = Registry::new();
    reg.orchestration("Approval", approval);
    Driver::new(reg, "a1")
}

#[test]
fn when_any_event_beats_timer() {
    let mut d = approval_driver();
    d.start("Approval", ());
    assert_eq!(d.timers.len(), 1);
    d.raise("approval", true);
    assert_eq!(d.output::<String>(), "approved");
    // The timer still fires later: its completion is recorded and ignored, nothing breaks.
    d.fire_next_timer();
    assert!(
        d.last.new_events.is_empty(),
        "finished instance records nothing"
    );
    assert_eq!(d.last.discarded[0].reason, DiscardReason::InstanceFinished);
}

#[test]
fn when_any_timer_beats_event_and_late_event_is_not_applied() {
    let mut d = approval_driver();
    d.start("Approval", ());
    d.fire_next_timer();
    assert_eq!(d.output::<String>(), "timed out");
    d.raise("approval", true);
    assert!(d.last.new_events.is_empty());
}

#[test]
fn timer_and_event_in_same_batch_first_message_wins() {
    let mut d = approval_driver();
    d.start("Approval", ());
    let (task_id, fire_at) = d.timers[0];
    let ev = d.event("approval", false);
    let tf = d.msg(EventKind::TimerFired { task_id, fire_at });
    d.turn(vec![ev, tf]);
    assert_eq!(d.output::<String>(), "rejected");
}

#[test]
fn events_raised_before_the_wait_are_buffered_in_arrival_order() {
    let mut reg = Registry::new();
    reg.orchestration("Collect", |ctx: OrchestrationContext, _: ()| async move {
        // Give events time to arrive before the first wait starts.
        ctx.sleep(Duration::from_secs(1)).await;
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(ctx.wait_for_event::<u32>("n").await?);
        }
        Ok::<_, OrchestrationError>(got)
    });
    let mut d = Driver::new(reg, "b1");
    d.start("Collect", ());
    d.raise("n", 1);
    d.raise("other", 99);
    d.raise("n", 2);
    d.raise("n", 3);
    d.fire_next_timer();
    assert_eq!(d.output::<Vec<u32>>(), vec![1, 2, 3]);
}

#[test]
fn several_waiters_of_one_name_are_served_first_come() {
    let mut reg = Registry::new();
    reg.orchestration("Two", |ctx: OrchestrationContext, _: ()| async move {
        let first = ctx.wait_for_event::<String>("go");
        let second = ctx.wait_for_event::<String>("go");
        // Awaiting in the other order does not change who is served first.
        let b = second.await?;
        let a = first.await?;
        Ok::<_, OrchestrationError>(format!("{a}-{b}"))
    });
    let mut d = Driver::new(reg, "w");
    d.start("Two", ());
    d.raise("go", "x");
    d.raise("go", "y");
    assert_eq!(d.output::<String>(), "x-y");
}

#[test]
fn dropped_waiter_gives_event_back() {
    let mut reg = Registry::new();
    reg.orchestration("Drop", |ctx: OrchestrationContext, _: ()| async move {
        {
            let w = ctx.wait_for_event::<u32>("e");
            let t = ctx.sleep(Duration::from_secs(5));
            if let Either::Right(v) = when_any2(t, w).await {
                return Ok::<_, OrchestrationError>(vec![v?]);
            }
        }
        // The first wait timed out; a later event must reach the next waiter.
        let v = ctx.wait_for_event::<u32>("e").await?;
        Ok(vec![0, v])
    });
    let mut d = Driver::new(reg, "dw");
    d.start("Drop", ());
    d.fire_next_timer();
    d.raise("e", 42);
    assert_eq!(d.output::<Vec<u32>>(), vec![0, 42]);
}

async fn fan_out(ctx: OrchestrationContext, n: u32) -> Result<u64, OrchestrationError> {
    let tasks = (0..n).map(|i| ctx.call_activity::<_, u64>("Square", i));
    let results = when_all(tasks).await;
    let mut sum = 0;
    for r in results {
        sum += r?;
    }
    Ok(sum)
}

#[test]
fn when_all_fan_out_fan_in_any_completion_order() {
    let mut reg = Registry::new();
    reg.orchestration("FanOut", fan_out);
    let square = |input: &str, _| {
        let i: u64 = serde_json::from_str(input).unwrap();
        Ok(payload(i * i))
    };
    let expected: u64 = (0..100u64).map(|i| i * i).sum();

    let mut d = Driver::new(reg.clone(), "f1").activity("Square", square);
    d.start("FanOut", 100);
    assert_eq!(d.last.actions.len(), 100);
    d.run_batched();
    assert_eq!(d.output::<u64>(), expected);

    let mut d = Driver::new(reg, "f2").activity("Square", square);
    d.start("FanOut", 100);
    let mut inbox: Vec<Message> = d.inbox.drain(..).collect();
    inbox.reverse();
    for chunk in inbox.chunks(7) {
        d.turn(chunk.to_vec());
    }
    assert_eq!(d.output::<u64>(), expected);
}

#[test]
fn when_any_returns_first_ready_index() {
    let mut reg = Registry::new();
    reg.orchestration("Race", |ctx: OrchestrationContext, _: ()| async move {
        let timers = vec![
            ctx.sleep(Duration::from_secs(30)),
            ctx.sleep(Duration::from_secs(10)),
        ];
        let (idx, ()) = when_any(timers).await;
        Ok::<_, OrchestrationError>(idx)
    });
    let mut d = Driver::new(reg, "race");
    d.start("Race", ());
    d.fire_next_timer(); // the 10 s timer fires first
    assert_eq!(d.output::<usize>(), 1);
}

#[test]
fn timer_fires_at_requested_time_and_now_is_deterministic() {
    let mut reg = Registry::new();
    reg.orchestration("T", |ctx: OrchestrationContext, _: ()| async move {
        let t0 = ctx.now();
        ctx.sleep(Duration::from_secs(3600)).await;
        let t1 = ctx.now();
        Ok::<_, OrchestrationError>(t1.duration_since(t0).unwrap().as_secs() >= 3600)
    });
    let mut d = Driver::new(reg, "t");
    d.start("T", ());
    let created = d
        .history
        .iter()
        .find(|e| matches!(e.event, EventKind::TimerCreated { .. }))
        .unwrap();
    let EventKind::TimerCreated { fire_at, .. } = created.event else {
        unreachable!()
    };
    assert_eq!(
        fire_at.as_millis() - created.timestamp.as_millis(),
        3_600_000
    );
    d.fire_next_timer();
    assert!(d.output::<bool>());
}
