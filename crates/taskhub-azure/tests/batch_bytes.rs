//! Table batches are split by body size (4 MiB), not only by count (100 operations): a
//! checkpoint whose history rows sum past 4 MiB lands completely. Run with Azurite:
//! `scripts/with-azurite.sh cargo test -p taskhub-azure --test batch_bytes`.

#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use std::sync::Arc;

use taskhub_azure::OpKind;
use taskhub_core::format::encode_event;
use taskhub_core::{EventKind, ExecutionId, HistoryEvent, InstanceId, Payload, Timestamp};
use taskhub_storage::{
    CheckpointRequest, CheckpointStore, HistoryStore, HistoryWrite, ManualClock,
};

const START: Timestamp = Timestamp::from_millis(1_700_000_000_000);
/// The service's limit on one batch's request body.
const FOUR_MIB: usize = 4 * 1024 * 1024;

/// An event whose encoded form is just under the inline-property limit (30,000 bytes) and
/// made of quotes, so its table entity (JSON in JSON) is about twice that.
fn quoted(i: usize) -> HistoryEvent {
    let make = |k: usize| {
        HistoryEvent::new(
            Timestamp::from_millis(START.as_millis() + i as u64),
            EventKind::EventRaised {
                name: format!("e{i}"),
                input: Payload::from_json(format!("\"{}\"", "\\\"".repeat(k))).unwrap(),
            },
        )
    };
    let mut k = 1000;
    while encode_event(&make(k + 500)).len() < 29_900 {
        k += 500;
    }
    make(k)
}

fn write(instance: &str, events: Vec<HistoryEvent>) -> CheckpointRequest {
    CheckpointRequest {
        instance_id: InstanceId::new(instance).unwrap(),
        fence: None,
        history: Some(HistoryWrite {
            execution_id: ExecutionId::new("e1").unwrap(),
            expected: None,
            new_execution: true,
            events,
        }),
        instance: None,
        outbound: Vec::new(),
        consumed: Vec::new(),
    }
}

/// 90 events (under the 100-operation limit) whose rows sum past 4 MiB, then 150 whose rows
/// need several batches ahead of the commit: each checkpoint is split into batches of at
/// most 4 MiB and loads back exactly; the history table holds nothing but these rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_over_four_mib_of_rows_lands_completely() {
    let s = common::create_store(common::account(), Arc::new(ManualClock::new(START))).await;
    let event = quoted(0);
    let entity_bytes = serde_json::to_string(&encode_event(&event)).unwrap().len();
    assert!(
        entity_bytes * 90 > FOUR_MIB + FOUR_MIB / 8,
        "the rows must sum well past 4 MiB: {entity_bytes} bytes each"
    );

    for (name, n) in [("ninety", 90), ("many", 150)] {
        let events: Vec<HistoryEvent> = (0..n).map(quoted).collect();
        let before = s.op_counts();
        s.checkpoint(write(name, events.clone()))
            .await
            .unwrap_or_else(|e| panic!("checkpoint of {n} events: {e}"));
        let batches = s.op_counts().since(&before).get(OpKind::TableBatch);
        let needed = (entity_bytes * n).div_ceil(FOUR_MIB) as u64;
        assert!(
            batches >= needed,
            "{n} events of {entity_bytes} bytes need at least {needed} batches of at most 4 MiB, \
             {batches} were sent"
        );
        let loaded = s
            .load_history(&InstanceId::new(name).unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(loaded.events.len(), n);
        assert!(
            loaded.events == events,
            "{name}: the events load back exactly"
        );
        assert!(loaded.pending_outbox.is_empty());
    }
    // Purging deletes every row (its deletes are split the same way).
    let many = InstanceId::new("many").unwrap();
    s.delete_history(&many).await.unwrap();
    assert!(s.load_history(&many).await.unwrap().is_none());
}
