//! The pure entity batch (`entity::run_batch`): order, rollback of failed and panicking
//! operations (state and actions), de-duplication by message ID within and across batches,
//! scheduled requests held back, the lock protocol (forwarding along the sorted lock set,
//! waiting requests in order, release), and a client's delete.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::EntityCell;
use taskhub_core::entity::{
    BatchMessage, Caller, EntityEffect, EntityRecord, EntityRequest, EntityResponse,
};
use taskhub_core::*;

fn registry() -> Registry {
    let mut r = Registry::new();
    r.entity("Log", |ctx: &mut EntityContext| {
        let mut lines: Vec<String> = ctx.get_state_or_default()?;
        let line: String = ctx.input()?;
        lines.push(line.clone());
        ctx.set_state(&lines)?;
        ctx.signal_entity(&EntityId::new("Log", "mirror")?, "append", &line)?;
        match ctx.operation_name() {
            "fail" => Err(EntityError::new("refused")),
            "panic" => panic!("boom"),
            _ => Ok(lines.len()),
        }
    });
    r
}

fn log() -> EntityId {
    EntityId::new("Log", "a").unwrap()
}

fn caller(name: &str) -> Caller {
    Caller {
        instance_id: InstanceId::new(name).unwrap(),
        execution_id: ExecutionId::new("e1").unwrap(),
    }
}

fn op(id: &str, op: &str, line: &str, caller: Option<Caller>) -> BatchMessage {
    BatchMessage {
        message_id: MessageId::from_stored(id),
        sender: caller.as_ref().map(|c| c.instance_id.clone()),
        order: None,
        request: EntityRequest::Operation {
            id: format!("req-{id}"),
            op: op.to_owned(),
            input: Payload::to_payload(line, "line").unwrap(),
            caller,
            at: None,
        },
    }
}

fn lines(state: &Option<Payload>) -> Vec<String> {
    state
        .as_ref()
        .map(|s| s.parse("state").unwrap())
        .unwrap_or_default()
}

fn responses(effects: &[EntityEffect]) -> Vec<(String, EntityResponse)> {
    effects
        .iter()
        .filter_map(EntityEffect::response)
        .map(|(id, response)| (id.to_owned(), response.clone()))
        .collect()
}

fn signals(effects: &[EntityEffect]) -> usize {
    effects
        .iter()
        .filter(|e| matches!(e, EntityEffect::Send { .. }))
        .count()
}

const NOW: Timestamp = Timestamp::from_millis(1_000_000);

#[test]
fn operations_run_in_order_and_failures_roll_back_state_and_actions() {
    let reg = registry();
    let mut cell = EntityCell::new(&reg, log());
    let out = cell.run(
        NOW,
        vec![
            op("1", "append", "one", None),
            op("2", "fail", "two", Some(caller("o"))),
            op("3", "panic", "three", Some(caller("o"))),
            op("4", "append", "four", Some(caller("o"))),
        ],
    );
    assert_eq!(lines(&cell.state), ["one", "four"]);
    assert_eq!((out.operations, out.failed), (4, 2));
    assert_eq!(
        signals(&out.effects),
        2,
        "the failed operations' signals are dropped"
    );
    let answers = responses(&out.effects);
    assert!(
        matches!(&answers[0], (id, EntityResponse::Failed { failure }) if id == "req-2" && failure.message == "refused")
    );
    assert!(
        matches!(&answers[1], (id, EntityResponse::Failed { failure }) if id == "req-3" && failure.error_type == "Panic")
    );
    assert!(matches!(&answers[2], (id, EntityResponse::Ok { .. }) if id == "req-4"));
}

#[test]
fn a_message_is_applied_once_within_and_across_batches() {
    let reg = registry();
    let mut cell = EntityCell::new(&reg, log());
    let first = cell.run(
        NOW,
        vec![
            op("1", "append", "one", None),
            op("1", "append", "one", None),
        ],
    );
    assert_eq!((first.operations, first.duplicates), (1, 1));
    let again = cell.run(
        NOW,
        vec![
            op("1", "append", "one", None),
            op("2", "append", "two", None),
        ],
    );
    assert_eq!((again.operations, again.duplicates), (1, 1));
    assert_eq!(lines(&cell.state), ["one", "two"]);
}

#[test]
fn a_scheduled_request_is_held_back_until_due() {
    let reg = registry();
    let mut cell = EntityCell::new(&reg, log());
    let mut later = op("1", "append", "later", None);
    if let EntityRequest::Operation { at, .. } = &mut later.request {
        *at = Some(NOW.saturating_add(std::time::Duration::from_secs(60)));
    }
    let out = cell.run(NOW, vec![later.clone()]);
    assert_eq!(out.operations, 0);
    assert!(
        matches!(&out.effects[..], [EntityEffect::Defer { message_id, .. }] if message_id.as_str() == "1")
    );
    assert!(
        cell.record.recent.is_empty(),
        "not remembered: its copy must run"
    );
    let due = NOW.saturating_add(std::time::Duration::from_secs(60));
    let out = cell.run(due, vec![later]);
    assert_eq!(out.operations, 1);
    assert_eq!(lines(&cell.state), ["later"]);
}

#[test]
fn locks_forward_in_order_queue_others_and_release() {
    let reg = registry();
    let b = EntityId::new("Log", "b").unwrap();
    let lockset = vec![log(), b.clone()];
    let lock = |id: &str, owner: &str, position: usize| BatchMessage {
        message_id: MessageId::from_stored(id),
        sender: Some(InstanceId::new(owner).unwrap()),
        order: None,
        request: EntityRequest::Lock {
            id: format!("lock-{owner}"),
            owner: caller(owner),
            lockset: lockset.clone(),
            position,
        },
    };
    let release = |id: &str, owner: &str| BatchMessage {
        message_id: MessageId::from_stored(id),
        sender: Some(InstanceId::new(owner).unwrap()),
        order: None,
        request: EntityRequest::Release {
            id: format!("lock-{owner}"),
            owner: InstanceId::new(owner).unwrap(),
        },
    };
    let mut cell = EntityCell::new(&reg, log());
    let out = cell.run(
        NOW,
        vec![
            lock("l1", "x", 0),
            op("1", "append", "from y", Some(caller("y"))),
            lock("l2", "z", 0),
            op("2", "append", "from y again", Some(caller("y"))),
            op("3", "append", "from x", Some(caller("x"))),
        ],
    );
    // Position 0 of [a, b]: locked for x, the request goes on to b.
    assert!(out.effects.iter().any(|e| matches!(e,
        EntityEffect::Send { target, request: EntityRequest::Lock { position: 1, .. }, .. } if *target == b)));
    assert_eq!(
        cell.record
            .lock
            .as_ref()
            .unwrap()
            .owner
            .instance_id
            .as_str(),
        "x"
    );
    assert_eq!(lines(&cell.state), ["from x"], "only the holder runs");
    assert_eq!(cell.record.queue.len(), 3);

    // x releases: the waiting requests run in arrival order: y's first, then z's lock takes
    // the entity, and y's second waits behind z's section.
    let out = cell.run(NOW, vec![release("r1", "x")]);
    assert_eq!(lines(&cell.state), ["from x", "from y"]);
    assert_eq!(
        cell.record
            .lock
            .as_ref()
            .unwrap()
            .owner
            .instance_id
            .as_str(),
        "z"
    );
    assert_eq!(cell.record.queue.len(), 1);
    assert_eq!(responses(&out.effects).len(), 1);
    // A release by someone else changes nothing; z's release lets y's second run.
    cell.run(NOW, vec![release("r2", "y")]);
    assert_eq!(cell.record.queue.len(), 2, "y's release waits too");
    cell.run(NOW, vec![release("r3", "z")]);
    assert_eq!(lines(&cell.state), ["from x", "from y", "from y again"]);
    assert!(cell.record.lock.is_none() && cell.record.queue.is_empty());

    // The last entity of a lock set answers the owner.
    let mut cell_b = EntityCell::new(&reg, b.clone());
    let out = cell_b.run(NOW, vec![lock("l3", "x", 1)]);
    assert!(
        matches!(&responses(&out.effects)[..], [(id, EntityResponse::Locked)] if id == "lock-x")
    );
}

#[test]
fn a_clients_delete_removes_the_state() {
    let reg = registry();
    let mut cell = EntityCell::new(&reg, log());
    cell.run(
        NOW,
        vec![
            op("1", "append", "one", None),
            BatchMessage {
                message_id: MessageId::from_stored("2"),
                sender: None,
                order: None,
                request: EntityRequest::DeleteState,
            },
        ],
    );
    assert!(cell.state.is_none());
    assert!(cell.record.is_idle(Timestamp::from_millis(0)));
}

/// The stored forms (requests on the queues, the record in the instance row) are pinned: a
/// change that breaks reading what an older build wrote fails here.
#[test]
fn stored_entity_formats_are_pinned() {
    let request = r#"{"kind":"operation","id":"r1","op":"add","input":"5","caller":{"instance_id":"o","execution_id":"e1"},"at":1000}"#;
    let parsed: EntityRequest = serde_json::from_str(request).unwrap();
    assert_eq!(
        parsed,
        EntityRequest::Operation {
            id: "r1".into(),
            op: "add".into(),
            input: Payload::from_json("5").unwrap(),
            caller: Some(caller("o")),
            at: Some(Timestamp::from_millis(1000)),
        }
    );
    assert_eq!(serde_json::to_string(&parsed).unwrap(), request);
    for text in [
        r#"{"kind":"lock","id":"l","owner":{"instance_id":"o","execution_id":"e1"},"lockset":["@Log@a","@Log@b"],"position":1}"#,
        r#"{"kind":"release","id":"l","owner":"o"}"#,
        r#"{"kind":"delete_state"}"#,
    ] {
        let r: EntityRequest = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&r).unwrap(), text);
    }
    for text in [
        r#"{"kind":"ok","output":"3"}"#,
        r#"{"kind":"failed","failure":{"error_type":"T","message":"m"}}"#,
        r#"{"kind":"locked"}"#,
    ] {
        let r: EntityResponse = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&r).unwrap(), text);
    }
    let record = r#"{"recent":["m1","m2"],"lock":{"owner":{"instance_id":"o","execution_id":"e1"},"request_id":"l"},"queue":[{"message_id":"m3","sender":"p","request":{"kind":"delete_state"}}],"outbox":[{"partition":2,"body":"b","delay_ms":5}]}"#;
    let r: EntityRecord = serde_json::from_str(record).unwrap();
    assert_eq!(serde_json::to_string(&r).unwrap(), record);
    assert_eq!(
        serde_json::to_string(&EntityRecord::default()).unwrap(),
        "{}"
    );
}
