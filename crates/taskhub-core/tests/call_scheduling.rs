//! Every `call_*` schedules its work at the call, not when its future is first polled: calling
//! several without awaiting them, then awaiting something else, shows every scheduled action in
//! call order in the same turn.
#![allow(clippy::unwrap_used, reason = "test code: a panic is a failed test")]

mod common;
use std::time::Duration;

use common::*;
use taskhub_core::*;

async fn calls_without_awaiting(
    ctx: OrchestrationContext,
    _: (),
) -> Result<(), OrchestrationError> {
    let policy = RetryPolicy::new(3, Duration::from_secs(1));
    let _a = ctx.call_activity::<_, ()>("A", 1);
    let _b = ctx.call_activity_with_retry::<_, ()>("B", 2, policy.clone());
    let _c = ctx.call_sub_orchestration::<_, ()>("C", 3);
    let _d = ctx.call_sub_orchestration_with::<_, ()>(
        "D",
        4,
        SubOrchestrationOptions {
            retry: Some(policy),
            ..SubOrchestrationOptions::default()
        },
    );
    let _e = ctx.call_sub_orchestration_with::<_, ()>("E", 5, SubOrchestrationOptions::default());
    ctx.wait_for_event::<()>("go").await?;
    Ok(())
}

#[test]
fn every_call_schedules_at_the_call_in_call_order() {
    let mut reg = Registry::new();
    reg.orchestration("Calls", calls_without_awaiting);
    let mut d = Driver::new(reg, "calls");
    let r = d.start("Calls", ());
    let scheduled: Vec<(u64, String)> = r
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::ScheduleActivity { task_id, name, .. }
            | Action::StartSubOrchestration { task_id, name, .. } => Some((*task_id, name.clone())),
            _ => None,
        })
        .collect();
    let expected: Vec<(u64, String)> = ["A", "B", "C", "D", "E"]
        .iter()
        .enumerate()
        .map(|(i, n)| (i as u64, (*n).to_owned()))
        .collect();
    assert_eq!(scheduled, expected);
}
