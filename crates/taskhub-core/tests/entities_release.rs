//! A release that reaches an entity before the lock request it releases (the owner gave the
//! request up while another entity of the lock set was passing it on) is remembered: the
//! request is ignored when it comes, so the entity is not locked for nobody.
#![allow(clippy::unwrap_used, reason = "test code: a panic is a failed test")]

use taskhub_core::entity::{
    run_batch, BatchMessage, Caller, EntityEffect, EntityRecord, EntityRequest, SUSPECT_RETENTION,
};
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
    let reg = Registry::new();
    let a = EntityId::new("Cell", "a").unwrap();
    let b = EntityId::new("Cell", "b").unwrap();
    let c = EntityId::new("Cell", "c").unwrap();
    let now = Timestamp::from_millis(1_700_000_000_000);
    let mut state = None;
    let mut record = EntityRecord::default();

    run_batch(&reg, &b, now, &mut state, &mut record, vec![release("m1")]);
    assert_eq!(record.released.len(), 1, "remembered");
    let out = run_batch(
        &reg,
        &b,
        now,
        &mut state,
        &mut record,
        vec![lock("m2", &[a.clone(), b.clone(), c.clone()])],
    );
    assert!(
        record.lock.is_none(),
        "locked for a request its owner gave up"
    );
    assert!(
        !out.effects
            .iter()
            .any(|e| matches!(e, EntityEffect::Send { .. } | EntityEffect::Respond { .. })),
        "passed on: {:?}",
        out.effects
    );
    assert!(record.released.is_empty());

    // In the usual order the release unlocks, and nothing is remembered.
    run_batch(
        &reg,
        &b,
        now,
        &mut state,
        &mut record,
        vec![lock("m3", &[a.clone(), b.clone(), c])],
    );
    assert!(record.lock.is_some());
    run_batch(&reg, &b, now, &mut state, &mut record, vec![release("m4")]);
    assert!(record.lock.is_none());
    assert!(record.released.is_empty());

    // A remembered release is forgotten after a while.
    run_batch(
        &reg,
        &b,
        now,
        &mut state,
        &mut record,
        vec![message(
            "m5",
            EntityRequest::Release {
                id: "other".into(),
                owner: owner().instance_id,
            },
        )],
    );
    let later = now.saturating_add(SUSPECT_RETENTION);
    run_batch(
        &reg,
        &b,
        later,
        &mut state,
        &mut record,
        vec![message("m6", EntityRequest::Wake)],
    );
    assert!(record.released.is_empty());
}

#[test]
fn a_release_withdraws_its_lock_request_waiting_behind_another_section() {
    let reg = Registry::new();
    let a = EntityId::new("Cell", "a").unwrap();
    let b = EntityId::new("Cell", "b").unwrap();
    let now = Timestamp::from_millis(1_700_000_000_000);
    let mut state = None;
    let mut record = EntityRecord::default();
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
    run_batch(&reg, &a, now, &mut state, &mut record, vec![held, ours]);
    assert_eq!(record.queue.len(), 1, "ours waits behind the other section");
    run_batch(&reg, &a, now, &mut state, &mut record, vec![release("m3")]);
    assert!(record.queue.is_empty(), "withdrawn, not queued behind");
    // When the other section ends, nothing of ours is granted or passed on.
    let end = message(
        "m4",
        EntityRequest::Release {
            id: "other-section".into(),
            owner: other.instance_id,
        },
    );
    let out = run_batch(&reg, &a, now, &mut state, &mut record, vec![end]);
    assert!(record.lock.is_none());
    assert!(out.effects.is_empty(), "{:?}", out.effects);
}
