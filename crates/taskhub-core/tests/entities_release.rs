//! A release that reaches an entity before the lock request it releases (the owner gave the
//! request up while another entity of the lock set was passing it on) is remembered: the
//! request is ignored when it comes, so the entity is not locked for nobody.
#![allow(clippy::unwrap_used, reason = "test code: a panic is a failed test")]

mod common;

use common::EntityCell;
use taskhub_core::entity::{BatchMessage, Caller, EntityEffect, EntityRequest, SUSPECT_RETENTION};
use taskhub_core::*;

fn owner() -> Caller {
    Caller {
        instance_id: InstanceId::new("orch").unwrap(),
        execution_id: ExecutionId::new("exec").unwrap(),
    }
}

fn message(id: &str, request: EntityRequest) -> BatchMessage {
    BatchMessage {
        message_id: MessageId::from_stored(id),
        sender: None,
        request,
        order: None,
    }
}

fn lock(id: &str, lockset: &[EntityId]) -> BatchMessage {
    message(
        id,
        EntityRequest::Lock {
            id: "section-1".into(),
            owner: owner(),
            lockset: lockset.to_vec(),
            position: 1,
        },
    )
}

fn release(id: &str) -> BatchMessage {
    message(
        id,
        EntityRequest::Release {
            id: "section-1".into(),
            owner: owner().instance_id,
        },
    )
}

#[test]
fn a_release_that_overtakes_its_lock_request_cancels_it() {
    let a = EntityId::new("Cell", "a").unwrap();
    let b = EntityId::new("Cell", "b").unwrap();
    let c = EntityId::new("Cell", "c").unwrap();
    let now = Timestamp::from_millis(1_700_000_000_000);
    let reg = Registry::new();
    let mut cell = EntityCell::new(&reg, b.clone());

    cell.run(now, vec![release("m1")]);
    assert_eq!(cell.record.released.len(), 1, "remembered");
    let out = cell.run(now, vec![lock("m2", &[a.clone(), b.clone(), c.clone()])]);
    assert!(
        cell.record.lock.is_none(),
        "locked for a request its owner gave up"
    );
    assert!(
        !out.effects
            .iter()
            .any(|e| matches!(e, EntityEffect::Send { .. } | EntityEffect::Respond { .. })),
        "passed on: {:?}",
        out.effects
    );
    assert!(cell.record.released.is_empty());

    // In the usual order the release unlocks, and nothing is remembered.
    cell.run(now, vec![lock("m3", &[a.clone(), b.clone(), c])]);
    assert!(cell.record.lock.is_some());
    cell.run(now, vec![release("m4")]);
    assert!(cell.record.lock.is_none());
    assert!(cell.record.released.is_empty());

    // A remembered release is forgotten after a while.
    cell.run(
        now,
        vec![message(
            "m5",
            EntityRequest::Release {
                id: "other".into(),
                owner: owner().instance_id,
            },
        )],
    );
    let later = now.saturating_add(SUSPECT_RETENTION);
    cell.run(later, vec![message("m6", EntityRequest::Wake)]);
    assert!(cell.record.released.is_empty());
}

#[test]
fn a_release_withdraws_its_lock_request_waiting_behind_another_section() {
    let a = EntityId::new("Cell", "a").unwrap();
    let b = EntityId::new("Cell", "b").unwrap();
    let now = Timestamp::from_millis(1_700_000_000_000);
    let reg = Registry::new();
    let mut cell = EntityCell::new(&reg, a.clone());
    let other = Caller {
        instance_id: InstanceId::new("other").unwrap(),
        execution_id: ExecutionId::new("x").unwrap(),
    };
    let held = message(
        "m1",
        EntityRequest::Lock {
            id: "other-section".into(),
            owner: other.clone(),
            lockset: vec![a.clone()],
            position: 0,
        },
    );
    let mut ours = lock("m2", &[a.clone(), b]);
    if let EntityRequest::Lock { position, .. } = &mut ours.request {
        *position = 0;
    }
    cell.run(now, vec![held, ours]);
    assert_eq!(
        cell.record.queue.len(),
        1,
        "ours waits behind the other section"
    );
    cell.run(now, vec![release("m3")]);
    assert!(cell.record.queue.is_empty(), "withdrawn, not queued behind");
    // When the other section ends, nothing of ours is granted or passed on.
    let end = message(
        "m4",
        EntityRequest::Release {
            id: "other-section".into(),
            owner: other.instance_id,
        },
    );
    let out = cell.run(now, vec![end]);
    assert!(cell.record.lock.is_none());
    assert!(out.effects.is_empty(), "{:?}", out.effects);
}
