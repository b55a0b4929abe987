//! Nondeterministic code is detected on replay and fails the instance with an error naming the
//! history position, what history recorded and what the code did.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a failed test"
)]

mod common;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use taskhub_core::*;

async fn original(ctx: OrchestrationContext, _: ()) -> Result<(), OrchestrationError> {
    let _: () = ctx.call_activity("Reserve", ()).await?;
    let _: () = ctx.call_activity("Charge", ()).await?;
    let _: () = ctx.call_activity("Ship", ()).await?;
    Ok(())
}

/// Records the original's history up to (not including) the turn that completes "Charge",
/// then replays it with `changed` code and runs that turn.
fn replay_with<F, Fut>(changed: F) -> TurnResult
where
    F: Fn(OrchestrationContext, ()) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), OrchestrationError>> + Send + 'static,
{
    let mut reg = Registry::new();
    reg.orchestration("Order", original);
    let mut d = Driver::new(reg, "order")
        .activity("Reserve", |_, _| Ok(payload(())))
        .activity("Charge", |_, _| Ok(payload(())));
    d.start("Order", ());
    let reserve_done = d.inbox.pop_front().unwrap();
    d.turn(vec![reserve_done]);
    let charge_done = d.inbox.pop_front().unwrap();
    let mut reg2 = Registry::new();
    reg2.orchestration("Order", changed);
    let mut s = OrchestrationSession::load(Arc::new(reg2), d.id.clone(), &d.history);
    let r = s.turn(TurnInput {
        now: ts(9_999_999),
        messages: vec![charge_done],
    });
    assert_eq!(s.status(), OrchestrationStatus::Failed);
    r
}

fn failure_of(r: &TurnResult) -> FailureDetails {
    let failure = r.new_events.iter().find_map(|e| match &e.event {
        EventKind::ExecutionFailed { failure } => Some(failure.clone()),
        _ => None,
    });
    let failure = failure.expect("instance failed");
    assert_eq!(failure.error_type, "NonDeterminism");
    assert!(r.actions.iter().any(|a| matches!(a, Action::Fail { .. })));
    failure
}

#[test]
fn different_activity_name() {
    let r = replay_with(|ctx, ()| async move {
        let _: () = ctx.call_activity("Reserve", ()).await?;
        let _: () = ctx.call_activity("Refund", ()).await?;
        Ok(())
    });
    // History: 0 OrchestratorStarted, 1 ExecutionStarted, 2 TaskScheduled 'Reserve', 3 OrchestratorCompleted,
    // 4 OrchestratorStarted, 5 TaskCompleted, 6 TaskScheduled 'Charge'.
    assert_eq!(
        failure_of(&r).message,
        "event 6: history has TaskScheduled 'Charge', code scheduled activity 'Refund'"
    );
}

#[test]
fn different_kind_of_action() {
    let r = replay_with(|ctx, ()| async move {
        let _: () = ctx.call_activity("Reserve", ()).await?;
        ctx.sleep(Duration::from_secs(1)).await;
        Ok(())
    });
    assert_eq!(
        failure_of(&r).message,
        "event 6: history has TaskScheduled 'Charge', code created a timer"
    );
}

#[test]
fn fewer_actions() {
    let r = replay_with(|ctx, ()| async move {
        let _: () = ctx.call_activity("Reserve", ()).await?;
        ctx.wait_for_event::<()>("never").await?;
        Ok(())
    });
    assert_eq!(
        failure_of(&r).message,
        "event 6: history has TaskScheduled 'Charge', code scheduled nothing more"
    );
}

#[test]
fn code_completes_early() {
    let r = replay_with(|ctx, ()| async move {
        let _: () = ctx.call_activity("Reserve", ()).await?;
        Ok(())
    });
    assert_eq!(
        failure_of(&r).message,
        "event 6: history has TaskScheduled 'Charge', code completed"
    );
}

#[test]
fn more_actions() {
    let r = replay_with(|ctx, ()| async move {
        let a = ctx.call_activity::<_, ()>("Reserve", ());
        let b = ctx.call_activity::<_, ()>("Audit", ());
        a.await?;
        b.await?;
        Ok(())
    });
    assert_eq!(
        failure_of(&r).message,
        "event 3: history has OrchestratorCompleted, code scheduled activity 'Audit'"
    );
}

#[test]
fn new_messages_after_nondeterminism_are_not_applied() {
    let r = replay_with(|ctx, ()| async move {
        let _: () = ctx.call_activity("Other", ()).await?;
        Ok(())
    });
    assert_eq!(
        failure_of(&r).message,
        "event 2: history has TaskScheduled 'Reserve', code scheduled activity 'Other'"
    );
    assert!(!r
        .new_events
        .iter()
        .any(|e| matches!(e.event, EventKind::TaskCompleted { .. })));
    assert_eq!(r.discarded.len(), 1);
}

#[test]
fn corrupt_history_completion_for_unknown_task() {
    let mut reg = Registry::new();
    reg.orchestration("Order", original);
    let reg = Arc::new(reg);
    let id = InstanceId::new("c").unwrap();
    let history = vec![
        HistoryEvent::new(ts(0), EventKind::OrchestratorStarted),
        HistoryEvent::new(
            ts(0),
            started("Order", Payload::null(), ExecutionId::new("e").unwrap()),
        ),
        HistoryEvent::new(
            ts(0),
            EventKind::TaskScheduled {
                task_id: 0,
                name: "Reserve".into(),
                version: None,
                input: Payload::null(),
                attempt: 1,
                tags: Default::default(),
            },
        ),
        HistoryEvent::new(ts(0), EventKind::OrchestratorCompleted),
        HistoryEvent::new(ts(1), EventKind::OrchestratorStarted),
        HistoryEvent::new(
            ts(1),
            EventKind::TimerFired {
                task_id: 0,
                fire_at: ts(1),
            },
        ),
    ];
    let mut s = OrchestrationSession::load(reg, id, &history);
    let r = s.turn(TurnInput {
        now: ts(2),
        messages: vec![],
    });
    let f = failure_of(&r);
    assert_eq!(
        f.message,
        "event 5: history has TimerFired, code has no open timer with task ID 0"
    );
}
