//! Checkpoints queued at the same time commit in one transaction (group commit), and a
//! checkpoint refused by its guard in such a batch is refused alone: the others commit. Run
//! with `scripts/with-postgres.sh cargo test -p taskhub-postgres --test group_commit`.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

mod common;

use std::time::Duration;

use taskhub_core::{EventKind, ExecutionId, HistoryEvent, InstanceId, Payload, Timestamp};
use taskhub_storage::{
    CheckpointRequest, CheckpointStore, HistoryStore, HistoryWrite, LeaseFence, NewQueueMessage,
    OutboundMessage, PartitionRow, PartitionStore, QueueName, StorageError,
};

fn request(instance: &str, epoch: u64) -> CheckpointRequest {
    CheckpointRequest {
        instance_id: InstanceId::new(instance).unwrap(),
        fence: Some(LeaseFence {
            partition: 0,
            epoch,
        }),
        history: Some(HistoryWrite {
            execution_id: ExecutionId::new("e1").unwrap(),
            expected: None,
            new_execution: true,
            events: vec![HistoryEvent::new(
                Timestamp::from_millis(1),
                EventKind::EventRaised {
                    name: "x".into(),
                    input: Payload::from_json("null").unwrap(),
                },
            )],
        }),
        instance: None,
        outbound: vec![OutboundMessage::new(
            QueueName::WorkItems,
            NewQueueMessage {
                body: instance.to_owned(),
                delay: Duration::ZERO,
            },
        )],
        consumed: Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_checkpoints_share_transactions_and_a_stale_one_is_refused_alone() {
    let store = common::fresh_store(taskhub_storage::conformance::start_clock()).await;
    store
        .create_hub(1, Timestamp::from_millis(1))
        .await
        .unwrap();
    let row = store.list_partitions().await.unwrap().remove(0);
    let leased = PartitionRow {
        owner: Some("w".into()),
        epoch: 1,
        ..row.clone()
    };
    store
        .put_partition(&leased, row.etag.as_ref())
        .await
        .unwrap();

    // Round 1: every checkpoint current.
    let before = store.writer_stats();
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let s = store.clone();
            tokio::spawn(async move { s.checkpoint(request(&format!("a{i}"), 1)).await })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let after = store.writer_stats();
    let (requests, transactions) = (
        after.requests - before.requests,
        after.transactions - before.transactions,
    );
    assert_eq!(requests, 64);
    assert!(
        transactions < requests,
        "{transactions} transactions for {requests} checkpoints"
    );

    // Round 2: one stale checkpoint among current ones.
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let s = store.clone();
            let epoch = if i == 7 { 0 } else { 1 };
            tokio::spawn(async move { s.checkpoint(request(&format!("b{i}"), epoch)).await })
        })
        .collect();
    for (i, t) in tasks.into_iter().enumerate() {
        let got = t.await.unwrap();
        let id = InstanceId::new(format!("b{i}")).unwrap();
        if i == 7 {
            assert!(matches!(got, Err(StorageError::Fenced { .. })), "{got:?}");
            assert!(store.load_history(&id).await.unwrap().is_none());
        } else {
            got.unwrap();
            assert_eq!(
                store.load_history(&id).await.unwrap().unwrap().events.len(),
                1
            );
        }
    }
}
