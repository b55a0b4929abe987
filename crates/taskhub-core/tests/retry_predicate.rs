//! Retry policies with a predicate on the failure (`RetryPolicy::with_retry_if`, DTFx's
//! `RetryOptions.Handle`): a rejected failure ends the retries at once, an accepted one is
//! retried up to `max_attempts`, for activities and sub-orchestrations alike, and replaying the
//! recorded history takes the same decisions.
#![allow(clippy::unwrap_used, clippy::panic, reason = "test code")]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use taskhub_core::*;

const CHARGE: ActivityRef<u64, String> = ActivityRef::new("Charge");
const CHILD: OrchestrationRef<(), u32> = OrchestrationRef::new("Child");

/// What the predicate saw: (error type, message, task name) per call.
type Seen = Arc<Mutex<Vec<(String, String, String)>>>;

/// Retries only failures whose type is not `CardDeclined`, recording what it was asked.
fn policy(seen: &Seen) -> RetryPolicy {
    let seen = seen.clone();
    RetryPolicy::new(4, Duration::from_secs(1)).with_retry_if(move |err| {
        seen.lock().unwrap().push((
            err.error_type().unwrap_or_default().to_owned(),
            err.message().unwrap_or_default().to_owned(),
            err.task_name().unwrap_or_default().to_owned(),
        ));
        err.error_type() != Some("CardDeclined")
    })
}

fn charge_registry(seen: &Seen) -> Registry {
    let seen = seen.clone();
    let mut reg = Registry::new();
    reg.orchestration("Pay", move |ctx: OrchestrationContext, amount: u64| {
        let policy = policy(&seen);
        async move { Ok::<_, OrchestrationError>(ctx.call_with_retry(CHARGE, amount, policy).await?) }
    });
    reg
}

/// Delivers activity results and fires timers until nothing is pending.
fn run_to_end(d: &mut Driver) {
    loop {
        d.run_one_by_one();
        if d.timers.is_empty() {
            break;
        }
        d.fire_next_timer();
    }
}

fn scheduled_attempts(d: &Driver) -> Vec<u32> {
    d.history
        .iter()
        .filter_map(|e| match &e.event {
            EventKind::TaskScheduled { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect()
}

fn timers_created(d: &Driver) -> usize {
    d.history
        .iter()
        .filter(|e| matches!(e.event, EventKind::TimerCreated { .. }))
        .count()
}

#[test]
fn a_rejected_error_type_stops_retrying_at_once() {
    let seen = Seen::default();
    let mut d = Driver::new(charge_registry(&seen), "declined").activity("Charge", |_, _| {
        Err(FailureDetails::new("CardDeclined", "insufficient funds"))
    });
    d.start("Pay", 120_u64);
    run_to_end(&mut d);

    assert_eq!(
        scheduled_attempts(&d),
        [1],
        "a rejected failure is not retried"
    );
    assert_eq!(
        timers_created(&d),
        0,
        "no back-off timer after a rejected failure"
    );
    assert_eq!(d.session.status(), OrchestrationStatus::Failed);
    assert_eq!(
        d.failure().message,
        "activity 'Charge' failed: insufficient funds"
    );
    // The predicate saw what it needs to match on: the type, the message and the task.
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty());
    assert!(seen.iter().all(|s| *s
        == (
            "CardDeclined".to_owned(),
            "insufficient funds".to_owned(),
            "Charge".to_owned()
        )));
}

#[test]
fn an_accepted_error_is_retried_up_to_max_attempts() {
    let seen = Seen::default();
    let mut d = Driver::new(charge_registry(&seen), "flaky").activity("Charge", |_, attempt| {
        Err(FailureDetails::new(
            "GatewayTimeout",
            format!("no answer on attempt {attempt}"),
        ))
    });
    d.start("Pay", 120_u64);
    run_to_end(&mut d);

    assert_eq!(scheduled_attempts(&d), [1, 2, 3, 4]);
    assert_eq!(timers_created(&d), 3, "one back-off timer between attempts");
    assert_eq!(
        d.failure().message,
        "activity 'Charge' failed: no answer on attempt 4"
    );
    // Asked after attempts 1 to 3 only: the last attempt ends the retries by itself.
    let asked: Vec<String> = seen.lock().unwrap().iter().map(|s| s.1.clone()).collect();
    for attempt in 1..=3 {
        assert!(asked.contains(&format!("no answer on attempt {attempt}")));
    }
    assert!(!asked.contains(&"no answer on attempt 4".to_owned()));
}

#[test]
fn the_predicate_is_asked_per_failure() {
    // Transient first, then a declined card: two attempts, then the failure of the second.
    let seen = Seen::default();
    let mut d = Driver::new(charge_registry(&seen), "mixed").activity("Charge", |_, attempt| {
        if attempt == 1 {
            Err(FailureDetails::new("GatewayTimeout", "no answer"))
        } else {
            Err(FailureDetails::new("CardDeclined", "card expired"))
        }
    });
    d.start("Pay", 120_u64);
    run_to_end(&mut d);
    assert_eq!(scheduled_attempts(&d), [1, 2]);
    assert_eq!(
        d.failure().message,
        "activity 'Charge' failed: card expired"
    );
}

#[test]
fn non_retryable_failures_end_retries_before_the_predicate_is_asked() {
    let seen = Seen::default();
    let mut d = Driver::new(charge_registry(&seen), "fatal").activity("Charge", |_, _| {
        let mut f = FailureDetails::new("GatewayTimeout", "marked permanent");
        f.non_retryable = true;
        Err(f)
    });
    d.start("Pay", 120_u64);
    run_to_end(&mut d);
    assert_eq!(scheduled_attempts(&d), [1]);
    assert!(seen.lock().unwrap().is_empty(), "predicate asked: {seen:?}");
}

#[test]
fn replaying_a_finished_history_gives_the_same_result() {
    for (id, fails_with) in [
        ("replay-retried", "GatewayTimeout"),
        ("replay-rejected", "CardDeclined"),
    ] {
        let seen = Seen::default();
        let registry = charge_registry(&seen);
        let mut d = Driver::new(registry.clone(), id).activity("Charge", move |_, attempt| {
            Err(FailureDetails::new(
                fails_with,
                format!("attempt {attempt}"),
            ))
        });
        d.start("Pay", 7_u64);
        run_to_end(&mut d);
        let failure = d.failure();

        // Re-run the code over everything but the last turn (the predicate decides again on
        // every recorded failure), then deliver the last turn's message again: the same
        // outcome, and no further attempt or timer.
        let last_turn = d
            .history
            .iter()
            .rposition(|e| matches!(e.event, EventKind::OrchestratorStarted))
            .unwrap();
        let last_failure = d.history[last_turn..]
            .iter()
            .find_map(|e| match &e.event {
                EventKind::TaskFailed { .. } => Some(e.event.clone()),
                _ => None,
            })
            .unwrap();
        let fresh = Arc::new(registry);
        let instance = InstanceId::new(id).unwrap();
        let mut replayed =
            OrchestrationSession::load(fresh.clone(), instance.clone(), &d.history[..last_turn]);
        assert_eq!(replayed.status(), OrchestrationStatus::Running);
        let message = Message::from_client(instance.clone(), last_failure, ts(d.now));
        let turn = replayed.turn(TurnInput {
            now: ts(d.now),
            messages: vec![message],
        });
        assert!(turn.actions.iter().all(|a| !matches!(
            a,
            Action::ScheduleActivity { .. } | Action::CreateTimer { .. }
        )));
        assert!(
            turn.new_events.iter().any(
                |e| matches!(&e.event, EventKind::ExecutionFailed { failure: f } if *f == failure)
            ),
            "{id}: {:?}",
            turn.new_events
        );
        // Loading the whole history gives the recorded outcome too.
        let loaded = OrchestrationSession::load(fresh, instance, &d.history);
        assert_eq!(loaded.status(), OrchestrationStatus::Failed);
        assert_eq!(loaded.history_len(), d.history.len() as u64);
    }
}

fn sub_registry(accept: bool) -> Registry {
    let mut reg = Registry::new();
    reg.orchestration(
        "Parent",
        move |ctx: OrchestrationContext, _: ()| async move {
            let options = SubOrchestrationOptions {
                retry: Some(
                    RetryPolicy::new(3, Duration::from_secs(1))
                        .with_retry_if(move |err| accept && err.error_type() == Some("Busy")),
                ),
                ..Default::default()
            };
            Ok::<_, OrchestrationError>(ctx.call_sub_with(CHILD, (), options).await?)
        },
    );
    reg
}

/// Fails every child the parent starts with `Busy`, firing timers between; returns the child
/// instance IDs started.
fn fail_children(d: &mut Driver) -> Vec<String> {
    let mut children = Vec::new();
    loop {
        let started: Vec<(u64, InstanceId)> = d
            .last
            .actions
            .iter()
            .filter_map(|a| match a {
                Action::StartSubOrchestration {
                    task_id,
                    instance_id,
                    ..
                } => Some((*task_id, instance_id.clone())),
                _ => None,
            })
            .collect();
        for (task_id, child) in started {
            children.push(child.as_str().to_owned());
            let m = d.msg(EventKind::SubOrchestrationFailed {
                task_id,
                failure: FailureDetails::new("Busy", format!("{child} is busy")),
            });
            d.turn(vec![m]);
        }
        if d.timers.is_empty() {
            return children;
        }
        d.fire_next_timer();
    }
}

#[test]
fn sub_orchestrations_follow_the_predicate() {
    let mut d = Driver::new(sub_registry(true), "sub-accept");
    d.start("Parent", ());
    let children = fail_children(&mut d);
    assert_eq!(children.len(), 3, "retried to max attempts: {children:?}");
    assert_eq!(d.session.status(), OrchestrationStatus::Failed);

    let mut d = Driver::new(sub_registry(false), "sub-reject");
    d.start("Parent", ());
    let children = fail_children(&mut d);
    assert_eq!(
        children,
        ["sub-reject:0"],
        "a rejected failure is not retried"
    );
    assert_eq!(
        d.failure().message,
        "sub-orchestration 'Child' failed: sub-reject:0 is busy"
    );
}

/// A child that passes its activity's failure on with `?`.
fn child_registry() -> Registry {
    let mut reg = Registry::new();
    reg.orchestration("Child", |ctx: OrchestrationContext, _: ()| async move {
        ctx.call(CHARGE, 5).await?;
        Ok::<_, OrchestrationError>(1_u32)
    });
    reg
}

#[test]
fn a_parent_sees_the_root_cause_of_a_child_that_passed_its_activity_failure_on() {
    // The child: its activity fails CardDeclined, non-retryable; `?` passes it on.
    let mut d = Driver::new(child_registry(), "child");
    d.start("Child", ());
    let mut declined = FailureDetails::new("CardDeclined", "insufficient funds");
    declined.non_retryable = true;
    let m = d.msg(EventKind::TaskFailed {
        task_id: 0,
        failure: declined,
    });
    d.turn(vec![m]);
    let failed = d.failure();
    assert_eq!(failed.error_type, "CardDeclined", "{failed:?}");
    assert!(failed.non_retryable, "{failed:?}");
    assert_eq!(
        failed.message,
        "activity 'Charge' failed: insufficient funds"
    );

    // The parent: its predicate is asked about that failure and sees the root type; the
    // retryable copy is judged by the predicate, the non-retryable one ends retries at once.
    for non_retryable in [false, true] {
        let seen: Seen = Arc::default();
        let seen_by_policy = seen.clone();
        let mut reg = Registry::new();
        reg.orchestration("Parent", move |ctx: OrchestrationContext, _: ()| {
            let policy = policy(&seen_by_policy);
            async move {
                let options = SubOrchestrationOptions {
                    retry: Some(policy),
                    ..Default::default()
                };
                Ok::<_, OrchestrationError>(ctx.call_sub_with(CHILD, (), options).await?)
            }
        });
        let mut p = Driver::new(reg, &format!("parent-{non_retryable}"));
        p.start("Parent", ());
        let mut failure = failed.clone();
        failure.non_retryable = non_retryable;
        let m = p.msg(EventKind::SubOrchestrationFailed {
            task_id: 0,
            failure,
        });
        p.turn(vec![m]);
        assert_eq!(p.session.status(), OrchestrationStatus::Failed);
        assert_eq!(p.failure().error_type, "CardDeclined");
        assert!(p.timers.is_empty(), "no retry was scheduled");
        let asked: Vec<String> = seen.lock().unwrap().iter().map(|s| s.0.clone()).collect();
        let want: &[&str] = if non_retryable {
            &[]
        } else {
            &["CardDeclined"]
        };
        assert_eq!(asked, want, "non-retryable {non_retryable}");
    }
}
