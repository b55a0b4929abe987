//! How a batch numbers what an entity sends (`taskhub_core::entity::order`): every request to
//! another entity gets the next number of this entity's incarnation and names its previous
//! one to the same target; a scheduled signal gets none (it runs at its time, after later
//! ones); and a batch run again numbers the same way.
#![allow(clippy::unwrap_used, reason = "test code: a panic is a failed test")]

use taskhub_core::entity::{run_batch, BatchMessage, EntityEffect, EntityRecord, EntityRequest};
use taskhub_core::*;

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.entity("Fan", |ctx: &mut EntityContext| {
        let a = EntityId::new("Sink", "a")?;
        let b = EntityId::new("Sink", "b")?;
        ctx.signal_entity(&a, "x", &1)?;
        ctx.signal_entity(&b, "x", &2)?;
        ctx.signal_entity(&a, "x", &3)?;
        ctx.signal_entity_at(
            &a,
            "later",
            &4,
            ctx.now() + std::time::Duration::from_secs(60),
        )?;
        Ok(())
    });
    reg
}

fn op(id: &str) -> BatchMessage {
    BatchMessage {
        message_id: MessageId::from_stored(id),
        sender: None,
        request: EntityRequest::Operation {
            id: format!("req-{id}"),
            op: "go".into(),
            input: Payload::to_payload(&(), "input").unwrap(),
            caller: None,
            at: None,
        },
        order: None,
    }
}

fn orders(effects: &[EntityEffect]) -> Vec<Option<SendOrder>> {
    effects
        .iter()
        .filter_map(|e| match e {
            EntityEffect::Send { order, .. } => Some(*order),
            _ => None,
        })
        .collect()
}

#[test]
fn an_entity_numbers_its_requests_per_incarnation() {
    let reg = registry();
    let fan = EntityId::new("Fan", "1").unwrap();
    let now = Timestamp::from_millis(1_700_000_000_000);
    let mut state = None;
    let mut record = EntityRecord::default();
    let first = run_batch(&reg, &fan, now, &mut state, &mut record, vec![op("m1")]);
    let o = |n, prev| Some(SendOrder { n, prev });
    assert_eq!(
        orders(&first.effects),
        vec![o(1, None), o(2, None), o(3, Some(1)), None]
    );
    let epoch = record.outgoing.epoch.clone();
    assert!(epoch.is_some(), "the incarnation's epoch");

    // The next batch goes on counting, naming the previous message to each target.
    let mut again = record.clone();
    let second = run_batch(&reg, &fan, now, &mut state, &mut record, vec![op("m2")]);
    assert_eq!(
        orders(&second.effects),
        vec![o(4, Some(3)), o(5, Some(2)), o(6, Some(4)), None]
    );
    assert_eq!(record.outgoing.epoch, epoch, "one epoch per incarnation");

    // Run again from the same record (a batch whose commit failed): the same numbers.
    let rerun = run_batch(&reg, &fan, now, &mut state, &mut again, vec![op("m2")]);
    assert_eq!(orders(&rerun.effects), orders(&second.effects));
}
