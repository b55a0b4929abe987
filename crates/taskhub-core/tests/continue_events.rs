//! No event is lost across continue-as-new: events that arrive in the turn that continues as
//! new are carried over by default; events that arrive after the execution ended wait for the
//! next execution instead of being discarded; dropping them is explicit and recorded.
#![allow(clippy::unwrap_used, reason = "test code: a panic is a failed test")]

mod common;
use common::*;
use taskhub_core::*;

/// Continues as new after every event: `incr` adds one, `decr` subtracts one, `stop` returns.
async fn counter(ctx: OrchestrationContext, n: i64) -> Result<i64, OrchestrationError> {
    let op: String = ctx.wait_for_event("op").await?;
    let n = match op.as_str() {
        "incr" => n + 1,
        "decr" => n - 1,
        _ => return Ok(n),
    };
    ctx.continue_as_new(n).await
}

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.orchestration("Counter", counter);
    reg
}

fn op(d: &mut Driver, what: &str) -> Message {
    d.event("op", what)
}

fn start(d: &mut Driver, input: Payload, execution: &str) -> Message {
    let mut m = d.msg(started(
        "Counter",
        input,
        ExecutionId::new(execution).unwrap(),
    ));
    m.execution_id = Some(ExecutionId::new(execution).unwrap());
    m
}

/// Runs generation after generation, as the runtime does: each next execution gets its start
/// and then the carried events. Returns the output of the last one and the generation count.
fn run_generations(mut d: Driver) -> (i64, usize) {
    let mut generations = 1;
    loop {
        let Some(Action::ContinueAsNew {
            execution_id,
            input,
            carried_events,
            ..
        }) = d.last.actions.last().cloned()
        else {
            return (d.output(), generations);
        };
        assert!(d.last.discarded.is_empty(), "{:?}", d.last.discarded);
        generations += 1;
        let mut next = Driver::new(registry(), "counter");
        next.seq = d.seq;
        let mut batch = vec![start(&mut next, input, execution_id.as_str())];
        for e in carried_events {
            batch.push(next.msg(EventKind::EventRaised {
                name: e.name,
                input: e.input,
            }));
        }
        next.turn(batch);
        d = next;
    }
}

#[test]
fn events_arriving_in_the_turn_that_continues_as_new_are_carried_by_default() {
    let mut d = Driver::new(registry(), "counter");
    d.start("Counter", 0);
    let batch = ["incr", "incr", "incr", "decr", "incr", "stop"]
        .into_iter()
        .map(|w| op(&mut d, w))
        .collect();
    d.turn(batch);
    let (total, generations) = run_generations(d);
    assert_eq!(total, 3, "incr incr incr decr incr");
    assert_eq!(generations, 6);
}

#[test]
fn events_arriving_after_the_execution_continued_wait_for_the_next_one() {
    let mut d = Driver::new(registry(), "counter");
    d.start("Counter", 0);
    let first = op(&mut d, "incr");
    d.turn(vec![first]);
    assert_eq!(d.session.status(), OrchestrationStatus::ContinuedAsNew);

    // The execution has ended; its next one has not started yet.
    let late = op(&mut d, "incr");
    let terminate = d.msg(EventKind::ExecutionTerminated {
        reason: "later".into(),
        output: None,
    });
    let mut old_timer = d.msg(EventKind::TimerFired {
        task_id: 0,
        fire_at: ts(0),
    });
    old_timer.execution_id = Some(ExecutionId::new("exec-1").unwrap());
    let r = d.turn(vec![late.clone(), terminate.clone(), old_timer.clone()]);
    assert!(r.new_events.is_empty());
    let reasons: Vec<(MessageId, DiscardReason)> = r
        .discarded
        .iter()
        .map(|x| (x.message_id.clone(), x.reason))
        .collect();
    assert_eq!(
        reasons,
        vec![
            (late.id, DiscardReason::AwaitingNextExecution),
            (terminate.id, DiscardReason::AwaitingNextExecution),
            (old_timer.id, DiscardReason::InstanceFinished),
        ],
        "events and untargeted control messages are for the next execution"
    );
}

#[test]
fn dropping_unprocessed_events_is_explicit_and_recorded() {
    let mut reg = Registry::new();
    reg.orchestration("Once", |ctx: OrchestrationContext, _: ()| async move {
        ctx.wait_for_event::<String>("op").await?;
        let options = ContinueAsNewOptions {
            preserve_unprocessed_events: false,
            ..ContinueAsNewOptions::default()
        };
        ctx.continue_as_new_with::<_, ()>((), options).await
    });
    let mut d = Driver::new(reg, "once");
    d.start("Once", ());
    let batch = ["a", "b", "c"].into_iter().map(|w| op(&mut d, w)).collect();
    d.turn(batch);
    let Some(EventKind::ContinuedAsNew {
        carried_events,
        dropped_events,
        ..
    }) = d
        .history
        .iter()
        .rev()
        .map(|e| e.event.clone())
        .find(EventKind::is_terminal)
    else {
        panic!("not continued: {:?}", d.history)
    };
    assert!(carried_events.is_empty());
    let dropped: Vec<&str> = dropped_events.iter().map(|e| e.input.as_str()).collect();
    assert_eq!(dropped, vec!["\"b\"", "\"c\""]);
}

/// The next execution starts as the runtime starts it: from the `ContinueAsNew` action.
fn next_generation(d: &Driver) -> (Driver, Message) {
    let Some(Action::ContinueAsNew {
        execution_id,
        input,
        applied_event_ids,
        ..
    }) = d.last.actions.last().cloned()
    else {
        panic!("did not continue as new: {:?}", d.last.actions)
    };
    let mut next = Driver::new(registry(), "counter");
    next.seq = d.seq;
    let mut m = start(&mut next, input, execution_id.as_str());
    if let EventKind::ExecutionStarted {
        applied_event_ids: ids,
        ..
    } = &mut m.event
    {
        *ids = applied_event_ids;
    }
    (next, m)
}

#[test]
fn an_event_applied_before_a_continue_as_new_is_not_applied_again_after_it() {
    let mut d = Driver::new(registry(), "counter");
    d.start("Counter", 0);
    let first = op(&mut d, "incr");
    // A redelivery in the same turn, after the code continued as new: not carried over.
    let again = first.clone();
    d.turn(vec![first.clone(), again]);
    assert_eq!(d.session.status(), OrchestrationStatus::ContinuedAsNew);
    assert_eq!(
        d.last
            .discarded
            .iter()
            .map(|x| x.reason)
            .collect::<Vec<_>>(),
        vec![DiscardReason::Duplicate]
    );

    // The next execution, with a later redelivery (or a client's retry under one event ID).
    let (mut next, started) = next_generation(&d);
    next.turn(vec![started]);
    let r = next.turn(vec![first.clone()]);
    assert!(r.new_events.is_empty(), "applied again: {:?}", r.new_events);
    assert_eq!(r.discarded.len(), 1);
    assert_eq!(r.discarded[0].reason, DiscardReason::Duplicate);

    // Reloaded from its history (another worker, no extended session): still a duplicate.
    let mut reloaded =
        OrchestrationSession::load(next.registry.clone(), next.id.clone(), &next.history);
    let r = reloaded.turn(TurnInput {
        now: ts(next.now + 10),
        messages: vec![first],
    });
    assert!(r.new_events.is_empty(), "applied again: {:?}", r.new_events);
    assert_eq!(r.discarded[0].reason, DiscardReason::Duplicate);

    // A new event still counts.
    let incr = op(&mut next, "incr");
    next.turn(vec![incr]);
    let (mut third, started) = next_generation(&next);
    let stop = op(&mut third, "stop");
    third.turn(vec![started, stop]);
    assert_eq!(third.output::<i64>(), 2);
}
