//! Rewind: a failed execution runs again from where it failed, keeping what succeeded. Every
//! turn's history is replayed from scratch by the driver (`Driver::check_replay`), so each
//! test also proves that the rewound history replays.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a failed test"
)]

mod common;
use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::*;
use taskhub_core::*;

/// An activity that fails until `fixed` is set, counting its runs.
fn flaky(
    fixed: &Rc<Cell<bool>>,
    runs: &Rc<Cell<u32>>,
) -> impl Fn(&str, u32) -> Result<Payload, FailureDetails> {
    let (fixed, runs) = (fixed.clone(), runs.clone());
    move |input, _| {
        runs.set(runs.get() + 1);
        if fixed.get() {
            Ok(payload(format!("paid {input}")))
        } else {
            Err(FailureDetails::new("Down", "payment service unavailable"))
        }
    }
}

fn counted(
    runs: &Rc<Cell<u32>>,
    out: &'static str,
) -> impl Fn(&str, u32) -> Result<Payload, FailureDetails> {
    let runs = runs.clone();
    move |_, _| {
        runs.set(runs.get() + 1);
        Ok(payload(out))
    }
}

async fn checkout(ctx: OrchestrationContext, _: ()) -> Result<String, OrchestrationError> {
    let reserved: String = ctx.call_activity("Reserve", ()).await?;
    let paid: String = ctx.call_activity("Pay", 7).await?;
    Ok(format!("{reserved} {paid}"))
}

fn kinds(events: &[HistoryEvent]) -> Vec<&'static str> {
    events.iter().map(|e| e.event.type_name()).collect()
}

#[test]
fn a_failed_activity_runs_again_and_what_succeeded_is_kept() {
    let (fixed, pay_runs, reserve_runs) = (Rc::default(), Rc::default(), Rc::default());
    let mut reg = Registry::new();
    reg.orchestration("Checkout", checkout);
    let mut d = Driver::new(reg, "r1")
        .activity("Reserve", counted(&reserve_runs, "reserved"))
        .activity("Pay", flaky(&fixed, &pay_runs));
    d.start("Checkout", ());
    d.run_one_by_one();
    assert_eq!(d.session.status(), OrchestrationStatus::Failed);

    fixed.set(true);
    let (plan, r) = d.rewind(Some("payments are back"));
    assert_eq!(
        plan.rewound_tasks,
        vec![1],
        "the failed Pay is dropped with its schedule"
    );
    assert!(!kinds(&plan.kept).contains(&"TaskFailed"));
    assert!(!kinds(&plan.kept).contains(&"ExecutionFailed"));
    assert_eq!(
        kinds(&r.new_events),
        [
            "OrchestratorStarted",
            "ExecutionRewound",
            "TaskScheduled",
            "OrchestratorCompleted"
        ]
    );
    assert!(matches!(
        &r.new_events[1].event,
        EventKind::ExecutionRewound { reason: Some(reason), rewound_tasks } if reason == "payments are back" && *rewound_tasks == vec![1]
    ));
    assert_eq!(r.status, Some(OrchestrationStatus::Running));
    d.run_one_by_one();
    assert_eq!(d.output::<String>(), "reserved paid 7");
    assert_eq!(
        reserve_runs.get(),
        1,
        "the reservation that succeeded is not run again"
    );
    assert_eq!(pay_runs.get(), 2);
}

#[test]
fn only_a_failed_execution_can_be_rewound() {
    let mut reg = Registry::new();
    reg.orchestration("Checkout", checkout);
    let mut d = Driver::new(reg, "r2")
        .activity("Reserve", |_, _| Ok(payload("r")))
        .activity("Pay", |_, _| Ok(payload("p")));
    d.start("Checkout", ());
    // Running: a rewind request is discarded, naming the status.
    let m = d.msg(EventKind::ExecutionRewound {
        reason: None,
        rewound_tasks: Vec::new(),
    });
    let r = d.turn(vec![m]);
    assert_eq!(r.discarded.len(), 1);
    assert_eq!(r.discarded[0].reason, DiscardReason::Invalid);
    assert!(
        r.discarded[0].detail.contains("this one is Running"),
        "{}",
        r.discarded[0].detail
    );
    d.run_one_by_one();
    assert_eq!(d.session.status(), OrchestrationStatus::Completed);
    let err =
        OrchestrationSession::load_rewound(d.registry.clone(), d.id.clone(), &d.history, false)
            .unwrap_err();
    assert!(
        matches!(&err, CoreError::NotRewindable { status } if status == "Completed"),
        "{err}"
    );
}

#[test]
fn a_fan_out_runs_only_its_failed_branch_again() {
    let (fixed, pay_runs, ok_runs) = (Rc::default(), Rc::default(), Rc::default());
    let mut reg = Registry::new();
    reg.orchestration("Fan", |ctx: OrchestrationContext, _: ()| async move {
        let calls = vec![
            ctx.call_activity::<_, String>("Ok", 1),
            ctx.call_activity::<_, String>("Pay", 2),
            ctx.call_activity::<_, String>("Ok", 3),
        ];
        let mut out = Vec::new();
        for r in when_all(calls).await {
            out.push(r?);
        }
        Ok::<_, OrchestrationError>(out.join(","))
    });
    let mut d = Driver::new(reg, "r3")
        .activity("Ok", counted(&ok_runs, "ok"))
        .activity("Pay", flaky(&fixed, &pay_runs));
    d.start("Fan", ());
    d.run_one_by_one();
    assert_eq!(d.session.status(), OrchestrationStatus::Failed);
    fixed.set(true);
    let (plan, r) = d.rewind(None);
    assert_eq!(plan.rewound_tasks, vec![1]);
    let scheduled: Vec<u64> = r
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::ScheduleActivity { task_id, .. } => Some(*task_id),
            _ => None,
        })
        .collect();
    assert_eq!(
        scheduled,
        vec![1],
        "only the failed branch is scheduled again"
    );
    d.run_one_by_one();
    assert_eq!(d.output::<String>(), "ok,paid 2,ok");
    assert_eq!(ok_runs.get(), 2);
}

#[test]
fn a_retried_activity_starts_its_retry_policy_afresh() {
    let (fixed, runs) = (Rc::new(Cell::new(false)), Rc::new(Cell::new(0)));
    let attempts = Rc::new(std::cell::RefCell::new(Vec::new()));
    let mut reg = Registry::new();
    reg.orchestration("Retry", |ctx: OrchestrationContext, _: ()| async move {
        let policy = RetryPolicy::new(2, Duration::from_secs(5));
        let r: String = ctx.call_activity_with_retry("Pay", 9, policy).await?;
        Ok::<_, OrchestrationError>(r)
    });
    let (f, n, a) = (fixed.clone(), runs.clone(), attempts.clone());
    let mut d = Driver::new(reg, "r4").activity("Pay", move |input, attempt| {
        n.set(n.get() + 1);
        a.borrow_mut().push(attempt);
        if f.get() {
            Ok(payload(format!("paid {input}")))
        } else {
            Err(FailureDetails::new("Down", "unavailable"))
        }
    });
    d.start("Retry", ());
    d.run_one_by_one();
    d.fire_next_timer();
    d.run_one_by_one();
    assert_eq!(d.session.status(), OrchestrationStatus::Failed);
    assert_eq!(*attempts.borrow(), vec![1, 2]);
    fixed.set(true);
    let (plan, _) = d.rewind(Some("fixed"));
    assert!(
        !kinds(&plan.kept).contains(&"TimerCreated"),
        "the back-off timer goes with the failure"
    );
    d.run_one_by_one();
    assert_eq!(d.output::<String>(), "paid 9");
    assert_eq!(
        *attempts.borrow(),
        vec![1, 2, 1],
        "the policy starts again at attempt 1"
    );
}

#[test]
fn an_open_timer_is_set_again_and_a_received_event_is_kept() {
    let (fixed, runs) = (Rc::default(), Rc::default());
    let mut reg = Registry::new();
    reg.orchestration("Timed", |ctx: OrchestrationContext, _: ()| async move {
        let go: String = ctx.wait_for_event("go").await?;
        let deadline = ctx.sleep(Duration::from_secs(3600));
        let pay = ctx.call_activity::<_, String>("Pay", 1);
        match when_any2(pay, deadline).await {
            Either::Left(paid) => Ok::<_, OrchestrationError>(format!("{go} {}", paid?)),
            Either::Right(_) => Ok("timed out".to_owned()),
        }
    });
    let mut d = Driver::new(reg, "r5").activity("Pay", flaky(&fixed, &runs));
    d.start("Timed", ());
    d.raise("go", "went");
    d.run_one_by_one();
    assert_eq!(d.session.status(), OrchestrationStatus::Failed);
    fixed.set(true);
    let (plan, r) = d.rewind(None);
    assert!(
        kinds(&plan.kept).contains(&"EventRaised"),
        "the event received is kept"
    );
    let timer = plan
        .reopened
        .iter()
        .find(|a| matches!(a, Action::CreateTimer { .. }));
    assert!(
        timer.is_some(),
        "the open timer is set again: {:?}",
        plan.reopened
    );
    assert!(r
        .actions
        .iter()
        .any(|a| matches!(a, Action::CreateTimer { .. })));
    d.run_one_by_one();
    assert_eq!(d.output::<String>(), "went paid 1");
}

static BUGGY: AtomicBool = AtomicBool::new(true);

#[test]
fn a_failure_of_the_code_itself_runs_the_fixed_code_or_fails_again() {
    let runs = Rc::default();
    let mut reg = Registry::new();
    reg.orchestration("Buggy", |ctx: OrchestrationContext, _: ()| async move {
        let a: String = ctx.call_activity("Ok", 1).await?;
        if BUGGY.load(Ordering::SeqCst) {
            return Err(OrchestrationError::new("bug in step 2"));
        }
        let b: String = ctx.call_activity("Ok", 2).await?;
        Ok(format!("{a} {b}"))
    });
    let mut d = Driver::new(reg, "r6").activity("Ok", counted(&runs, "ok"));
    d.start("Buggy", ());
    d.run_one_by_one();
    assert_eq!(d.session.status(), OrchestrationStatus::Failed);
    // Still buggy: the rewound execution fails again in the rewind's turn.
    let (plan, r) = d.rewind(Some("try again"));
    assert!(plan.rewound_tasks.is_empty());
    assert_eq!(kinds(&r.new_events)[1], "ExecutionRewound");
    assert_eq!(r.status, Some(OrchestrationStatus::Failed));
    assert!(d.failure().message.contains("bug in step 2"));
    // Fixed (a new build): the second rewind runs on.
    BUGGY.store(false, Ordering::SeqCst);
    let (_, r) = d.rewind(Some("fixed"));
    assert_eq!(r.status, Some(OrchestrationStatus::Running));
    assert_eq!(
        kinds(&d.history)
            .iter()
            .filter(|k| **k == "ExecutionRewound")
            .count(),
        2
    );
    d.run_one_by_one();
    assert_eq!(d.output::<String>(), "ok ok");
    assert_eq!(runs.get(), 2);
}

#[test]
fn rewinding_twice_after_a_second_failure() {
    let (fixed, runs) = (Rc::default(), Rc::default());
    let mut reg = Registry::new();
    reg.orchestration("Checkout", checkout);
    let mut d = Driver::new(reg, "r7")
        .activity("Reserve", |_, _| Ok(payload("reserved")))
        .activity("Pay", flaky(&fixed, &runs));
    d.start("Checkout", ());
    d.run_one_by_one();
    d.rewind(Some("first"));
    d.run_one_by_one();
    assert_eq!(
        d.session.status(),
        OrchestrationStatus::Failed,
        "failed again"
    );
    fixed.set(true);
    let (plan, _) = d.rewind(Some("second"));
    assert_eq!(plan.rewound_tasks, vec![1]);
    d.run_one_by_one();
    assert_eq!(d.output::<String>(), "reserved paid 7");
    assert_eq!(runs.get(), 3);
}

#[test]
fn a_failed_sub_orchestration_is_handed_to_the_runtime_and_its_result_awaited() {
    let mut reg = Registry::new();
    reg.orchestration("Parent", |ctx: OrchestrationContext, _: ()| async move {
        let r: String = ctx.call_sub_orchestration("Child", 5).await?;
        Ok::<_, OrchestrationError>(format!("child said {r}"))
    });
    let mut d = Driver::new(reg, "r8");
    d.start("Parent", ());
    let child_id = d
        .last
        .actions
        .iter()
        .find_map(|a| match a {
            Action::StartSubOrchestration { instance_id, .. } => Some(instance_id.clone()),
            _ => None,
        })
        .unwrap();
    let m = d.msg(EventKind::SubOrchestrationFailed {
        task_id: 0,
        failure: FailureDetails::new("Boom", "child failed"),
    });
    d.turn(vec![m]);
    assert_eq!(d.session.status(), OrchestrationStatus::Failed);
    let (plan, r) = d.rewind(None);
    assert!(plan.rewound_tasks.is_empty(), "the child keeps its task");
    assert_eq!(plan.children.len(), 1);
    assert_eq!(plan.children[0].instance_id, child_id);
    assert_eq!(
        plan.children[0].failure.as_ref().unwrap().error_type,
        "Boom"
    );
    assert!(!r
        .actions
        .iter()
        .any(|a| matches!(a, Action::StartSubOrchestration { .. })));
    let m = d.msg(EventKind::SubOrchestrationCompleted {
        task_id: 0,
        result: payload("hi"),
    });
    d.turn(vec![m]);
    assert_eq!(d.output::<String>(), "child said hi");
}

#[test]
fn a_generation_after_continue_as_new_is_rewound_alone() {
    let (fixed, runs) = (Rc::default(), Rc::default());
    let mut reg = Registry::new();
    reg.orchestration("Gen", |ctx: OrchestrationContext, n: u32| async move {
        if n == 0 {
            return ctx.continue_as_new(1).await;
        }
        let r: String = ctx.call_activity("Pay", n).await?;
        Ok::<_, OrchestrationError>(r)
    });
    let mut d = Driver::new(reg, "r9").activity("Pay", flaky(&fixed, &runs));
    d.start("Gen", 0u32);
    // The driver plays the runtime: the next execution starts from the ContinueAsNew action.
    let (execution_id, input) = d
        .last
        .actions
        .iter()
        .find_map(|a| match a {
            Action::ContinueAsNew {
                execution_id,
                input,
                ..
            } => Some((execution_id.clone(), input.clone())),
            _ => None,
        })
        .unwrap();
    d.history.clear();
    d.session = OrchestrationSession::new(d.registry.clone(), d.id.clone());
    let m = d.msg(started("Gen", input, execution_id.clone()));
    d.turn(vec![m]);
    d.run_one_by_one();
    assert_eq!(d.session.status(), OrchestrationStatus::Failed);
    fixed.set(true);
    d.rewind(None);
    assert_eq!(
        d.session.execution_id(),
        execution_id,
        "the same execution runs on"
    );
    d.run_one_by_one();
    assert_eq!(d.output::<String>(), "paid 1");
}

#[test]
fn a_success_kept_after_the_failure_may_lead_the_code_further_than_it_went() {
    let (fixed, a_runs, done_runs) = (Rc::default(), Rc::default(), Rc::default());
    let mut reg = Registry::new();
    reg.orchestration("Race", |ctx: OrchestrationContext, _: ()| async move {
        let a = ctx.call_activity::<_, String>("A", 1);
        let b = ctx.call_activity::<_, String>("B", 2);
        match when_any2(a, b).await {
            Either::Left(Ok(a)) => Ok::<_, OrchestrationError>(format!("a won: {a}")),
            Either::Left(Err(_)) => {
                let f: String = ctx.call_activity("Fallback", ()).await?;
                Ok(format!("fallback: {f}"))
            }
            Either::Right(b) => {
                let b = b?;
                let s: String = ctx.call_activity("Ship", &b).await?;
                let e: String = ctx.call_activity("Email", &b).await?;
                Ok(format!("b won: {s} {e}"))
            }
        }
    });
    let mut d = Driver::new(reg, "r10")
        .activity("A", flaky(&fixed, &a_runs))
        .activity("B", |_, _| Ok(payload("b")))
        .activity("Fallback", |_, _| {
            Err(FailureDetails::new("Down", "no fallback"))
        })
        .activity("Ship", counted(&done_runs, "shipped"))
        .activity("Email", counted(&done_runs, "emailed"));
    d.start("Race", ());
    // A's failure comes first (Left): the code falls back; B's result comes next, then the
    // fallback's failure fails the execution.
    d.run_one_by_one();
    assert_eq!(d.session.status(), OrchestrationStatus::Failed);
    assert!(
        kinds(&d.history).contains(&"TaskCompleted"),
        "B's result is recorded"
    );
    fixed.set(true);
    // Rewound: A's failure is forgotten, so B's kept result wins the race now and the code
    // goes on to Ship and Email, which it never reached: task IDs no rewind dropped.
    let (_, r) = d.rewind(None);
    assert_eq!(r.status, Some(OrchestrationStatus::Running));
    d.run_one_by_one();
    assert_eq!(d.output::<String>(), "b won: shipped emailed");
    assert_eq!(done_runs.get(), 2);
}

#[test]
fn a_timer_of_work_the_rewind_dropped_does_not_fire_the_timer_now_under_its_task_id() {
    let fixed = Rc::new(Cell::new(false));
    let mut reg = Registry::new();
    reg.orchestration("Deadline", |ctx: OrchestrationContext, _: ()| async move {
        match ctx.call_activity::<_, String>("Pay", 1).await {
            Err(e) => {
                // A reaction to the failure: a timer set (and left) as the code fails.
                drop(ctx.sleep(Duration::from_secs(5)));
                Err(e.into())
            }
            Ok(paid) => {
                ctx.sleep(Duration::from_secs(24 * 3600)).await;
                Ok(paid)
            }
        }
    });
    let f = fixed.clone();
    let mut d = Driver::new(reg, "r11").activity("Pay", move |_, _| {
        if f.get() {
            Ok(payload("paid"))
        } else {
            Err(FailureDetails::new("Down", "x"))
        }
    });
    d.start("Deadline", ());
    d.run_one_by_one();
    assert_eq!(d.session.status(), OrchestrationStatus::Failed);
    let (stale_task, stale_at) = d.timers.pop().expect("the 5 s timer was set");
    let stale_episode = d.session.episode();
    fixed.set(true);
    d.rewind(None);
    d.run_one_by_one();
    let (task, at) = *d.timers.last().expect("the 24 h timer");
    assert_eq!(
        task, stale_task,
        "the code gives the new timer the dropped one's task ID"
    );
    // The dropped timer's message comes now: stale, discarded.
    let mut m = d.msg(EventKind::TimerFired {
        task_id: stale_task,
        fire_at: stale_at,
    });
    m.episode = stale_episode;
    let r = d.turn(vec![m]);
    assert_eq!(r.discarded.len(), 1, "{:?}", r.discarded);
    assert_eq!(r.discarded[0].reason, DiscardReason::StaleExecution);
    assert_eq!(d.session.status(), OrchestrationStatus::Running);
    // Its own fires it.
    let mut m = d.msg(EventKind::TimerFired {
        task_id: task,
        fire_at: at,
    });
    m.episode = d.session.episode();
    d.turn(vec![m]);
    assert_eq!(d.output::<String>(), "paid");
}
