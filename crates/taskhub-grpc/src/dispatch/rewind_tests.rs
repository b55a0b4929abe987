#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use std::sync::Arc;

use taskhub::{
    ExecutionId, FailureDetails as Failure, HistoryEvent as Ours, InstanceId, Payload, Timestamp,
};

use super::*;
use crate::convert::event_to_proto;
use crate::proto::{
    ExecutionCompletedEvent, ExecutionRewoundEvent, OrchestrationInstance, OrchestratorAction,
    RewindOrchestrationAction, ScheduleTaskAction, SubOrchestrationInstanceFailedEvent,
    TaskFailedEvent,
};

fn instance() -> InstanceId {
    InstanceId::new("order-1").unwrap()
}

fn at(n: u64, event: EventKind) -> Ours {
    Ours::new(Timestamp::from_millis(1_700_000_000_000 + n), event)
}

/// An event as an SDK sends it (no timestamp).
fn from_sdk(event_id: i32, event_type: E) -> HistoryEvent {
    HistoryEvent {
        event_id,
        timestamp: None,
        event_type: Some(event_type),
    }
}

fn json(s: &str) -> Payload {
    Payload::from_json(s).unwrap()
}

/// The start of execution `e1` of `Order`, input 1.
fn order_started() -> EventKind {
    EventKind::ExecutionStarted {
        name: "Order".into(),
        version: None,
        input: json("1"),
        execution_id: ExecutionId::new("e1").unwrap(),
        parent: None,
        scheduled_start: None,
        applied_event_ids: Vec::new(),
        tags: Box::default(),
    }
}

/// Task `task_id` of activity `name` scheduled with input 1.
fn scheduled(task_id: u64, name: &str) -> EventKind {
    EventKind::TaskScheduled {
        task_id,
        name: name.into(),
        version: None,
        input: json("1"),
        attempt: 1,
        tags: Default::default(),
    }
}

/// A failed execution as the SDKs would see it if it were sent whole: task 0 charged the
/// card, task 1 failed, child task 2 failed, and the execution failed.
fn failed_history() -> Vec<HistoryEvent> {
    let ours = vec![
        at(0, EventKind::OrchestratorStarted),
        at(1, order_started()),
        at(2, scheduled(0, "Charge")),
        at(3, EventKind::OrchestratorCompleted),
        at(4, EventKind::OrchestratorStarted),
        at(
            5,
            EventKind::TaskCompleted {
                task_id: 0,
                result: json("\"charged\""),
            },
        ),
        at(6, scheduled(1, "Ship")),
        at(7, EventKind::OrchestratorCompleted),
        at(8, EventKind::OrchestratorStarted),
        at(
            9,
            EventKind::TaskFailed {
                task_id: 1,
                failure: Failure::new("Down", "the carrier is down"),
            },
        ),
    ];
    let mut sent: Vec<HistoryEvent> = ours
        .iter()
        .map(|e| event_to_proto(e, &instance()))
        .collect();
    sent.push(from_sdk(
        -1,
        E::SubOrchestrationInstanceFailed(SubOrchestrationInstanceFailedEvent {
            task_scheduled_id: 2,
            ..SubOrchestrationInstanceFailedEvent::default()
        }),
    ));
    sent.push(from_sdk(
        -1,
        E::ExecutionCompleted(ExecutionCompletedEvent {
            orchestration_status: OrchestrationStatus::Failed as i32,
            ..ExecutionCompletedEvent::default()
        }),
    ));
    sent.push(rewound());
    sent
}

fn rewound() -> HistoryEvent {
    from_sdk(
        -1,
        E::ExecutionRewound(ExecutionRewoundEvent {
            reason: Some("carrier back".into()),
            ..ExecutionRewoundEvent::default()
        }),
    )
}

/// What the Python and JavaScript workers build: the history less failures, the failed
/// task's schedule and the completion, with a new execution ID.
fn as_the_sdks_rewind(sent: &[HistoryEvent]) -> Vec<HistoryEvent> {
    // The test's own model of the SDKs, not the checker's code under test.
    let mut failed = Vec::new();
    for e in sent {
        if let Some(E::TaskFailed(f)) = &e.event_type {
            failed.push(f.task_scheduled_id);
        }
    }
    sent.iter()
        .filter(|e| match &e.event_type {
            Some(
                E::TaskFailed(_) | E::SubOrchestrationInstanceFailed(_) | E::ExecutionCompleted(_),
            ) => false,
            Some(E::TaskScheduled(_)) => !failed.contains(&e.event_id),
            _ => true,
        })
        .cloned()
        .map(|mut e| {
            if let Some(E::ExecutionStarted(s)) = &mut e.event_type {
                s.orchestration_instance = Some(OrchestrationInstance {
                    instance_id: "order-1".into(),
                    execution_id: Some("0123456789abcdef".into()),
                });
            }
            e
        })
        .collect()
}

#[test]
fn the_history_the_sdks_build_is_taken() {
    let sent = failed_history();
    let new = as_the_sdks_rewind(&sent);
    assert_eq!(new.len(), sent.len() - 4);
    check_new_history(&sent, &new).unwrap();
    // Nothing dropped is taken too (Taskhub's own requests have nothing left to drop).
    check_new_history(&sent, &sent).unwrap();
}

#[test]
fn a_kept_event_left_out_is_named() {
    let sent = failed_history();
    let mut new = as_the_sdks_rewind(&sent);
    // The charge's result (event 5 of the new history) left out.
    let removed = new.remove(5);
    assert!(matches!(removed.event_type, Some(E::TaskCompleted(_))));
    assert_refused(&sent, &new, "event 5 is orchestratorCompleted where the history sent has taskCompleted of task 0 (its event 5)");
}

#[test]
fn a_changed_event_is_named() {
    let sent = failed_history();
    let mut new = as_the_sdks_rewind(&sent);
    if let Some(E::TaskCompleted(c)) = &mut new[5].event_type {
        c.result = Some("\"refunded\"".into());
    }
    assert_refused(&sent, &new, "event 5 is taskCompleted of task 0 where the history sent has taskCompleted of task 0 (its event 5)");
    // An execution start may differ in its execution ID only.
    let mut renamed = as_the_sdks_rewind(&sent);
    if let Some(E::ExecutionStarted(s)) = &mut renamed[1].event_type {
        s.name = "Other".into();
    }
    assert_refused(
        &sent,
        &renamed,
        "event 1 is executionStarted where the history sent has executionStarted",
    );
}

#[test]
fn an_added_or_reordered_event_is_named() {
    let sent = failed_history();
    let mut added = as_the_sdks_rewind(&sent);
    added.push(from_sdk(9, E::TaskFailed(TaskFailedEvent::default())));
    assert_refused(
        &sent,
        &added,
        "event 9 (taskFailed of task 0) is not in the history sent",
    );
    let mut swapped = as_the_sdks_rewind(&sent);
    swapped.swap(2, 3);
    assert_refused(
        &sent,
        &swapped,
        "event 2 is orchestratorCompleted where the history sent has taskScheduled of task 0",
    );
}

#[test]
fn a_kept_schedule_or_completion_cannot_be_dropped() {
    let sent = failed_history();
    // The schedule of the task that succeeded (task 0) is not the rewind's to drop.
    let mut new = as_the_sdks_rewind(&sent);
    new.remove(2);
    let e = check_new_history(&sent, &new).unwrap_err();
    assert!(
        e.contains("the history sent has taskScheduled of task 0 (its event 2)"),
        "{e}"
    );
    // Nor is a completion that did not fail.
    let mut completed = sent.clone();
    if let Some(E::ExecutionCompleted(c)) = &mut completed[11].event_type {
        c.orchestration_status = OrchestrationStatus::Completed as i32;
    }
    assert_refused(
        &completed,
        &as_the_sdks_rewind(&completed),
        "event 8 is executionRewound where the history sent has executionCompleted (its event 11)",
    );
}

#[test]
fn a_history_cut_short_is_named() {
    let sent = failed_history();
    let mut new = as_the_sdks_rewind(&sent);
    new.truncate(3);
    assert_refused(
        &sent,
        &new,
        "it ends after 3 events, without the history sent's event 3 (orchestratorCompleted)",
    );
}

/// Asserts that `new` is refused as a rewind's history of `sent`, the error starting with
/// `start`.
fn assert_refused(sent: &[HistoryEvent], new: &[HistoryEvent], start: &str) {
    let e = check_new_history(sent, new).unwrap_err();
    assert!(e.starts_with(start), "{e}");
}

fn work() -> OrchestrationWork {
    let past: Vec<Ours> = vec![
        at(0, EventKind::OrchestratorStarted),
        at(1, order_started()),
        at(2, EventKind::OrchestratorCompleted),
    ];
    OrchestrationWork::new(
        instance(),
        ExecutionId::new("e1").unwrap(),
        "Order".into(),
        Arc::new(past),
        vec![
            at(3, EventKind::OrchestratorStarted),
            at(
                4,
                EventKind::ExecutionRewound {
                    reason: Some("carrier back".into()),
                    rewound_tasks: vec![1],
                },
            ),
        ],
    )
}

fn rewind_response(
    new_history: Vec<HistoryEvent>,
    more: Vec<OrchestratorAction>,
) -> OrchestratorResponse {
    let mut actions = vec![OrchestratorAction {
        id: -1,
        orchestrator_action_type: Some(A::RewindOrchestration(RewindOrchestrationAction {
            new_history,
        })),
    }];
    actions.extend(more);
    OrchestratorResponse {
        actions,
        ..OrchestratorResponse::default()
    }
}

#[test]
fn a_rewind_answer_to_a_rewound_history_is_asked_again_without_the_rewind_event() {
    let w = work();
    let sent: Vec<HistoryEvent> = w
        .past
        .iter()
        .chain(&w.new)
        .map(|e| event_to_proto(e, &w.instance))
        .collect();
    assert_eq!(
        rewind_answer(&w, &rewind_response(as_the_sdks_rewind(&sent), vec![])),
        RewindAnswer::Accepted
    );
    let again = without_rewind_event(&w);
    assert_eq!(w.new.len(), 2);
    assert_eq!(again.new.len(), 1);
    assert!(matches!(again.new[0].event, EventKind::OrchestratorStarted));
    assert_eq!(again.past, w.past);
    // An ordinary answer says nothing of a rewind.
    assert_eq!(
        rewind_answer(&w, &OrchestratorResponse::default()),
        RewindAnswer::None
    );
}

#[test]
fn a_rewind_answer_that_cannot_be_taken_fails_naming_why() {
    let w = work();
    let RewindAnswer::Refused(f) = rewind_answer(&w, &rewind_response(Vec::new(), vec![])) else {
        panic!("taken");
    };
    assert_eq!(f.error_type, INVALID_ACTION);
    assert!(
        f.message.contains("actions[0].rewindOrchestration.newHistory: it ends after 0 events, without the history sent's event 0 (orchestratorStarted)"),
        "{}",
        f.message
    );
    let schedule = OrchestratorAction {
        id: 1,
        orchestrator_action_type: Some(A::ScheduleTask(ScheduleTaskAction {
            name: "Ship".into(),
            ..ScheduleTaskAction::default()
        })),
    };
    let RewindAnswer::Refused(f) = rewind_answer(&w, &rewind_response(Vec::new(), vec![schedule]))
    else {
        panic!("taken");
    };
    assert!(
        f.message.contains("a rewindOrchestration action must be the answer's only action (2 actions, 1 of them rewinds)"),
        "{}",
        f.message
    );
}
