#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use taskhub::executor::{EntityOperation, EntityWork};
use taskhub::Payload;
use taskhub_core::entity::{Caller, EntityAction, EntityId};

use super::*;
use crate::proto::{
    OperationAction, OperationResult, OperationResultFailure, OperationResultSuccess,
    SendSignalAction, StartNewOrchestrationAction, TaskFailureDetails,
};

fn work() -> EntityWork {
    EntityWork::new(
        EntityId::new("counter", "k").unwrap(),
        Some(Payload::from_json("5").unwrap()),
        vec![
            EntityOperation::new("r1".into(), "add".into(), Payload::from_json("2").unwrap()),
            EntityOperation::new("r2".into(), "get".into(), Payload::null()),
        ],
    )
}

fn ok(text: &str) -> OperationResult {
    OperationResult {
        result_type: Some(ResultType::Success(OperationResultSuccess {
            result: Some(text.into()),
            ..OperationResultSuccess::default()
        })),
    }
}

#[test]
fn the_request_carries_the_entity_its_state_and_its_operations_in_order() {
    let caller = Caller {
        instance_id: taskhub::InstanceId::new("orch-1").unwrap(),
        execution_id: taskhub::ExecutionId::new("e7").unwrap(),
    };
    let mut w = work();
    w.operations[1] = w.operations[1].clone().with_caller(Some(caller));
    let r = entity_request(&w);
    assert_eq!(r.instance_id, "@counter@k");
    assert_eq!(r.entity_state.as_deref(), Some("5"));
    let Some(EventType::EntityOperationSignaled(signal)) = &r.operation_requests[0].event_type
    else {
        panic!("{:?}", r.operation_requests[0])
    };
    assert_eq!(
        (
            signal.request_id.as_str(),
            signal.operation.as_str(),
            signal.input.as_deref()
        ),
        ("r1", "add", Some("2"))
    );
    let Some(EventType::EntityOperationCalled(call)) = &r.operation_requests[1].event_type else {
        panic!("{:?}", r.operation_requests[1])
    };
    assert_eq!(
        (call.request_id.as_str(), call.operation.as_str()),
        ("r2", "get")
    );
    assert_eq!(
        (
            call.parent_instance_id.as_deref(),
            call.parent_execution_id.as_deref()
        ),
        (Some("orch-1"), Some("e7"))
    );
    let none = entity_request(&EntityWork::new(
        EntityId::new("counter", "k").unwrap(),
        None,
        Vec::new(),
    ));
    assert_eq!(none.entity_state, None);
    assert!(none.operation_requests.is_empty());
}

#[test]
fn results_state_and_actions_come_back() {
    let r = EntityBatchResult {
        results: vec![
            ok("7"),
            OperationResult {
                result_type: Some(ResultType::Failure(OperationResultFailure {
                    failure_details: Some(TaskFailureDetails {
                        error_type: "ValueError".into(),
                        error_message: "no".into(),
                        ..TaskFailureDetails::default()
                    }),
                    ..OperationResultFailure::default()
                })),
            },
        ],
        actions: vec![
            OperationAction {
                id: 0,
                operation_action_type: Some(A::SendSignal(SendSignalAction {
                    instance_id: "@other@x".into(),
                    name: "ping".into(),
                    input: Some("1".into()),
                    ..SendSignalAction::default()
                })),
            },
            OperationAction {
                id: 1,
                operation_action_type: Some(A::StartNewOrchestration(
                    StartNewOrchestrationAction {
                        instance_id: "child".into(),
                        name: "Greet".into(),
                        ..StartNewOrchestrationAction::default()
                    },
                )),
            },
        ],
        entity_state: Some("7".into()),
        ..EntityBatchResult::default()
    };
    let out = entity_outcome(&work(), &r);
    assert_eq!(out.results[0], Ok(Payload::from_json("7").unwrap()));
    let failure = out.results[1].clone().unwrap_err();
    assert_eq!(
        (failure.error_type.as_str(), failure.message.as_str()),
        ("ValueError", "no")
    );
    assert_eq!(out.state, Some(Payload::from_json("7").unwrap()));
    assert_eq!(out.actions.len(), 2);
    assert!(
        matches!(&out.actions[0], EntityAction::Signal { target, op, .. } if target.to_string() == "@other@x" && op == "ping")
    );
    assert!(
        matches!(&out.actions[1], EntityAction::StartOrchestration { instance_id, name, .. } if instance_id.as_str() == "child" && name == "Greet")
    );
    // No state: the entity has none (deleted).
    let deleted = entity_outcome(&work(), &EntityBatchResult::default());
    assert_eq!(deleted.state, None);
    // So is a JSON null state; an opaque state is kept as sent.
    for (state, kept) in [
        ("null", None),
        ("", None),
        ("blob:v1:c:state", Some("blob:v1:c:state")),
    ] {
        let out = entity_outcome(
            &work(),
            &EntityBatchResult {
                results: vec![ok("blob:v1:c:r1"), ok("null")],
                entity_state: Some(state.into()),
                ..EntityBatchResult::default()
            },
        );
        assert_eq!(out.state.as_ref().map(Payload::as_str), kept, "{state}");
        assert_eq!(out.results[0].as_ref().unwrap().as_str(), "blob:v1:c:r1");
        assert_eq!(out.results[1], Ok(Payload::null()));
    }
}

/// Asserts that `r`, the answer to [`work`]'s two operations, is refused as a whole: the
/// state is kept, nothing is sent, and both operations fail naming `field`.
fn assert_refused_whole(r: &EntityBatchResult, field: &str) {
    let out = entity_outcome(&work(), r);
    assert_eq!(out.state, Some(Payload::from_json("5").unwrap()), "{field}");
    assert!(out.actions.is_empty());
    assert_eq!(out.results.len(), 2);
    for res in &out.results {
        let f = res.clone().unwrap_err();
        assert_eq!(f.error_type, INVALID_ENTITY_RESULT);
        assert!(f.message.contains(field), "{}", f.message);
    }
}

#[test]
fn an_answer_that_cannot_be_taken_fails_every_operation_and_keeps_the_state() {
    let bad_signal = EntityBatchResult {
        results: vec![ok("1"), ok("2")],
        actions: vec![OperationAction {
            id: 0,
            operation_action_type: Some(A::SendSignal(SendSignalAction {
                instance_id: "not-an-entity".into(),
                name: "ping".into(),
                ..SendSignalAction::default()
            })),
        }],
        entity_state: Some("9".into()),
        ..EntityBatchResult::default()
    };
    assert_refused_whole(&bad_signal, "actions[0].sendSignal.instanceId");
    // A batch-level failure fails every operation with it.
    let out = entity_outcome(
        &work(),
        &EntityBatchResult {
            failure_details: Some(TaskFailureDetails {
                error_type: "Crash".into(),
                error_message: "the batch crashed".into(),
                ..TaskFailureDetails::default()
            }),
            ..EntityBatchResult::default()
        },
    );
    assert_eq!(out.results.len(), 2);
    assert!(out
        .results
        .iter()
        .all(|r| r.as_ref().unwrap_err().error_type == "Crash"));
    // A result of no kind fails that operation only.
    let out = entity_outcome(
        &work(),
        &EntityBatchResult {
            results: vec![ok("1"), OperationResult { result_type: None }],
            entity_state: Some("6".into()),
            ..EntityBatchResult::default()
        },
    );
    assert!(out.results[0].is_ok());
    assert!(out.results[1]
        .as_ref()
        .unwrap_err()
        .message
        .contains("results[1].resultType"));
}

#[test]
fn a_start_without_an_instance_id_gets_one_derived_from_the_batch() {
    let start = |n: i32| OperationAction {
        id: n,
        operation_action_type: Some(A::StartNewOrchestration(StartNewOrchestrationAction {
            name: "Greet".into(),
            ..StartNewOrchestrationAction::default()
        })),
    };
    let r = EntityBatchResult {
        results: vec![ok("1"), ok("2")],
        actions: vec![start(0), start(1)],
        ..EntityBatchResult::default()
    };
    let ids = |out: &EntityBatchOutcome| -> Vec<String> {
        out.actions
            .iter()
            .map(|a| match a {
                EntityAction::StartOrchestration { instance_id, .. } => instance_id.to_string(),
                other => panic!("{other:?}"),
            })
            .collect()
    };
    let first = ids(&entity_outcome(&work(), &r));
    // The same batch answered again: the same instances; two starts: two instances.
    assert_eq!(first, ids(&entity_outcome(&work(), &r)));
    assert_ne!(first[0], first[1]);
    assert!(!first[0].is_empty());
}

#[test]
fn more_results_than_operations_or_a_reserved_start_id_fail_every_operation() {
    let reserved = OperationAction {
        id: 0,
        operation_action_type: Some(A::StartNewOrchestration(StartNewOrchestrationAction {
            name: "Greet".into(),
            instance_id: "@counter@x".into(),
            ..StartNewOrchestrationAction::default()
        })),
    };
    let cases = [
        (
            EntityBatchResult {
                results: vec![ok("1"), ok("2"), ok("3")],
                entity_state: Some("9".into()),
                ..EntityBatchResult::default()
            },
            "results: 3 for 2 operation(s)",
        ),
        (
            EntityBatchResult {
                results: vec![ok("1"), ok("2")],
                actions: vec![reserved],
                entity_state: Some("9".into()),
                ..EntityBatchResult::default()
            },
            "actions[0].startNewOrchestration.instanceId",
        ),
    ];
    for (r, field) in cases {
        assert_refused_whole(&r, field);
    }
}
