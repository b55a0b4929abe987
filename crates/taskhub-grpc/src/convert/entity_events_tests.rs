#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use taskhub::{
    EventKind, ExecutionId, FailureDetails, HistoryEvent, InstanceId, Payload, Timestamp,
};
use taskhub_core::entity::{Caller, EntityId, EntityRequest, EntityResponse, ENTITY_REQUEST_EVENT};

use super::*;

fn at() -> Timestamp {
    Timestamp::from_millis(1_700_000_000_000)
}

fn me() -> InstanceId {
    InstanceId::new("orch").unwrap()
}

fn counter() -> EntityId {
    EntityId::new("counter", "k").unwrap()
}

fn sent(task_id: u64, target: &EntityId, request: &EntityRequest) -> HistoryEvent {
    HistoryEvent::new(
        at(),
        EventKind::EventSent {
            task_id,
            instance_id: target.instance_id().clone(),
            name: ENTITY_REQUEST_EVENT.into(),
            input: Payload::to_payload(request, "r").unwrap(),
        },
    )
}

fn raised(name: &str, response: &EntityResponse) -> HistoryEvent {
    HistoryEvent::new(
        at(),
        EventKind::EventRaised {
            name: name.into(),
            input: Payload::to_payload(response, "r").unwrap(),
        },
    )
}

fn caller() -> Caller {
    Caller {
        instance_id: me(),
        execution_id: ExecutionId::new("e1").unwrap(),
    }
}

#[test]
fn requests_and_answers_go_out_as_the_protocols_entity_events() {
    let call = EntityRequest::Operation {
        id: "c1".into(),
        op: "add".into(),
        input: Payload::from_json("5").unwrap(),
        caller: Some(caller()),
        at: None,
    };
    let signal = EntityRequest::Operation {
        id: "s1".into(),
        op: "add".into(),
        input: Payload::null(),
        caller: None,
        at: Some(at()),
    };
    let other = EntityId::new("account", "a").unwrap();
    let lock = EntityRequest::Lock {
        id: "l1".into(),
        owner: caller(),
        lockset: vec![other.clone(), counter()],
        position: 0,
    };
    let release = EntityRequest::Release {
        id: "l1".into(),
        owner: me(),
    };
    let mut failure = FailureDetails::new("ValueError", "no");
    failure.non_retryable = true;
    let history = vec![
        sent(0, &counter(), &call),
        sent(1, &counter(), &signal),
        sent(2, &other, &lock),
        raised(
            "c1",
            &EntityResponse::Ok {
                output: Payload::from_json("7").unwrap(),
            },
        ),
        raised("c1", &EntityResponse::Failed { failure }),
        raised("l1", &EntityResponse::Locked),
        sent(3, &counter(), &release),
    ];
    let requests = EntityRequests::of(&history);
    let out: Vec<_> = history
        .iter()
        .map(|e| event_to_proto_with_entities(e, &me(), &requests))
        .collect();
    match out[0].event_type.as_ref().unwrap() {
        E::EntityOperationCalled(c) => {
            assert_eq!(out[0].event_id, 0);
            assert_eq!(
                (
                    c.request_id.as_str(),
                    c.operation.as_str(),
                    c.input.as_deref()
                ),
                ("c1", "add", Some("5"))
            );
            assert_eq!(c.target_instance_id.as_deref(), Some("@counter@k"));
        }
        other => panic!("{other:?}"),
    }
    match out[1].event_type.as_ref().unwrap() {
        E::EntityOperationSignaled(s) => {
            assert_eq!(out[1].event_id, 1);
            assert_eq!(s.request_id, "s1");
            assert_eq!(s.input.as_deref(), Some("null"));
            assert!(s.scheduled_time.is_some());
        }
        other => panic!("{other:?}"),
    }
    match out[2].event_type.as_ref().unwrap() {
        E::EntityLockRequested(l) => {
            assert_eq!(out[2].event_id, 2);
            assert_eq!(l.critical_section_id, "l1");
            assert_eq!(l.lock_set, ["@account@a", "@counter@k"]);
        }
        other => panic!("{other:?}"),
    }
    match out[3].event_type.as_ref().unwrap() {
        E::EntityOperationCompleted(c) => {
            assert_eq!(
                (c.request_id.as_str(), c.output.as_deref()),
                ("c1", Some("7"))
            );
        }
        other => panic!("{other:?}"),
    }
    match out[4].event_type.as_ref().unwrap() {
        E::EntityOperationFailed(f) => {
            let d = f.failure_details.as_ref().unwrap();
            assert_eq!(
                (d.error_type.as_str(), d.error_message.as_str()),
                ("ValueError", "no")
            );
        }
        other => panic!("{other:?}"),
    }
    match out[5].event_type.as_ref().unwrap() {
        E::EntityLockGranted(g) => assert_eq!(g.critical_section_id, "l1"),
        other => panic!("{other:?}"),
    }
    match out[6].event_type.as_ref().unwrap() {
        E::EntityUnlockSent(u) => {
            assert_eq!(u.critical_section_id, "l1");
            assert_eq!(u.target_instance_id.as_deref(), Some("@counter@k"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn other_events_go_out_as_they_are() {
    // An event named like no request of this history, even with an answer's shape, and an
    // event sent to an orchestration, stay plain events.
    let history = vec![
        raised("c9", &EntityResponse::Locked),
        HistoryEvent::new(
            at(),
            EventKind::EventSent {
                task_id: 0,
                instance_id: me(),
                name: "Go".into(),
                input: Payload::null(),
            },
        ),
    ];
    let requests = EntityRequests::of(&history);
    let out: Vec<_> = history
        .iter()
        .map(|e| event_to_proto_with_entities(e, &me(), &requests))
        .collect();
    assert!(
        matches!(out[0].event_type, Some(E::EventRaised(_))),
        "{out:?}"
    );
    assert!(
        matches!(out[1].event_type, Some(E::EventSent(_))),
        "{out:?}"
    );
}
