#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use taskhub::{Payload, Timestamp};

use super::*;
use crate::proto::{
    CompleteOrchestrationAction, CreateSubOrchestrationAction, CreateTimerAction, EventRaisedEvent,
    HistoryEvent, OrchestrationInstance, OrchestratorAction, ScheduleTaskAction, SendEventAction,
    TaskFailureDetails, TerminateOrchestrationAction,
};

/// The default cap on actions per turn.
const CAP: usize = 10_000;

fn instance() -> InstanceId {
    InstanceId::new("parent").unwrap()
}

fn execution() -> ExecutionId {
    ExecutionId::new("e1").unwrap()
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
    let d = orchestration_decision(&instance(), &execution(), &r, CAP);
    assert_eq!(d.custom_status, Some(json("\"busy\"")));
    assert_eq!(
        d.decisions,
        vec![
            Decision::ScheduleActivity {
                task_id: 0,
                name: "SayHello".into(),
                version: None,
                input: json("\"Tokyo\""),
                tags: Default::default(),
                traceparent: None,
            },
            Decision::StartSubOrchestration {
                task_id: 1,
                name: "Child".into(),
                version: Some("2".into()),
                // No instance ID given: one derived from the parent's and the task ID.
                instance_id: InstanceId::new("parent:0001").unwrap(),
                input: Payload::absent(),
                tags: Default::default(),
                traceparent: None,
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
            &execution(),
            &response(vec![act(0, A::CompleteOrchestration(c))]),
            CAP,
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
    ];
    for (r, expected) in cases {
        let d = orchestration_decision(&instance(), &execution(), &r, CAP);
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
        Payload::absent()
    );
    let null = ActivityResponse {
        result: Some("null".into()),
        ..ActivityResponse::default()
    };
    assert_eq!(activity_outcome(&null).unwrap(), Payload::null());
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
    // Text that is not JSON (an SDK's large-payload token) is a result as it is.
    let opaque = ActivityResponse {
        result: Some("blob:v1:c:b".into()),
        ..ActivityResponse::default()
    };
    assert_eq!(activity_outcome(&opaque).unwrap().as_str(), "blob:v1:c:b");
}

#[test]
fn opaque_payloads_in_actions_and_custom_status_are_kept() {
    let r = OrchestratorResponse {
        custom_status: Some("blob:v1:c:status".into()),
        ..response(vec![act(
            0,
            A::ScheduleTask(ScheduleTaskAction {
                name: "X".into(),
                input: Some("blob:v1:c:input".into()),
                ..ScheduleTaskAction::default()
            }),
        )])
    };
    let d = orchestration_decision(&instance(), &execution(), &r, CAP);
    assert_eq!(
        d.custom_status.as_ref().map(Payload::as_str),
        Some("blob:v1:c:status")
    );
    let text = format!("{:?}", d.decisions);
    assert!(text.contains("blob:v1:c:input"), "{text}");
}

mod entities {
    use taskhub_core::entity::{EntityRequest, ENTITY_REQUEST_EVENT};

    use super::*;
    use crate::proto::{
        send_entity_message_action::EntityMessageType as M, EntityLockRequestedEvent,
        EntityOperationCalledEvent, EntityOperationSignaledEvent, EntityUnlockSentEvent,
        SendEntityMessageAction,
    };

    fn entity_action(id: i32, m: M) -> OrchestratorAction {
        act(
            id,
            A::SendEntityMessage(SendEntityMessageAction {
                entity_message_type: Some(m),
            }),
        )
    }

    /// The (target, request) of each decision, all of them entity messages.
    fn sent(d: &OrchestrationDecision) -> Vec<(String, EntityRequest)> {
        d.decisions
            .iter()
            .map(|d| match d {
                Decision::SendEvent {
                    instance_id,
                    name,
                    input,
                    ..
                } => {
                    assert_eq!(name, ENTITY_REQUEST_EVENT);
                    (instance_id.to_string(), input.parse("request").unwrap())
                }
                other => panic!("not an entity message: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn calls_signals_locks_and_unlocks_become_entity_requests() {
        let r = response(vec![
            entity_action(
                0,
                M::EntityOperationCalled(EntityOperationCalledEvent {
                    request_id: "c1".into(),
                    operation: "add".into(),
                    input: Some("5".into()),
                    // Not trusted: the caller is always this execution.
                    parent_instance_id: Some("someone-else".into()),
                    target_instance_id: Some("@counter@k".into()),
                    ..EntityOperationCalledEvent::default()
                }),
            ),
            entity_action(
                1,
                M::EntityOperationSignaled(EntityOperationSignaledEvent {
                    request_id: "s1".into(),
                    operation: "reset".into(),
                    target_instance_id: Some("@counter@k".into()),
                    ..EntityOperationSignaledEvent::default()
                }),
            ),
            entity_action(
                2,
                M::EntityLockRequested(EntityLockRequestedEvent {
                    critical_section_id: "l1".into(),
                    lock_set: vec![
                        "@counter@k".into(),
                        "@account@a".into(),
                        "@counter@k".into(),
                    ],
                    ..EntityLockRequestedEvent::default()
                }),
            ),
            entity_action(
                3,
                M::EntityUnlockSent(EntityUnlockSentEvent {
                    critical_section_id: "l1".into(),
                    target_instance_id: Some("@account@a".into()),
                    ..EntityUnlockSentEvent::default()
                }),
            ),
        ]);
        let d = orchestration_decision(&instance(), &execution(), &r, CAP);
        let got = sent(&d);
        assert_eq!(got.len(), 4, "{d:?}");
        match &got[0] {
            (
                to,
                EntityRequest::Operation {
                    id,
                    op,
                    input,
                    caller: Some(c),
                    at: None,
                },
            ) => {
                assert_eq!(
                    (to.as_str(), id.as_str(), op.as_str()),
                    ("@counter@k", "c1", "add")
                );
                assert_eq!(input.as_str(), "5");
                assert_eq!(
                    (&c.instance_id, &c.execution_id),
                    (&instance(), &execution())
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(&got[1], (_, EntityRequest::Operation { caller: None, op, .. }) if op == "reset")
        );
        match &got[2] {
            (
                to,
                EntityRequest::Lock {
                    id,
                    owner,
                    lockset,
                    position: 0,
                },
            ) => {
                // Sorted and de-duplicated; sent to the first.
                assert_eq!(to, "@account@a");
                assert_eq!(id, "l1");
                assert_eq!(owner.instance_id, instance());
                let ids: Vec<String> = lockset.iter().map(ToString::to_string).collect();
                assert_eq!(ids, ["@account@a", "@counter@k"]);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(&got[3], (to, EntityRequest::Release { id, owner }) if to == "@account@a" && id == "l1" && *owner == instance())
        );
        let ids: Vec<u64> = d
            .decisions
            .iter()
            .filter_map(|d| match d {
                Decision::SendEvent { task_id, .. } => Some(*task_id),
                _ => None,
            })
            .collect();
        assert_eq!(ids, [0, 1, 2, 3]);
    }

    #[test]
    fn a_scheduled_call_or_signal_keeps_its_time() {
        let at = prost_types::Timestamp {
            seconds: 1_800_000_000,
            nanos: 0,
        };
        let r = response(vec![
            entity_action(
                0,
                M::EntityOperationCalled(EntityOperationCalledEvent {
                    request_id: "c1".into(),
                    operation: "add".into(),
                    scheduled_time: Some(at),
                    target_instance_id: Some("@counter@k".into()),
                    ..EntityOperationCalledEvent::default()
                }),
            ),
            entity_action(
                1,
                M::EntityOperationSignaled(EntityOperationSignaledEvent {
                    request_id: "s1".into(),
                    operation: "add".into(),
                    scheduled_time: Some(at),
                    target_instance_id: Some("@counter@k".into()),
                    ..EntityOperationSignaledEvent::default()
                }),
            ),
        ]);
        let d = orchestration_decision(&instance(), &execution(), &r, CAP);
        let want = Timestamp::from_millis(1_800_000_000_000);
        for (_, request) in sent(&d) {
            assert!(
                matches!(request, EntityRequest::Operation { at: Some(t), .. } if t == want),
                "{request:?}"
            );
        }
    }

    #[test]
    fn a_malformed_entity_message_fails_the_orchestration_naming_the_field() {
        let cases = [
            (
                M::EntityOperationCalled(EntityOperationCalledEvent {
                    request_id: "c1".into(),
                    operation: "add".into(),
                    target_instance_id: Some("not-an-entity".into()),
                    ..EntityOperationCalledEvent::default()
                }),
                "entityOperationCalled.targetInstanceId",
            ),
            (
                M::EntityOperationSignaled(EntityOperationSignaledEvent {
                    operation: "add".into(),
                    target_instance_id: Some("@counter@k".into()),
                    ..EntityOperationSignaledEvent::default()
                }),
                "entityOperationSignaled.requestId",
            ),
            (
                M::EntityLockRequested(EntityLockRequestedEvent {
                    critical_section_id: "l1".into(),
                    ..EntityLockRequestedEvent::default()
                }),
                "entityLockRequested.lockSet",
            ),
        ];
        for (m, field) in cases {
            let d = orchestration_decision(
                &instance(),
                &execution(),
                &response(vec![entity_action(0, m)]),
                CAP,
            );
            let f = failure_of(&d);
            assert_eq!(f.error_type, INVALID_ACTION);
            assert!(
                f.message
                    .contains(&format!("actions[0].sendEntityMessage: {field}")),
                "{}",
                f.message
            );
        }
    }
}

#[test]
fn a_turn_over_the_action_cap_fails_naming_the_cap_and_converts_nothing() {
    let timer = |id| {
        act(
            id,
            A::CreateTimer(CreateTimerAction {
                fire_at: Some(prost_types::Timestamp {
                    seconds: 10,
                    nanos: 0,
                }),
            }),
        )
    };
    let at_cap = response((0..3).map(timer).collect());
    let d = orchestration_decision(&instance(), &execution(), &at_cap, 3);
    assert_eq!(d.decisions.len(), 3, "at the cap: every action is taken");
    let over = response((0..4).map(timer).collect());
    let d = orchestration_decision(&instance(), &execution(), &over, 3);
    assert_eq!(d.decisions.len(), 1, "{:?}", d.decisions);
    let f = failure_of(&d);
    assert_eq!(f.error_type, INVALID_ACTION);
    assert!(
        f.message
            .contains("4 actions in one turn, over the cap of 3")
            && f.message.contains("grpc_max_actions_per_turn"),
        "{}",
        f.message
    );
}

#[test]
fn a_scheduled_task_s_tags_are_kept() {
    let r = response(vec![act(
        0,
        A::ScheduleTask(ScheduleTaskAction {
            name: "Ship".into(),
            tags: [
                ("team".to_owned(), "ops".to_owned()),
                ("tier".to_owned(), "gold".to_owned()),
            ]
            .into(),
            ..ScheduleTaskAction::default()
        }),
    )]);
    let d = orchestration_decision(&instance(), &execution(), &r, CAP);
    let [Decision::ScheduleActivity { tags, .. }] = d.decisions.as_slice() else {
        panic!("{:?}", d.decisions);
    };
    let want: taskhub::Tags = [
        ("team".to_owned(), "ops".to_owned()),
        ("tier".to_owned(), "gold".to_owned()),
    ]
    .into();
    assert_eq!(tags, &want);
}

#[test]
fn an_action_s_parent_trace_context_is_kept_and_an_empty_one_is_none() {
    let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let r = response(vec![
        act(
            0,
            A::ScheduleTask(ScheduleTaskAction {
                name: "Ship".into(),
                parent_trace_context: Some(crate::proto::TraceContext {
                    trace_parent: tp.into(),
                    ..crate::proto::TraceContext::default()
                }),
                ..ScheduleTaskAction::default()
            }),
        ),
        act(
            1,
            A::CreateSubOrchestration(CreateSubOrchestrationAction {
                name: "Child".into(),
                parent_trace_context: Some(crate::proto::TraceContext::default()),
                ..CreateSubOrchestrationAction::default()
            }),
        ),
    ]);
    let d = orchestration_decision(&instance(), &execution(), &r, CAP);
    let [Decision::ScheduleActivity {
        traceparent: task, ..
    }, Decision::StartSubOrchestration {
        traceparent: child, ..
    }] = d.decisions.as_slice()
    else {
        panic!("{:?}", d.decisions);
    };
    assert_eq!(task.as_deref(), Some(tp));
    assert_eq!(child, &None);
}

#[test]
fn an_orchestration_trace_context_is_kept_and_one_without_a_span_id_is_none() {
    let mut r = response(Vec::new());
    r.orchestration_trace_context = Some(crate::proto::OrchestrationTraceContext {
        span_id: Some("00f067aa0ba902b7".into()),
        span_start_time: Some(prost_types::Timestamp {
            seconds: 10,
            nanos: 0,
        }),
    });
    let d = orchestration_decision(&instance(), &execution(), &r, CAP);
    let span = d.span.expect("a span");
    assert_eq!(span.span_id, "00f067aa0ba902b7");
    assert_eq!(span.start, Some(Timestamp::from_millis(10_000)));
    r.orchestration_trace_context = Some(crate::proto::OrchestrationTraceContext::default());
    assert_eq!(
        orchestration_decision(&instance(), &execution(), &r, CAP).span,
        None
    );
}
