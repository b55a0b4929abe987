//! Azure checkpoint step 5 (clearing the pending outbox) failing is no longer silent: it is
//! logged, counted (`AzureStore::outbox_clear_failures`), and the outbox stays pending for the
//! instance's next loader to re-send; the next checkpoint replaces it. Run with
//! `scripts/with-azurite.sh cargo test -p taskhub --test azure outbox_clear::`.

use crate::backends;
use std::time::Duration;

use taskhub::*;
use taskhub_storage::{
    CheckpointRequest, CheckpointStore, HistoryStore, HistoryWrite, NewQueueMessage,
    OutboundMessage, PartitionStore, QueueName,
};

fn request(expected: Option<taskhub_storage::ETag>, seq: u64, body: &str) -> CheckpointRequest {
    CheckpointRequest {
        instance_id: InstanceId::new("outboxed").unwrap(),
        fence: None,
        history: Some(HistoryWrite {
            execution_id: ExecutionId::new("e1").unwrap(),
            new_execution: expected.is_none(),
            expected,
            events: vec![HistoryEvent::new(
                Timestamp::from_millis(1_700_000_000_000 + seq),
                EventKind::EventRaised {
                    name: format!("e{seq}"),
                    input: Payload::from_json("1".to_owned()).unwrap(),
                },
            )],
        }),
        instance: None,
        outbound: vec![OutboundMessage {
            claim: None,
            queue: QueueName::WorkItems,
            message: NewQueueMessage {
                body: body.to_owned(),
                delay: Duration::ZERO,
            },
        }],
        consumed: Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_outbox_clear_is_counted_and_left_for_the_next_loader() {
    let store = backends::azure_store(&backends::unique_hub_name()).await;
    store
        .create_hub(1, Timestamp::from_millis(1_700_000_000_000))
        .await
        .unwrap();
    let id = InstanceId::new("outboxed").unwrap();

    store.fail_next_outbox_clears(1);
    let outcome = store.checkpoint(request(None, 0, "first")).await.unwrap();
    assert_eq!(
        store.outbox_clear_failures(),
        1,
        "the failed step 5 is counted"
    );
    let loaded = store.load_history(&id).await.unwrap().unwrap();
    assert_eq!(
        loaded.pending_outbox.len(),
        1,
        "the outbox stays pending: the next loader re-sends it"
    );
    assert_eq!(loaded.pending_outbox[0].message.body, "first");
    assert_eq!(
        outcome.history_etag.as_ref(),
        Some(&loaded.etag),
        "the checkpoint stands under step 1's ETag"
    );

    // The writer's next checkpoint (from the ETag it holds) commits and clears its own outbox.
    store
        .checkpoint(request(Some(loaded.etag.clone()), 1, "second"))
        .await
        .unwrap();
    assert_eq!(store.outbox_clear_failures(), 1);
    let after = store.load_history(&id).await.unwrap().unwrap();
    assert!(
        after.pending_outbox.is_empty(),
        "{:?}",
        after.pending_outbox
    );
    assert_eq!(after.events.len(), 2);
}
