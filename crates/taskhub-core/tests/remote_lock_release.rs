//! A remote execution's locks are released by the runtime when the execution ends (it has no
//! guards that could): terminated by a client, failed for an impossible answer, completed,
//! continued as new or ended as terminated by its own code inside a critical section (or while
//! a lock request is out), it records a `Release` to each entity of the lock set it did not
//! release itself, before the end event — the same `$entity` event a Rust critical section
//! sends when dropped. Also after the session is loaded from storage.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]

mod common;
use std::sync::Arc;

use common::*;
use taskhub_core::engine::{Decision, OrchestrationDecision};
use taskhub_core::entity::{Caller, EntityRequest, ENTITY_REQUEST_EVENT};
use taskhub_core::*;

fn id() -> InstanceId {
    InstanceId::new("remote-locks").unwrap()
}

fn exec() -> ExecutionId {
    ExecutionId::new("exec-1").unwrap()
}

fn entity(key: &str) -> EntityId {
    EntityId::new("counter", key).unwrap()
}

fn msg(n: u64, event: EventKind) -> Message {
    numbered(id(), n, event)
}

fn start(n: u64) -> Message {
    msg(n, started("InPython", Payload::null(), exec()))
}

fn send(task_id: u64, to: &EntityId, request: &EntityRequest) -> Decision {
    Decision::SendEvent {
        task_id,
        instance_id: to.instance_id().clone(),
        name: ENTITY_REQUEST_EVENT.into(),
        input: Payload::to_payload(request, "request").unwrap(),
    }
}

/// Task 0: the lock request `L` for `a` and `b`, sent to `a`.
fn lock_ab() -> Decision {
    let request = EntityRequest::Lock {
        id: "L".into(),
        owner: Caller {
            instance_id: id(),
            execution_id: exec(),
        },
        lockset: vec![entity("a"), entity("b")],
        position: 0,
    };
    send(0, &entity("a"), &request)
}

fn unlock(task_id: u64, key: &str) -> Decision {
    let request = EntityRequest::Release {
        id: "L".into(),
        owner: id(),
    };
    send(task_id, &entity(key), &request)
}

/// The grant of `L` (as the last entity of the set answers it).
fn granted(n: u64) -> Message {
    msg(
        n,
        EventKind::EventRaised {
            name: "L".into(),
            input: Payload::from_json(r#"{"kind":"locked"}"#).unwrap(),
        },
    )
}

/// A remote session that sent `L` and, if `grant`, got it.
fn in_section(grant: bool) -> OrchestrationSession {
    let mut s = OrchestrationSession::new_with(Arc::new(Registry::new()), id(), true);
    let p = pending(turn(&mut s, 10, vec![start(1)]));
    s.finish_turn(p, OrchestrationDecision::new(vec![lock_ab()]));
    if grant {
        let p = pending(turn(&mut s, 20, vec![granted(2)]));
        s.finish_turn(p, OrchestrationDecision::default());
    }
    s
}

/// The releases a turn recorded (entity key, in order), and the type of the event after the
/// last one; checks each recorded release has its runtime action.
fn releases(r: &TurnResult) -> (Vec<String>, Option<&'static str>) {
    let mut keys = Vec::new();
    let mut after = None;
    for e in &r.new_events {
        match &e.event {
            EventKind::EventSent {
                instance_id,
                name,
                input,
                ..
            } => {
                if let Ok(EntityRequest::Release { id: lock, owner }) =
                    input.parse::<EntityRequest>("request")
                {
                    assert_eq!(name, ENTITY_REQUEST_EVENT);
                    assert_eq!((lock.as_str(), &owner), ("L", &id()));
                    keys.push(
                        EntityId::parse(instance_id.as_str())
                            .unwrap()
                            .key()
                            .to_owned(),
                    );
                    after = None;
                    continue;
                }
            }
            other if !keys.is_empty() && after.is_none() => after = Some(other.type_name()),
            _ => {}
        }
    }
    let sent = r
        .actions
        .iter()
        .filter(|a| matches!(a, Action::SendEvent { name, .. } if name == ENTITY_REQUEST_EVENT))
        .count();
    assert!(sent >= keys.len(), "every recorded release is sent: {r:?}");
    (keys, after)
}

/// Event `go` (no data), message `m{n}`.
fn go(n: u64) -> Message {
    msg(
        n,
        EventKind::EventRaised {
            name: "go".into(),
            input: Payload::null(),
        },
    )
}

fn terminate(n: u64) -> Message {
    msg(
        n,
        EventKind::ExecutionTerminated {
            reason: "stop".into(),
            output: None,
        },
    )
}

#[test]
fn a_client_terminate_releases_a_held_section_and_a_request_not_granted_yet() {
    for grant in [true, false] {
        let mut s = in_section(grant);
        let TurnStep::Done(r) = turn(&mut s, 30, vec![terminate(3)]) else {
            panic!("a terminate needs no decision");
        };
        assert_eq!(r.status, Some(OrchestrationStatus::Terminated));
        assert_eq!(
            releases(&r),
            (vec!["a".into(), "b".into()], Some("ExecutionTerminated")),
            "granted: {grant}"
        );
    }
}

#[test]
fn a_terminate_after_loading_from_storage_releases_too() {
    let s = in_section(true);
    let history = s.remote_history().to_vec();
    let mut loaded =
        OrchestrationSession::load_with(Arc::new(Registry::new()), id(), &history, true);
    let TurnStep::Done(r) = turn(&mut loaded, 30, vec![terminate(3)]) else {
        panic!("a terminate needs no decision");
    };
    assert_eq!(
        releases(&r),
        (vec!["a".into(), "b".into()], Some("ExecutionTerminated"))
    );
    // The release task IDs are new ones.
    let ids: Vec<u64> = r
        .new_events
        .iter()
        .filter_map(|e| match e.event {
            EventKind::EventSent { task_id, .. } => Some(task_id),
            _ => None,
        })
        .collect();
    assert_eq!(ids, [1, 2]);
}

#[test]
fn ending_inside_a_section_releases_what_the_code_did_not() {
    let ends: Vec<(Decision, &str)> = vec![
        (
            Decision::Complete {
                result: Payload::null(),
            },
            "ExecutionCompleted",
        ),
        (
            Decision::Fail {
                failure: FailureDetails::new("E", "e"),
            },
            "ExecutionFailed",
        ),
        (
            Decision::ContinueAsNew {
                input: Payload::null(),
                version: None,
                carried_events: Vec::new(),
            },
            "ContinuedAsNew",
        ),
        (
            Decision::Terminate {
                reason: Payload::to_payload("self", "reason").unwrap(),
            },
            "ExecutionTerminated",
        ),
    ];
    for (end, event) in ends {
        let mut s = in_section(true);
        let p = pending(turn(&mut s, 30, vec![go(3)]));
        // The code released `a` itself in this turn: only `b` is left.
        let r = s.finish_turn(p, OrchestrationDecision::new(vec![unlock(1, "a"), end]));
        let (keys, after) = releases(&r);
        assert_eq!(
            keys,
            ["a", "b"],
            "{event}: the code's own, then the runtime's"
        );
        assert_eq!(after, Some(event));
    }
}

#[test]
fn an_impossible_answer_fails_the_execution_and_releases() {
    let mut s = in_section(true);
    let p = pending(turn(&mut s, 30, vec![go(3)]));
    // Task 0 is the lock request's: a duplicate ID; nothing of the answer is recorded.
    let r = s.finish_turn(p, OrchestrationDecision::new(vec![unlock(0, "a")]));
    assert_eq!(r.status, Some(OrchestrationStatus::Failed));
    assert_eq!(
        releases(&r),
        (vec!["a".into(), "b".into()], Some("ExecutionFailed"))
    );
}

#[test]
fn a_released_section_sends_nothing_more() {
    let mut s = in_section(true);
    let p = pending(turn(&mut s, 30, vec![go(3)]));
    s.finish_turn(
        p,
        OrchestrationDecision::new(vec![unlock(1, "a"), unlock(2, "b")]),
    );
    let TurnStep::Done(r) = turn(&mut s, 40, vec![terminate(4)]) else {
        panic!("a terminate needs no decision");
    };
    assert_eq!(r.status, Some(OrchestrationStatus::Terminated));
    assert_eq!(releases(&r), (Vec::new(), None));
    assert!(r
        .actions
        .iter()
        .all(|a| !matches!(a, Action::SendEvent { .. })));
}
