//! An orchestration sends the releases of its locks whenever it lets go of them: a lock
//! request dropped without being polled, and a critical section released in the same turn as
//! a terminate (its releases are recorded before `ExecutionTerminated`, not dropped with the
//! turn's other actions).
#![allow(clippy::unwrap_used, reason = "test code: a panic is a failed test")]

mod common;
use common::*;
use taskhub_core::entity::{EntityRequest, EntityResponse, ENTITY_REQUEST_EVENT};
use taskhub_core::*;

fn cell() -> EntityId {
    EntityId::new("Cell", "a").unwrap()
}

/// The entity requests among `actions`, as (kind, lock request ID).
fn requests(actions: &[Action]) -> Vec<(&'static str, String)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::SendEvent { name, input, .. } if name == ENTITY_REQUEST_EVENT => {
                match input.parse::<EntityRequest>("request").unwrap() {
                    EntityRequest::Lock { id, .. } => Some(("lock", id)),
                    EntityRequest::Release { id, .. } => Some(("release", id)),
                    _ => None,
                }
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_lock_request_dropped_unpolled_is_released() {
    let mut reg = Registry::new();
    reg.orchestration("GiveUp", |ctx: OrchestrationContext, (): ()| async move {
        let request = ctx.lock_entities(&[cell()]);
        drop(request);
        ctx.wait_for_event::<()>("never").await?;
        Ok::<_, OrchestrationError>(())
    });
    let mut d = Driver::new(reg, "give-up");
    let r = d.start("GiveUp", ());
    let sent = requests(&r.actions);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0].0, "lock");
    assert_eq!(sent[1], ("release", sent[0].1.clone()));
}

#[test]
fn a_section_released_in_the_turn_of_a_terminate_sends_its_releases() {
    let mut reg = Registry::new();
    reg.orchestration("Hold", |ctx: OrchestrationContext, (): ()| async move {
        let section = ctx.lock_entities(&[cell()]).await?;
        ctx.wait_for_event::<()>("go").await?;
        section.release();
        ctx.wait_for_event::<()>("never").await?;
        Ok::<_, OrchestrationError>(())
    });
    let mut d = Driver::new(reg, "hold");
    let r = d.start("Hold", ());
    let (_, id) = requests(&r.actions)[0].clone();
    let granted = d.msg(EventKind::EventRaised {
        name: id.clone(),
        input: Payload::to_payload(&EntityResponse::Locked, "response").unwrap(),
    });
    d.turn(vec![granted]);
    let go = d.event("go", ());
    let terminate = d.msg(EventKind::ExecutionTerminated {
        reason: "stop".into(),
        output: None,
    });
    let r = d.turn(vec![go, terminate]);
    assert_eq!(requests(&r.actions), vec![("release", id)]);
    let kinds: Vec<&str> = r.new_events.iter().map(|e| e.event.type_name()).collect();
    let sent = kinds.iter().position(|k| *k == "EventSent").unwrap();
    let ended = kinds
        .iter()
        .position(|k| *k == "ExecutionTerminated")
        .unwrap();
    assert!(sent < ended, "{kinds:?}");
}
