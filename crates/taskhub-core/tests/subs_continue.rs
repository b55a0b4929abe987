//! Sub-orchestrations and continue-as-new.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a failed test"
)]

mod common;
use std::time::Duration;

use common::*;
use taskhub_core::*;

async fn parent(ctx: OrchestrationContext, n: u32) -> Result<String, OrchestrationError> {
    let a: u32 = ctx.call_sub_orchestration("Child", n).await?;
    let opts = SubOrchestrationOptions {
        instance_id: Some(InstanceId::new("explicit-child").unwrap()),
        ..Default::default()
    };
    match ctx
        .call_sub_orchestration_with::<_, u32>("Child", 0, opts)
        .await
    {
        Ok(_) => Ok("unexpected".into()),
        Err(e) => Ok(format!("{a} then {e}")),
    }
}

/// The task and instance IDs of the sub-orchestration the last turn started first.
fn child_started(d: &Driver) -> (u64, InstanceId) {
    match d.last.actions.first() {
        Some(Action::StartSubOrchestration {
            task_id,
            instance_id,
            ..
        }) => (*task_id, instance_id.clone()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn sub_orchestration_start_completion_and_failure() {
    let mut reg = Registry::new();
    reg.orchestration("Parent", parent);
    let mut d = Driver::new(reg, "p");
    d.start("Parent", 21);
    let Action::StartSubOrchestration {
        task_id,
        name,
        instance_id,
        input,
        ..
    } = d.last.actions[0].clone()
    else {
        panic!("{:?}", d.last.actions)
    };
    assert_eq!(
        (name.as_str(), instance_id.as_str(), input.as_str()),
        ("Child", "p:0", "21")
    );
    let m = d.msg(EventKind::SubOrchestrationCompleted {
        task_id,
        result: payload(42),
    });
    d.turn(vec![m]);
    let (task_id, instance_id) = child_started(&d);
    assert_eq!(instance_id.as_str(), "explicit-child");
    let m = d.msg(EventKind::SubOrchestrationFailed {
        task_id,
        failure: FailureDetails::new("X", "child broke"),
    });
    d.turn(vec![m]);
    assert_eq!(
        d.output::<String>(),
        "42 then sub-orchestration 'Child' failed: child broke"
    );
}

#[test]
fn child_notifies_parent_on_completion_failure_and_termination() {
    let mut reg = Registry::new();
    reg.orchestration("Child", |_ctx: OrchestrationContext, n: u32| async move {
        if n == 0 {
            return Err(OrchestrationError::new("zero"));
        }
        Ok(n * 2)
    });
    reg.orchestration("Waits", |ctx: OrchestrationContext, _: ()| async move {
        ctx.wait_for_event::<()>("never").await?;
        Ok::<_, OrchestrationError>(())
    });
    let parent = ParentInstance {
        instance_id: InstanceId::new("p").unwrap(),
        execution_id: ExecutionId::new("pe").unwrap(),
        task_id: 7,
        name: None,
    };
    for (name, input, expect_ok) in [("Child", 4, true), ("Child", 0, false)] {
        let mut d = Driver::new(reg.clone(), "p:7");
        let m = d.msg(started_by(
            Some(parent.clone()),
            name,
            payload(input),
            ExecutionId::new("c1").unwrap(),
        ));
        d.turn(vec![m]);
        let notify = d.last.actions.iter().find_map(|a| match a {
            Action::NotifyParent { parent: p, event } => Some((p.clone(), event.clone())),
            _ => None,
        });
        let (p, event) = notify.expect("parent notified");
        assert_eq!(p, parent);
        match event {
            EventKind::SubOrchestrationCompleted { task_id: 7, result } => {
                assert!(expect_ok);
                assert_eq!(result.as_str(), "8");
            }
            EventKind::SubOrchestrationFailed {
                task_id: 7,
                failure,
            } => {
                assert!(!expect_ok);
                assert_eq!(failure.message, "zero");
            }
            other => panic!("{other:?}"),
        }
    }
    let mut d = Driver::new(reg, "p:7");
    let m = d.msg(started_by(
        Some(parent),
        "Waits",
        payload(()),
        ExecutionId::new("c2").unwrap(),
    ));
    d.turn(vec![m]);
    let m = d.msg(EventKind::ExecutionTerminated {
        reason: "operator".into(),
        output: None,
    });
    d.turn(vec![m]);
    assert_eq!(d.session.status(), OrchestrationStatus::Terminated);
    assert!(d.last.actions.iter().any(|a| matches!(a,
        Action::NotifyParent { event: EventKind::SubOrchestrationFailed { failure, .. }, .. } if failure.error_type == "Terminated")));
}

#[test]
fn sub_orchestration_retry_uses_new_child_per_attempt() {
    let mut reg = Registry::new();
    reg.orchestration("P", |ctx: OrchestrationContext, _: ()| async move {
        let opts = SubOrchestrationOptions {
            retry: Some(RetryPolicy::new(2, Duration::from_secs(1))),
            ..Default::default()
        };
        Ok::<u32, OrchestrationError>(ctx.call_sub_orchestration_with("C", (), opts).await?)
    });
    let mut d = Driver::new(reg, "sr");
    d.start("P", ());
    let (task_id, instance_id) = child_started(&d);
    assert_eq!(instance_id.as_str(), "sr:0");
    let m = d.msg(EventKind::SubOrchestrationFailed {
        task_id,
        failure: FailureDetails::new("E", "first"),
    });
    d.turn(vec![m]);
    d.fire_next_timer();
    let (task_id, instance_id) = child_started(&d);
    assert_eq!(instance_id.as_str(), "sr:2");
    let m = d.msg(EventKind::SubOrchestrationCompleted {
        task_id,
        result: payload(5),
    });
    d.turn(vec![m]);
    assert_eq!(d.output::<u32>(), 5);
}

async fn counter(ctx: OrchestrationContext, count: u32) -> Result<u32, OrchestrationError> {
    let step: u32 = ctx.wait_for_event("add").await?;
    if count + step >= 10 {
        return Ok(count + step);
    }
    let opts = ContinueAsNewOptions {
        preserve_unprocessed_events: true,
        ..Default::default()
    };
    ctx.continue_as_new_with(count + step, opts).await
}

#[test]
fn continue_as_new_carries_unprocessed_events_in_order() {
    let mut reg = Registry::new();
    reg.orchestration("Counter", counter);
    let mut d = Driver::new(reg, "cnt");
    d.start("Counter", 0);
    let a = d.event("add", 1);
    let b = d.event("add", 2);
    let c = d.event("add", 3);
    d.turn(vec![a, b, c]);
    assert_eq!(d.session.status(), OrchestrationStatus::ContinuedAsNew);
    let Action::ContinueAsNew {
        execution_id,
        input,
        carried_events,
        ..
    } = d.last.actions.last().cloned().unwrap()
    else {
        panic!("{:?}", d.last.actions)
    };
    assert_eq!(input.as_str(), "1");
    let carried: Vec<&str> = carried_events.iter().map(|e| e.input.as_str()).collect();
    assert_eq!(carried, vec!["2", "3"]);
    assert_eq!(
        execution_id,
        ExecutionId::new("exec-1").unwrap().next_generation()
    );
    let ev = d
        .history
        .iter()
        .rev()
        .find(|e| e.event.is_terminal())
        .unwrap();
    assert!(
        matches!(&ev.event, EventKind::ContinuedAsNew { carried_events, .. } if carried_events.len() == 2)
    );

    // The next generation: a fresh session fed the new start plus the carried events.
    let mut reg = Registry::new();
    reg.orchestration("Counter", counter);
    let mut next = Driver::new(reg, "cnt");
    let mut msgs = vec![next.msg(started("Counter", input, execution_id))];
    for e in carried_events {
        msgs.push(next.msg(EventKind::EventRaised {
            name: e.name,
            input: e.input,
        }));
    }
    next.turn(msgs);
    // 1 + 2 = 3 → continue again carrying "3"
    assert_eq!(next.session.status(), OrchestrationStatus::ContinuedAsNew);
    let Action::ContinueAsNew {
        input,
        carried_events,
        ..
    } = next.last.actions.last().cloned().unwrap()
    else {
        panic!()
    };
    assert_eq!(input.as_str(), "3");
    assert_eq!(carried_events.len(), 1);
}

#[test]
fn continue_as_new_without_preserve_drops_pending_events() {
    let mut reg = Registry::new();
    reg.orchestration("Loop", |ctx: OrchestrationContext, n: u32| async move {
        ctx.wait_for_event::<u32>("tick").await?;
        let drop_them = ContinueAsNewOptions {
            preserve_unprocessed_events: false,
            ..ContinueAsNewOptions::default()
        };
        ctx.continue_as_new_with::<_, ()>(n + 1, drop_them).await
    });
    let mut d = Driver::new(reg, "loop");
    d.start("Loop", 0);
    let a = d.event("tick", 1);
    let b = d.event("tick", 2);
    d.turn(vec![a, b]);
    let Action::ContinueAsNew { carried_events, .. } = d.last.actions.last().cloned().unwrap()
    else {
        panic!()
    };
    assert!(carried_events.is_empty());
    assert_eq!(d.last.discarded.len(), 1);
    assert_eq!(d.last.discarded[0].reason, DiscardReason::InstanceFinished);
    // Dropped, but never silently: the history names the dropped event.
    let dropped = d.history.iter().find_map(|e| match &e.event {
        EventKind::ContinuedAsNew { dropped_events, .. } => Some(dropped_events.clone()),
        _ => None,
    });
    let dropped = dropped.unwrap();
    assert_eq!(dropped.len(), 1);
    assert_eq!(
        (dropped[0].name.as_str(), dropped[0].input.as_str()),
        ("tick", "2")
    );
}
