//! Activities: results, typed failures, retry policies, and what the activity context carries.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a failed test"
)]

mod common;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use taskhub_core::*;

async fn charge(ctx: OrchestrationContext, amount: u32) -> Result<String, OrchestrationError> {
    match ctx.call_activity::<_, String>("Charge", amount).await {
        Ok(r) => Ok(r),
        Err(e) => {
            let f = e.failure().cloned().unwrap();
            Ok(format!(
                "caught: {} / {} / {}",
                e,
                f.error_type,
                f.details.unwrap_or_default()
            ))
        }
    }
}

#[test]
fn activity_failure_reaches_orchestration_typed_with_details() {
    let mut reg = Registry::new();
    reg.orchestration("Charge", charge);
    let mut d = Driver::new(reg, "c1").activity("Charge", |_, _| {
        let mut f = FailureDetails::new("CardDeclined", "card declined");
        f.details = Some("code 51".into());
        Err(f)
    });
    d.start("Charge", 5);
    d.run_one_by_one();
    assert_eq!(
        d.output::<String>(),
        "caught: activity 'Charge' failed: card declined / CardDeclined / code 51"
    );
}

async fn unhandled(ctx: OrchestrationContext, _: ()) -> Result<String, OrchestrationError> {
    let r: String = ctx.call_activity("Charge", 1).await?;
    Ok(r)
}

#[test]
fn unhandled_error_fails_instance_with_text_preserved() {
    let mut reg = Registry::new();
    reg.orchestration("U", unhandled);
    let mut d = Driver::new(reg, "u1").activity("Charge", |_, _| {
        Err(FailureDetails::new("X", "insufficient funds"))
    });
    d.start("U", ());
    d.run_one_by_one();
    let f = d.failure();
    assert_eq!(f.message, "activity 'Charge' failed: insufficient funds");
    assert_eq!(d.session.status(), OrchestrationStatus::Failed);
    assert!(d
        .all_actions
        .iter()
        .any(|a| matches!(a, Action::Fail { .. })));
}

#[test]
fn panic_in_orchestration_fails_instance_not_process() {
    let mut reg = Registry::new();
    reg.orchestration("P", |_ctx: OrchestrationContext, _: ()| async move {
        if true {
            panic!("boom at step 3");
        }
        Ok::<_, OrchestrationError>(())
    });
    let mut d = Driver::new(reg, "p1");
    d.start("P", ());
    let f = d.failure();
    assert_eq!(f.error_type, "Panic");
    assert!(f.message.contains("boom at step 3"), "{f:?}");
}

async fn retrying(ctx: OrchestrationContext, _: ()) -> Result<String, OrchestrationError> {
    let policy = RetryPolicy::new(4, Duration::from_secs(1)).with_backoff_coefficient(2.0);
    Ok(ctx
        .call_activity_with_retry::<_, String>("Flaky", (), policy)
        .await?)
}

#[test]
fn retry_waits_on_durable_timers_with_backoff_and_passes_attempt() {
    let mut reg = Registry::new();
    reg.orchestration("R", retrying);
    let mut d = Driver::new(reg, "r1").activity("Flaky", |_, attempt| {
        if attempt < 3 {
            Err(FailureDetails::new(
                "Transient",
                format!("attempt {attempt} failed"),
            ))
        } else {
            Ok(payload(format!("ok on attempt {attempt}")))
        }
    });
    d.start("R", ());
    d.run_one_by_one(); // attempt 1 fails → timer
    assert_eq!(d.timers.len(), 1);
    let first_fire = d.timers[0].1;
    let created_at = d
        .last_event(|e| matches!(e, EventKind::TimerCreated { .. }))
        .timestamp;
    assert_eq!(first_fire.as_millis() - created_at.as_millis(), 1000);
    d.fire_next_timer();
    d.run_one_by_one(); // attempt 2 fails → timer of 2 s
    let created_at = d
        .last_event(|e| matches!(e, EventKind::TimerCreated { .. }))
        .timestamp;
    assert_eq!(d.timers[0].1.as_millis() - created_at.as_millis(), 2000);
    d.fire_next_timer();
    d.run_one_by_one();
    assert_eq!(d.output::<String>(), "ok on attempt 3");
    let attempts: Vec<u32> = d
        .history
        .iter()
        .filter_map(|e| match &e.event {
            EventKind::TaskScheduled { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect();
    assert_eq!(attempts, vec![1, 2, 3]);
}

#[test]
fn retry_gives_up_after_max_attempts_and_on_non_retryable() {
    let mut reg = Registry::new();
    reg.orchestration("R", retrying);
    let calls = Arc::new(AtomicU32::new(0));
    let c = calls.clone();
    let mut d = Driver::new(reg.clone(), "r2").activity("Flaky", move |_, a| {
        c.fetch_add(1, Ordering::SeqCst);
        Err(FailureDetails::new("T", format!("fail {a}")))
    });
    d.start("R", ());
    loop {
        d.run_one_by_one();
        if d.timers.is_empty() {
            break;
        }
        d.fire_next_timer();
    }
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    assert_eq!(d.failure().message, "activity 'Flaky' failed: fail 4");

    let mut d = Driver::new(reg, "r3").activity("Flaky", |_, _| {
        let mut f = FailureDetails::new("Fatal", "bad request");
        f.non_retryable = true;
        Err(f)
    });
    d.start("R", ());
    d.run_one_by_one();
    assert!(
        d.timers.is_empty(),
        "non-retryable failure must not be retried"
    );
    assert_eq!(d.failure().message, "activity 'Flaky' failed: bad request");
}

#[test]
fn retry_timeout_stops_retrying() {
    let mut reg = Registry::new();
    reg.orchestration("RT", |ctx: OrchestrationContext, _: ()| async move {
        let p = RetryPolicy::new(10, Duration::from_secs(10))
            .with_retry_timeout(Duration::from_secs(15));
        Ok::<String, OrchestrationError>(ctx.call_activity_with_retry("F", (), p).await?)
    });
    let mut d = Driver::new(reg, "rt").activity("F", |_, _| Err(FailureDetails::new("T", "no")));
    d.start("RT", ());
    d.run_one_by_one();
    d.fire_next_timer(); // first retry at +10 s is within 15 s
    d.run_one_by_one(); // second would be at +20 s: over the timeout
    assert!(d.timers.is_empty());
    assert_eq!(d.session.status(), OrchestrationStatus::Failed);
}

#[test]
fn activity_context_and_registry_errors() {
    let mut reg = Registry::new();
    reg.activity("Echo", |ctx: ActivityContext, x: u32| async move {
        Ok::<_, ActivityError>(format!(
            "{}:{}:{}:{x}",
            ctx.instance_id(),
            ctx.task_name(),
            ctx.attempt()
        ))
    });
    let ctx = ActivityContext::new(ActivityInvocation {
        instance_id: InstanceId::new("i9").unwrap(),
        execution_id: ExecutionId::new("e").unwrap(),
        name: "Echo".into(),
        task_id: 3,
        attempt: 2,
    });
    let fut = reg.start_activity("Echo", ctx.clone(), payload(7)).unwrap();
    let out = futures_executor_block_on(fut).unwrap();
    assert_eq!(out.parse::<String>("o").unwrap(), "i9:Echo:2:7");

    let err = reg
        .start_activity("Nope", ctx.clone(), payload(1))
        .err()
        .unwrap();
    assert_eq!(err.error_type, "ActivityNotFound");
    assert!(
        err.message.contains("'Nope' is not registered") && err.message.contains("Echo"),
        "{}",
        err.message
    );

    let bad = futures_executor_block_on(
        reg.start_activity("Echo", ctx, payload("not a number"))
            .unwrap(),
    )
    .unwrap_err();
    assert_eq!(bad.error_type, "InvalidInput");
    assert!(bad.non_retryable);
}

#[test]
fn unknown_orchestration_fails_with_clear_error() {
    let mut reg = Registry::new();
    reg.orchestration("Known", unhandled);
    let mut d = Driver::new(reg, "x");
    d.start("Missing", ());
    let f = d.failure();
    assert_eq!(f.error_type, "OrchestrationNotFound");
    assert!(
        f.message.contains("'Missing' is not registered") && f.message.contains("Known"),
        "{}",
        f.message
    );
}

#[test]
fn bad_orchestration_input_fails_clearly() {
    let mut reg = Registry::new();
    reg.orchestration("Charge", charge);
    let mut d = Driver::new(reg, "x");
    d.start("Charge", "not a number");
    let f = d.failure();
    assert_eq!(f.error_type, "InvalidInput");
    assert!(
        f.message.contains("input of orchestration 'Charge'"),
        "{}",
        f.message
    );
}

/// Minimal executor for futures that never wait on I/O.
fn futures_executor_block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Context, Poll, Waker};
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}
