#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use taskhub::{Payload, Timestamp};

use super::*;
use crate::proto::{
    CompleteOrchestrationAction, CreateSubOrchestrationAction, CreateTimerAction, EventRaisedEvent,
    HistoryEvent, OrchestrationInstance, OrchestratorAction, ScheduleTaskAction, SendEventAction,
    TaskFailureDetails, TerminateOrchestrationAction,
};

fn instance() -> InstanceId {
    InstanceId::new("parent").unwrap()
}

fn act(id: i32, kind: A) -> OrchestratorAction {
    OrchestratorAction {
        id,
        orchestrator_action_type: Some(kind),
    }
}

fn response(actions: Vec<OrchestratorAction>) -> OrchestratorResponse {
    OrchestratorResponse {
        actions,
        ..OrchestratorResponse::default()
    }
}

fn json(s: &str) -> Payload {
    Payload::from_json(s).unwrap()
}

fn completion(status: S) -> CompleteOrchestrationAction {
    CompleteOrchestrationAction {
        orchestration_status: status as i32,
        ..CompleteOrchestrationAction::default()
    }
}

/// The failure a malformed response became.
fn failure_of(d: &OrchestrationDecision) -> &FailureDetails {
    match d.decisions.as_slice() {
        [Decision::Fail { failure }] => failure,
        other => panic!("expected one Fail, got {other:?}"),
    }
}

#[test]
fn every_supported_action_becomes_its_decision() {
    let mut r = response(vec![
        act(
            0,
            A::ScheduleTask(ScheduleTaskAction {
                name: "SayHello".into(),
                input: Some("\"Tokyo\"".into()),
                ..ScheduleTaskAction::default()
            }),
        ),
        act(
            1,
            A::CreateSubOrchestration(CreateSubOrchestrationAction {
                name: "Child".into(),
                version: Some("2".into()),
                ..CreateSubOrchestrationAction::default()
            }),
        ),
        act(
            2,
            A::CreateTimer(CreateTimerAction {
                fire_at: Some(prost_types::Timestamp {
                    seconds: 10,
                    nanos: 0,
                }),
            }),
        ),
        act(
            3,
            A::SendEvent(SendEventAction {
                instance: Some(OrchestrationInstance {
                    instance_id: "other".into(),
                    execution_id: None,
                }),
                name: "Go".into(),
                data: Some("1".into()),
            }),
        ),
        act(
            4,
            A::CompleteOrchestration(CompleteOrchestrationAction {
                result: Some("[1,2]".into()),
                ..completion(S::Completed)
            }),
        ),
    ]);
    r.custom_status = Some("\"busy\"".into());
    let d = orchestration_decision(&instance(), &r);
    assert_eq!(d.custom_status, Some(json("\"busy\"")));
    assert_eq!(
        d.decisions,
        vec![
            Decision::ScheduleActivity {
                task_id: 0,
                name: "SayHello".into(),
                version: None,
                input: json("\"Tokyo\""),
            },
            Decision::StartSubOrchestration {
                task_id: 1,
                name: "Child".into(),
                version: Some("2".into()),
                // No instance ID given: one derived from the parent's and the task ID.
                instance_id: InstanceId::new("parent:0001").unwrap(),
                input: Payload::null(),
            },
            Decision::CreateTimer {
                task_id: 2,
                fire_at: Timestamp::from_millis(10_000),
            },
            Decision::SendEvent {
                task_id: 3,
                instance_id: InstanceId::new("other").unwrap(),
                name: "Go".into(),
                input: json("1"),
            },
            Decision::Complete {
                result: json("[1,2]"),
            },
        ]
    );
}

#[test]
fn each_ending_status_becomes_its_decision() {
    let one = |c: CompleteOrchestrationAction| {
        orchestration_decision(
            &instance(),
            &response(vec![act(0, A::CompleteOrchestration(c))]),
        )
        .decisions
    };
    let failed = one(CompleteOrchestrationAction {
        failure_details: Some(TaskFailureDetails {
            error_type: "ValueError".into(),
            error_message: "boom".into(),
            ..TaskFailureDetails::default()
        }),
        ..completion(S::Failed)
    });
    assert_eq!(
        failed,
        vec![Decision::Fail {
            failure: FailureDetails::new("ValueError", "boom")
        }]
    );
    let terminated = one(CompleteOrchestrationAction {
        result: Some("\"enough\"".into()),
        ..completion(S::Terminated)
    });
    assert_eq!(
        terminated,
        vec![Decision::Terminate {
            reason: json("\"enough\"")
        }]
    );
    let next = one(CompleteOrchestrationAction {
        result: Some("5".into()),
        new_version: Some("3".into()),
        carryover_events: vec![HistoryEvent {
            event_id: -1,
            timestamp: None,
            event_type: Some(EventType::EventRaised(EventRaisedEvent {
                name: "Add".into(),
                input: Some("2".into()),
            })),
        }],
        ..completion(S::ContinuedAsNew)
    });
    assert_eq!(
        next,
        vec![Decision::ContinueAsNew {
            input: json("5"),
            version: Some("3".into()),
            carried_events: vec![CarriedEvent {
                name: "Add".into(),
                input: json("2"),
            }],
        }]
    );
}

#[test]
fn a_malformed_action_fails_the_orchestration_naming_the_action_and_field() {
    let cases: Vec<(OrchestratorResponse, &str)> = vec![
        (
            response(vec![act(0, A::CreateTimer(CreateTimerAction { fire_at: None }))]),
            "actions[0].createTimer: fireAt: missing",
        ),
        (
            response(vec![
                act(0, A::CompleteOrchestration(completion(S::Completed))),
                act(
                    -2,
                    A::ScheduleTask(ScheduleTaskAction {
                        name: "X".into(),
                        ..ScheduleTaskAction::default()
                    }),
                ),
            ]),
            "actions[1].scheduleTask: id: -2 is not a task ID",
        ),
        (
            response(vec![act(0, A::ScheduleTask(ScheduleTaskAction::default()))]),
            "actions[0].scheduleTask: name: missing",
        ),
        (
            response(vec![act(
                0,
                A::ScheduleTask(ScheduleTaskAction {
                    name: "X".into(),
                    input: Some("{oops".into()),
                    ..ScheduleTaskAction::default()
                }),
            )]),
            "actions[0].scheduleTask: input: not JSON",
        ),
        (
            response(vec![act(0, A::CompleteOrchestration(completion(S::Running)))]),
            "actions[0].completeOrchestration: orchestrationStatus: ORCHESTRATION_STATUS_RUNNING does not end",
        ),
        (
            response(vec![act(
                0,
                A::TerminateOrchestration(TerminateOrchestrationAction::default()),
            )]),
            "actions[0].terminateOrchestration: orchestratorActionType: Taskhub does not offer terminating",
        ),
        (
            response(vec![OrchestratorAction {
                id: 0,
                orchestrator_action_type: None,
            }]),
            "actions[0].?: orchestratorActionType: missing",
        ),
        (
            OrchestratorResponse {
                custom_status: Some("not json".into()),
                ..OrchestratorResponse::default()
            },
            "response: customStatus: not JSON",
        ),
    ];
    for (r, expected) in cases {
        let d = orchestration_decision(&instance(), &r);
        let f = failure_of(&d);
        assert_eq!(f.error_type, INVALID_ACTION);
        assert!(f.non_retryable);
        assert!(
            f.message.contains(expected),
            "{:?} does not contain {expected:?}",
            f.message
        );
    }
}

#[test]
fn an_activity_answer_is_its_result_or_its_failure() {
    let ok = ActivityResponse {
        result: Some("\"Hello Tokyo!\"".into()),
        ..ActivityResponse::default()
    };
    assert_eq!(activity_outcome(&ok).unwrap(), json("\"Hello Tokyo!\""));
    assert_eq!(
        activity_outcome(&ActivityResponse::default()).unwrap(),
        Payload::null()
    );
    let failed = ActivityResponse {
        failure_details: Some(TaskFailureDetails {
            error_type: "ValueError".into(),
            error_message: "no".into(),
            ..TaskFailureDetails::default()
        }),
        ..ActivityResponse::default()
    };
    assert_eq!(
        activity_outcome(&failed).unwrap_err(),
        FailureDetails::new("ValueError", "no")
    );
    let bad = ActivityResponse {
        result: Some("{".into()),
        ..ActivityResponse::default()
    };
    let f = activity_outcome(&bad).unwrap_err();
    assert_eq!(f.error_type, "InvalidActivityResult");
    assert!(f.message.contains("result: not JSON"), "{}", f.message);
}
