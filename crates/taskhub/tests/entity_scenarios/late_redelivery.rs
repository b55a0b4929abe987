//! Exactly once on a backend without atomic checkpoints (memory here; Azure alike). Deleting a
//! batch's messages is its checkpoint's last step: a worker that dies just before it leaves
//! them in the queue, and they come back once their visibility timeout runs out — possibly
//! after the entity, loaded by another worker, applied far more messages than it remembers
//! IDs of (`RECENT_MESSAGE_IDS`). Such a message must still be skipped
//! (`EntityRecord::suspect`). The test plays that: a message applied by one worker, a second
//! worker that loads the entity and applies many more, then the first message delivered again.

use std::sync::Arc;
use std::time::Duration;

use crate::common::stores::memory_store;
use crate::common::*;
use taskhub::*;
use taskhub_core::entity::{EntityRequest, ENTITY_REQUEST_EVENT, RECENT_MESSAGE_IDS};
use taskhub_core::format::encode_message;
use taskhub_core::Message;
use taskhub_storage::{NewQueueMessage, QueueName, TaskHubStore};

fn counter() -> EntityId {
    EntityId::new("Counter", "late").unwrap()
}

fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.entity("Counter", |ctx: &mut EntityContext| {
        let n: u64 = ctx.get_state_or_default()?;
        ctx.set_state(&(n + 1))?;
        Ok(())
    });
    reg
}

async fn count(client: &TaskHubClient) -> u64 {
    client
        .read_entity_state::<u64>(&counter())
        .await
        .unwrap()
        .unwrap_or(0)
}

async fn until(worker: &WorkerHandle, done: impl Fn(&WorkerStats) -> bool) {
    wait::until(
        "the worker's counts",
        || done(&worker.stats()),
        || worker.stats(),
    )
    .await;
}

/// A client's signal (no sender, so no per-sender order: only its ID tells a repeat).
fn signal(id: &MessageId, now: Timestamp) -> NewQueueMessage {
    let request = EntityRequest::Operation {
        id: "op".to_owned(),
        op: "add".to_owned(),
        input: Payload::to_payload(&(), "input").unwrap(),
        caller: None,
        at: None,
    };
    let mut m = Message::from_client(
        counter().instance_id().clone(),
        EventKind::EventRaised {
            name: ENTITY_REQUEST_EVENT.to_owned(),
            input: Payload::to_payload(&request, "request").unwrap(),
        },
        now,
    );
    m.id = id.clone();
    NewQueueMessage {
        body: encode_message(&m),
        delay: Duration::ZERO,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_coming_back_after_many_others_is_applied_once() {
    let store: Arc<dyn TaskHubStore> = memory_store();
    assert!(!store.atomic_checkpoints());
    let settings = Settings {
        partition_count: 1,
        ..fast_settings()
    };
    let hub = TaskHub::open(store.clone(), settings).await.unwrap();
    let client = hub.client();
    let first = MessageId::random();
    let queue = QueueName::Control(0);

    let worker = Worker::start(&hub, registry()).await.unwrap();
    store
        .enqueue(queue, vec![signal(&first, hub.clock().now())])
        .await
        .unwrap();
    until(&worker, |s| s.entity_operations == 1).await;
    worker.shutdown().await;

    // Another worker loads the entity and applies many more, one batch each.
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let more = 2 * RECENT_MESSAGE_IDS as u64;
    for i in 1..=more {
        client.signal_entity(&counter(), "add", &()).await.unwrap();
        until(&worker, |s| s.entity_operations == i).await;
    }
    assert_eq!(count(&client).await, 1 + more);

    // The first message comes back.
    store
        .enqueue(queue, vec![signal(&first, hub.clock().now())])
        .await
        .unwrap();
    until(&worker, |s| s.discarded >= 1 || s.entity_operations > more).await;
    assert_eq!(count(&client).await, 1 + more, "applied twice");
    worker.shutdown().await;
}
