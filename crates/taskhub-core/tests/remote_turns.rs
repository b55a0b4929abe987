//! Remote turns in the pure core: a session whose orchestration is not in the registry (and
//! whose runtime has an executor) applies messages with the Rust engine's rules, waits for a
//! decision, and records it validated; loading its history back rebuilds the same state.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]

mod common;
use std::sync::Arc;

use common::*;
use taskhub_core::engine::{Decision, OrchestrationDecision};
use taskhub_core::*;

fn id() -> InstanceId {
    InstanceId::new("remote-1").unwrap()
}

fn msg(n: u64, event: EventKind) -> Message {
    numbered(id(), n, event)
}

fn start(n: u64) -> Message {
    msg(
        n,
        started(
            "InPython",
            Payload::null(),
            ExecutionId::new("exec-1").unwrap(),
        ),
    )
}

fn done(n: u64, task_id: u64) -> Message {
    msg(
        n,
        EventKind::TaskCompleted {
            task_id,
            result: Payload::null(),
        },
    )
}

fn schedule(task_id: u64) -> Decision {
    Decision::ScheduleActivity {
        task_id,
        name: "Work".into(),
        version: None,
        input: Payload::null(),
        tags: Default::default(),
        traceparent: None,
    }
}

fn session() -> OrchestrationSession {
    OrchestrationSession::new_with(Arc::new(Registry::new()), id(), true)
}

/// A retried task's first failure delivered again with the retry's result (event `taken`), to
/// `s` and to a session loaded from `history`: the failure is a duplicate, the result is taken
/// and the code completes.
fn duplicate_failure_then_result(
    s: &mut OrchestrationSession,
    history: &[HistoryEvent],
    messages: &[Message],
    taken: &str,
) {
    for s in [
        s,
        &mut OrchestrationSession::load_with(Arc::new(Registry::new()), id(), history, true),
    ] {
        let p = pending(turn(s, 40, messages.to_vec()));
        let kinds: Vec<&str> = p.new_events().iter().map(|e| e.event.type_name()).collect();
        assert_eq!(kinds, ["OrchestratorStarted", taken]);
        let r = s.finish_turn(
            p,
            OrchestrationDecision::new(vec![Decision::Complete {
                result: Payload::null(),
            }]),
        );
        assert_eq!(r.discarded.len(), 1);
        assert_eq!(r.discarded[0].reason, DiscardReason::Duplicate);
        assert_eq!(r.status, Some(OrchestrationStatus::Completed));
    }
}

#[test]
fn a_remote_turn_records_the_messages_then_the_decisions() {
    let mut s = session();
    let p = pending(turn(&mut s, 10, vec![start(1)]));
    assert!(s.is_remote());
    let kinds: Vec<&str> = p.new_events().iter().map(|e| e.event.type_name()).collect();
    assert_eq!(kinds, ["OrchestratorStarted", "ExecutionStarted"]);
    assert!(s.remote_history().is_empty());
    let mut d = OrchestrationDecision::new(vec![schedule(0), schedule(1)]);
    d.custom_status = Some(Payload::from_json("\"busy\"").unwrap());
    let r = s.finish_turn(p, d);
    let kinds: Vec<&str> = r.new_events.iter().map(|e| e.event.type_name()).collect();
    assert_eq!(
        kinds,
        [
            "OrchestratorStarted",
            "ExecutionStarted",
            "TaskScheduled",
            "TaskScheduled",
            "OrchestratorCompleted"
        ]
    );
    assert_eq!(r.actions.len(), 2);
    assert_eq!(r.custom_status.unwrap().as_str(), "\"busy\"");
    assert_eq!(
        s.remote_history(),
        &r.new_events[..],
        "the session keeps the history"
    );

    // The same rules as a Rust turn: a repeated completion is a duplicate, one for a task
    // that was never scheduled is invalid; neither reaches the executor.
    let p = pending(turn(&mut s, 20, vec![done(2, 0), done(3, 0), done(4, 7)]));
    let kinds: Vec<&str> = p.new_events().iter().map(|e| e.event.type_name()).collect();
    assert_eq!(kinds, ["OrchestratorStarted", "TaskCompleted"]);
    let r = s.finish_turn(p, OrchestrationDecision::default());
    let reasons: Vec<DiscardReason> = r.discarded.iter().map(|d| d.reason).collect();
    assert_eq!(reasons, [DiscardReason::Duplicate, DiscardReason::Invalid]);

    // Loading the stored history gives the same state: task 0 is closed, task 1 open.
    let history = s.remote_history().to_vec();
    let mut loaded =
        OrchestrationSession::load_with(Arc::new(Registry::new()), id(), &history, true);
    assert!(loaded.is_remote());
    assert_eq!(loaded.remote_history(), &history[..]);
    let p = pending(turn(&mut loaded, 30, vec![done(5, 0), done(6, 1)]));
    assert_eq!(p.new_events().len(), 2, "only task 1's completion is new");
    let r = loaded.finish_turn(
        p,
        OrchestrationDecision::new(vec![Decision::Complete {
            result: Payload::null(),
        }]),
    );
    assert_eq!(r.status, Some(OrchestrationStatus::Completed));
    assert_eq!(r.discarded[0].reason, DiscardReason::Duplicate);
}

#[test]
fn a_terminate_needs_no_decision_and_nothing_new_asks_nothing() {
    let mut s = session();
    let p = pending(turn(&mut s, 10, vec![start(1)]));
    s.finish_turn(p, OrchestrationDecision::default());
    // Only a duplicate start: nothing to decide.
    assert!(
        matches!(turn(&mut s, 20, vec![start(1)]), TurnStep::Done(r) if r.new_events.is_empty())
    );
    let terminate = msg(
        3,
        EventKind::ExecutionTerminated {
            reason: "stop".into(),
            output: None,
        },
    );
    match turn(&mut s, 30, vec![terminate]) {
        TurnStep::Done(r) => assert_eq!(r.status, Some(OrchestrationStatus::Terminated)),
        TurnStep::Decide(_) => panic!("a terminate is applied without the executor"),
    }
}

#[test]
fn impossible_decisions_fail_with_the_rule_and_record_none_of_them() {
    let cases: Vec<(Vec<Decision>, &str)> = vec![
        (vec![schedule(0), schedule(0)], "DuplicateTaskId"),
        (
            vec![Decision::SendEvent {
                task_id: 0,
                instance_id: InstanceId::new("other").unwrap(),
                name: String::new(),
                input: Payload::null(),
            }],
            "EmptyName",
        ),
        (
            vec![Decision::CreateTimer {
                task_id: 0,
                fire_at: Timestamp::EPOCH,
            }],
            "TimerWithoutTime",
        ),
        (
            vec![
                Decision::Fail {
                    failure: FailureDetails::new("E", "e"),
                },
                schedule(0),
            ],
            "DecisionAfterEnd",
        ),
        (
            vec![Decision::StartSubOrchestration {
                task_id: 0,
                name: "Child".into(),
                version: None,
                instance_id: id(),
                input: Payload::null(),
                tags: Default::default(),
                traceparent: None,
            }],
            "SubOrchestrationIsSelf",
        ),
    ];
    for (decisions, rule) in cases {
        let mut s = session();
        let p = pending(turn(&mut s, 10, vec![start(1)]));
        let r = s.finish_turn(p, OrchestrationDecision::new(decisions));
        assert_eq!(r.status, Some(OrchestrationStatus::Failed), "{rule}");
        let failed = r.new_events.iter().find_map(|e| match &e.event {
            EventKind::ExecutionFailed { failure } => Some(failure.clone()),
            _ => None,
        });
        assert_eq!(failed.unwrap().error_type, rule);
        assert!(
            !r.new_events.iter().any(|e| matches!(
                e.event,
                EventKind::TaskScheduled { .. }
                    | EventKind::TimerCreated { .. }
                    | EventKind::EventSent { .. }
                    | EventKind::SubOrchestrationCreated { .. }
            )),
            "{rule}: nothing of the refused answer is recorded"
        );
    }
    // A task ID used in an earlier turn is a duplicate too (only a failed activity's may be
    // used again, as its retry: `a_retry_under_a_closed_task_id_is_the_next_attempt`).
    let mut s = session();
    let p = pending(turn(&mut s, 10, vec![start(1)]));
    s.finish_turn(p, OrchestrationDecision::new(vec![schedule(0)]));
    let p = pending(turn(&mut s, 20, vec![done(2, 0)]));
    let r = s.finish_turn(p, OrchestrationDecision::new(vec![schedule(0)]));
    assert_eq!(r.status, Some(OrchestrationStatus::Failed));
}

#[test]
fn without_the_fallback_an_unknown_name_fails_as_before_and_turn_refuses_remote_code() {
    let mut rust = OrchestrationSession::new(Arc::new(Registry::new()), id());
    let r = rust.turn(TurnInput {
        now: ts(10),
        messages: vec![start(1)],
    });
    assert_eq!(r.status, Some(OrchestrationStatus::Failed));
    assert!(!rust.is_remote());
    let mut remote = session();
    let r = remote.turn(TurnInput {
        now: ts(10),
        messages: vec![start(1)],
    });
    let failed = r.new_events.iter().find_map(|e| match &e.event {
        EventKind::ExecutionFailed { failure } => Some(failure.error_type.clone()),
        _ => None,
    });
    assert_eq!(failed.as_deref(), Some("NoExecutor"));
}

fn failed(n: u64, task_id: u64) -> Message {
    msg(
        n,
        EventKind::TaskFailed {
            task_id,
            failure: FailureDetails::new("Flaky", "try again"),
        },
    )
}

fn attempt_of(r: &TurnResult) -> Vec<u32> {
    r.actions
        .iter()
        .filter_map(|a| match a {
            Action::ScheduleActivity { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect()
}

/// The SDKs retry an activity under its first attempt's task ID once the failure is in: the
/// runtime takes it as attempt 2 (its messages then differ from attempt 1's), takes attempt
/// 2's result, and still knows attempt 1's result as a duplicate, also after a reload.
#[test]
fn a_retry_under_a_closed_task_id_is_the_next_attempt() {
    let mut s = session();
    let p = pending(turn(&mut s, 10, vec![start(1)]));
    let r = s.finish_turn(p, OrchestrationDecision::new(vec![schedule(1)]));
    assert_eq!(attempt_of(&r), [1]);

    // Still open: scheduling it again is refused.
    let mut open = session();
    let p = pending(turn(&mut open, 10, vec![start(1)]));
    let _ = open.finish_turn(p, OrchestrationDecision::new(vec![schedule(1)]));
    let p = pending(turn(
        &mut open,
        11,
        vec![msg(
            9,
            EventKind::EventRaised {
                name: "Poke".into(),
                input: Payload::null(),
            },
        )],
    ));
    let r = open.finish_turn(p, OrchestrationDecision::new(vec![schedule(1)]));
    assert_eq!(r.status, Some(OrchestrationStatus::Failed));

    // Failed: the retry (after a timer, as the SDKs do) reuses ID 1 as attempt 2.
    let p = pending(turn(&mut s, 20, vec![failed(2, 1)]));
    let r = s.finish_turn(
        p,
        OrchestrationDecision::new(vec![Decision::CreateTimer {
            task_id: 2,
            fire_at: ts(25),
        }]),
    );
    assert!(r.discarded.is_empty());
    let p = pending(turn(
        &mut s,
        30,
        vec![msg(
            3,
            EventKind::TimerFired {
                task_id: 2,
                fire_at: ts(25),
            },
        )],
    ));
    let r = s.finish_turn(p, OrchestrationDecision::new(vec![schedule(1)]));
    assert_eq!(attempt_of(&r), [2]);
    assert_eq!(r.status, Some(OrchestrationStatus::Running));

    // Attempt 1's failure delivered again: a duplicate; attempt 2's result is taken.
    let history = s.remote_history().to_vec();
    duplicate_failure_then_result(
        &mut s,
        &history,
        &[failed(2, 1), done(4, 1)],
        "TaskCompleted",
    );

    // A timer's ID is never an activity's retry, nor is a completed activity's.
    let mut t = session();
    let p = pending(turn(&mut t, 10, vec![start(1)]));
    let _ = t.finish_turn(
        p,
        OrchestrationDecision::new(vec![Decision::CreateTimer {
            task_id: 5,
            fire_at: ts(15),
        }]),
    );
    let p = pending(turn(
        &mut t,
        20,
        vec![msg(
            3,
            EventKind::TimerFired {
                task_id: 5,
                fire_at: ts(15),
            },
        )],
    ));
    let r = t.finish_turn(p, OrchestrationDecision::new(vec![schedule(5)]));
    assert_eq!(r.status, Some(OrchestrationStatus::Failed));
}

fn sub(task_id: u64, child: &str) -> Decision {
    Decision::StartSubOrchestration {
        task_id,
        name: "Child".into(),
        version: None,
        instance_id: InstanceId::new(child).unwrap(),
        input: Payload::null(),
        tags: Default::default(),
        traceparent: None,
    }
}

fn sub_failed(n: u64, task_id: u64) -> Message {
    msg(
        n,
        EventKind::SubOrchestrationFailed {
            task_id,
            failure: FailureDetails::new("ChildFailed", "try again"),
        },
    )
}

fn sub_done(n: u64, task_id: u64) -> Message {
    msg(
        n,
        EventKind::SubOrchestrationCompleted {
            task_id,
            result: Payload::null(),
        },
    )
}

/// The (task ID, child instance, attempt) of each sub-orchestration start of a turn.
fn sub_starts(r: &TurnResult) -> Vec<(u64, String, u32)> {
    r.actions
        .iter()
        .filter_map(|a| match a {
            Action::StartSubOrchestration {
                task_id,
                instance_id,
                attempt,
                ..
            } => Some((*task_id, instance_id.as_str().to_owned(), *attempt)),
            _ => None,
        })
        .collect()
}

fn fired(n: u64, task_id: u64, at: u64) -> Message {
    msg(
        n,
        EventKind::TimerFired {
            task_id,
            fire_at: ts(at),
        },
    )
}

fn timer(task_id: u64, at: u64) -> Decision {
    Decision::CreateTimer {
        task_id,
        fire_at: ts(at),
    }
}

/// The SDKs retry a failed sub-orchestration as an activity: under its first attempt's task
/// ID, with the child instance ID they choose (the Python SDK: the same one). The runtime takes
/// it as attempt 2 (the outbox derives the start's message ID and the child's execution ID
/// with the attempt, so the start is not a re-sent copy of attempt 1's), takes attempt 2's
/// result, and still knows attempt 1's failure as a duplicate, also after a reload.
#[test]
fn a_failed_sub_orchestration_is_retried_under_its_task_id_as_the_next_attempt() {
    let mut s = session();
    let p = pending(turn(&mut s, 10, vec![start(1)]));
    let r = s.finish_turn(p, OrchestrationDecision::new(vec![sub(1, "child")]));
    assert_eq!(sub_starts(&r), [(1, "child".to_owned(), 1)]);

    // While it runs, starting task 1 again is refused (an open task).
    let mut open = session();
    let p = pending(turn(&mut open, 10, vec![start(1)]));
    let _ = open.finish_turn(p, OrchestrationDecision::new(vec![sub(1, "child")]));
    let poke = msg(
        9,
        EventKind::EventRaised {
            name: "Poke".into(),
            input: Payload::null(),
        },
    );
    let p = pending(turn(&mut open, 11, vec![poke]));
    let r = open.finish_turn(p, OrchestrationDecision::new(vec![sub(1, "child")]));
    assert_eq!(r.status, Some(OrchestrationStatus::Failed));

    // Failed: the retry, after a timer, reuses task 1 (and here the child's ID) as attempt 2.
    let p = pending(turn(&mut s, 20, vec![sub_failed(2, 1)]));
    let r = s.finish_turn(p, OrchestrationDecision::new(vec![timer(2, 25)]));
    assert!(r.discarded.is_empty());
    let p = pending(turn(&mut s, 30, vec![fired(3, 2, 25)]));
    let r = s.finish_turn(p, OrchestrationDecision::new(vec![sub(1, "child")]));
    assert_eq!(sub_starts(&r), [(1, "child".to_owned(), 2)]);
    assert_eq!(r.status, Some(OrchestrationStatus::Running));

    // A reload counts the attempts from history: a third attempt after another failure is 3.
    let history = s.remote_history().to_vec();
    let mut again =
        OrchestrationSession::load_with(Arc::new(Registry::new()), id(), &history, true);
    let p = pending(turn(&mut again, 35, vec![sub_failed(5, 1)]));
    let _ = again.finish_turn(p, OrchestrationDecision::new(vec![timer(3, 36)]));
    let p = pending(turn(&mut again, 37, vec![fired(6, 3, 36)]));
    let r = again.finish_turn(p, OrchestrationDecision::new(vec![sub(1, "child-3")]));
    assert_eq!(sub_starts(&r), [(1, "child-3".to_owned(), 3)]);

    // Attempt 1's failure delivered again: a duplicate; attempt 2's result is taken.
    duplicate_failure_then_result(
        &mut s,
        &history,
        &[sub_failed(2, 1), sub_done(4, 1)],
        "SubOrchestrationCompleted",
    );
}

/// A task ID is retried only as its own kind, and never a completed one's or a timer's.
#[test]
fn only_a_failed_sub_orchestrations_id_is_a_sub_orchestration_retry() {
    // (what ran under task 1, how it ended, the retry asked for)
    let cases: Vec<(Decision, Message, Decision)> = vec![
        // A completed child's ID.
        (sub(1, "c"), sub_done(2, 1), sub(1, "c")),
        // A failed activity's ID, as a sub-orchestration.
        (schedule(1), failed(2, 1), sub(1, "c")),
        // A failed child's ID, as an activity.
        (sub(1, "c"), sub_failed(2, 1), schedule(1)),
        // A timer's ID.
        (timer(1, 15), fired(2, 1, 15), sub(1, "c")),
    ];
    for (i, (first, end, retry)) in cases.into_iter().enumerate() {
        let mut s = session();
        let p = pending(turn(&mut s, 10, vec![start(1)]));
        let _ = s.finish_turn(p, OrchestrationDecision::new(vec![first]));
        let p = pending(turn(&mut s, 20, vec![end]));
        let r = s.finish_turn(p, OrchestrationDecision::new(vec![retry]));
        assert_eq!(r.status, Some(OrchestrationStatus::Failed), "case {i}");
        let failure = r.new_events.iter().find_map(|e| match &e.event {
            EventKind::ExecutionFailed { failure } => Some(failure.error_type.clone()),
            _ => None,
        });
        assert_eq!(failure.as_deref(), Some("DuplicateTaskId"), "case {i}");
    }
}
