//! What a rewind drops from a history, event by event.

use super::*;
use crate::entity::{Caller, EntityId, EntityResponse};
use crate::history::{EventKind as K, Tags};
use crate::ids::ExecutionId;
use crate::time::Timestamp;

fn ev(kind: K) -> HistoryEvent {
    HistoryEvent::new(Timestamp::from_millis(1), kind)
}

fn text(v: &str) -> Payload {
    Payload::to_payload(&v, "test").expect("a string serializes")
}

fn start() -> HistoryEvent {
    ev(K::ExecutionStarted {
        name: "O".into(),
        version: None,
        input: Payload::null(),
        execution_id: ExecutionId::new("e1").expect("valid"),
        parent: None,
        scheduled_start: None,
        applied_event_ids: Vec::new(),
        tags: Box::default(),
    })
}

/// `TaskScheduled` of activity `name`'s first attempt, with no input.
fn scheduled(task_id: u64, name: &str) -> HistoryEvent {
    ev(K::TaskScheduled {
        task_id,
        name: name.into(),
        version: None,
        input: Payload::null(),
        attempt: 1,
        tags: Tags::default(),
    })
}

fn entity_event(task_id: u64, request: &EntityRequest) -> HistoryEvent {
    ev(K::EventSent {
        task_id,
        instance_id: InstanceId::new("@counter@a").expect("valid"),
        name: ENTITY_REQUEST_EVENT.into(),
        input: Payload::to_payload(request, "test").expect("serializes"),
    })
}

fn caller() -> Caller {
    Caller {
        instance_id: InstanceId::new("o1").expect("valid"),
        execution_id: ExecutionId::new("e1").expect("valid"),
    }
}

fn names(events: &[HistoryEvent]) -> Vec<&'static str> {
    events.iter().map(|e| e.event.type_name()).collect()
}

#[test]
fn a_failure_inside_a_critical_section_drops_the_section_so_its_locks_are_taken_again() {
    let lock = EntityRequest::Lock {
        id: "L1".into(),
        owner: caller(),
        lockset: vec![EntityId::new("counter", "a").expect("valid")],
        position: 0,
    };
    let call = EntityRequest::Operation {
        id: "C1".into(),
        op: "add".into(),
        input: Payload::null(),
        caller: Some(caller()),
        at: None,
    };
    let release = EntityRequest::Release {
        id: "L1".into(),
        owner: InstanceId::new("o1").expect("valid"),
    };
    let locked = Payload::to_payload(&EntityResponse::Locked, "t").expect("serializes");
    let history = vec![
        ev(K::OrchestratorStarted),
        start(),
        scheduled(0, "Before"),
        ev(K::OrchestratorCompleted),
        ev(K::OrchestratorStarted),
        ev(K::TaskCompleted {
            task_id: 0,
            result: text("ok"),
        }),
        entity_event(1, &lock),
        ev(K::OrchestratorCompleted),
        ev(K::OrchestratorStarted),
        ev(K::EventRaised {
            name: "L1".into(),
            input: locked,
        }),
        entity_event(2, &call),
        ev(K::OrchestratorCompleted),
        ev(K::OrchestratorStarted),
        ev(K::EventRaised {
            name: "C1".into(),
            input: Payload::null(),
        }),
        ev(K::EventRaised {
            name: "approval".into(),
            input: text("yes"),
        }),
        scheduled(3, "Pay"),
        ev(K::OrchestratorCompleted),
        ev(K::OrchestratorStarted),
        ev(K::TaskFailed {
            task_id: 3,
            failure: FailureDetails::new("Down", "x"),
        }),
        entity_event(4, &release),
        ev(K::ExecutionFailed {
            failure: FailureDetails::new("ActivityFailed", "x"),
        }),
        ev(K::OrchestratorCompleted),
    ];
    let plan = plan(&history).expect("a failed history rewinds");
    assert_eq!(plan.rewound_tasks, vec![1, 2, 3, 4]);
    assert_eq!(
        names(&plan.kept),
        [
            "OrchestratorStarted",
            "ExecutionStarted",
            "TaskScheduled",
            "OrchestratorCompleted",
            "OrchestratorStarted",
            "TaskCompleted",
            "OrchestratorCompleted",
            "OrchestratorStarted",
            "OrchestratorCompleted",
            "OrchestratorStarted",
            "EventRaised",
            "OrchestratorCompleted",
            "OrchestratorStarted",
        ]
    );
    // The event kept is the one someone raised, not the answers to the dropped requests.
    assert!(matches!(&plan.kept[10].event, K::EventRaised { name, .. } if name == "approval"));
    assert!(plan.reopened.is_empty());
}

#[test]
fn an_activity_still_running_at_the_failure_is_sent_again() {
    let history = vec![
        ev(K::OrchestratorStarted),
        start(),
        scheduled(0, "Slow"),
        scheduled(1, "Pay"),
        ev(K::OrchestratorCompleted),
        ev(K::OrchestratorStarted),
        ev(K::TaskFailed {
            task_id: 1,
            failure: FailureDetails::new("Down", "x"),
        }),
        ev(K::ExecutionFailed {
            failure: FailureDetails::new("ActivityFailed", "x"),
        }),
        ev(K::OrchestratorCompleted),
    ];
    let plan = plan(&history).expect("rewinds");
    assert_eq!(plan.rewound_tasks, vec![1]);
    assert!(matches!(
        plan.reopened.as_slice(),
        [Action::ScheduleActivity { task_id: 0, name, .. }] if name == "Slow"
    ));
    // The failing turn kept nothing but its start (the count of turns never goes back).
    assert_eq!(
        plan.kept.last().map(|e| e.event.type_name()),
        Some("OrchestratorStarted")
    );
    assert_eq!(plan.kept.len(), 5);
}

#[test]
fn every_status_but_failed_is_refused_by_name() {
    let running = vec![
        ev(K::OrchestratorStarted),
        start(),
        ev(K::OrchestratorCompleted),
    ];
    let err = plan(&running).expect_err("running");
    assert_eq!(
        err.to_string(),
        "only a Failed instance can be rewound; this one is Running"
    );
    let mut completed = running.clone();
    completed.push(ev(K::ExecutionCompleted {
        result: Payload::null(),
    }));
    assert!(
        matches!(plan(&completed), Err(CoreError::NotRewindable { status }) if status == "Completed")
    );
    let mut terminated = running;
    terminated.push(ev(K::ExecutionTerminated {
        reason: "r".into(),
        output: None,
    }));
    assert!(
        matches!(plan(&terminated), Err(CoreError::NotRewindable { status }) if status == "Terminated")
    );
    assert!(matches!(plan(&[]), Err(CoreError::NotRewindable { status }) if status == "Pending"));
}
