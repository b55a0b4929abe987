//! Storage operations counted at the HTTP layer: what one activity's result costs.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

use std::time::Duration;

use taskhub_azure::OpKind;
use taskhub_core::{InstanceId, OrchestrationStatus, Payload, Timestamp};
use taskhub_storage::{
    CheckpointRequest, CheckpointStore, Expect, InstanceRow, NewQueueMessage, QueueName,
    QueueStore, SystemClock,
};

#[tokio::test]
async fn an_activity_result_costs_one_put_and_one_delete_and_no_table_read() {
    let store =
        common::create_store(common::account(), std::sync::Arc::new(SystemClock::new())).await;
    store
        .enqueue(QueueName::WorkItems, vec![msg("work")])
        .await
        .unwrap();
    // Queues are created on first send: create the reply queue outside the count.
    store
        .enqueue(QueueName::Control(0), vec![msg("first")])
        .await
        .unwrap();
    let got = store
        .dequeue(QueueName::WorkItems, 1, Duration::from_secs(30))
        .await
        .unwrap();
    let receipt = got[0].receipt.clone();
    let before = store.op_counts();
    let outcome = store
        .checkpoint(CheckpointRequest {
            instance_id: InstanceId::new("activity-owner").unwrap(),
            fence: None,
            history: None,
            instance: None,
            outbound: vec![taskhub_storage::OutboundMessage {
                claim: None,
                queue: QueueName::Control(0),
                message: msg("result"),
            }],
            consumed: vec![(QueueName::WorkItems, receipt)],
        })
        .await
        .unwrap();
    let spent = store.op_counts().since(&before);
    assert_eq!(outcome.history_etag, None);
    assert_eq!(spent.get(OpKind::QueuePut), 1, "{spent:?}");
    assert_eq!(spent.get(OpKind::QueueDelete), 1, "{spent:?}");
    assert_eq!(
        spent.get(OpKind::TableRead),
        0,
        "no sentinel read: {spent:?}"
    );
    assert_eq!(spent.total(), 2, "{spent:?}");
    store.delete_hub().await.unwrap();
}

/// A client start (a checkpoint with the new instance row and its first message, no history)
/// costs the row write and the message, and no read of the history sentinel: nobody uses
/// the history ETag of a checkpoint that wrote no history (the runtime keeps the ETag it
/// has when the outcome carries none).
#[tokio::test]
async fn a_history_less_checkpoint_reads_no_sentinel() {
    let store =
        common::create_store(common::account(), std::sync::Arc::new(SystemClock::new())).await;
    store
        .enqueue(QueueName::Control(0), vec![msg("create the queue")])
        .await
        .unwrap();
    let id = InstanceId::new("started").unwrap();
    let row = InstanceRow {
        input: Payload::from_json("1".to_owned()).unwrap(),
        ..common::instance_row(
            &id,
            "Orch",
            OrchestrationStatus::Pending,
            Timestamp::from_millis(1),
        )
    };
    let before = store.op_counts();
    let outcome = store
        .checkpoint(CheckpointRequest {
            instance_id: id.clone(),
            fence: None,
            history: None,
            instance: Some((row, Expect::Absent)),
            outbound: vec![taskhub_storage::OutboundMessage {
                claim: None,
                queue: QueueName::Control(0),
                message: msg("ExecutionStarted"),
            }],
            consumed: Vec::new(),
        })
        .await
        .unwrap();
    let spent = store.op_counts().since(&before);
    assert!(outcome.instance_etag.is_some());
    assert_eq!(
        spent.get(OpKind::TableRead),
        0,
        "no sentinel read: {spent:?}"
    );
    assert_eq!(spent.total(), 2, "the row and the message: {spent:?}");
    store.delete_hub().await.unwrap();
}

fn msg(body: &str) -> NewQueueMessage {
    NewQueueMessage {
        body: body.to_owned(),
        delay: Duration::ZERO,
    }
}
