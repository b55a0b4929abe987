//! One sender's requests reach an entity out of order, some twice, in separate batches (as a
//! non-FIFO queue or a given-back message delivers them): the entity applies them in send
//! order, each once. The messages are written to the control queue directly, as an
//! orchestration's turn writes them, so the test decides the order the queue sees.
#![allow(
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    dead_code,
    clippy::unwrap_used,
    reason = "shared test support"
)]

use std::sync::Arc;
use std::time::Duration;

use taskhub::*;
use taskhub_core::entity::{EntityRequest, ENTITY_REQUEST_EVENT};
use taskhub_core::format::encode_message;
use taskhub_core::{Message, SendOrder, Sender};
use taskhub_storage::{NewQueueMessage, QueueName, TaskHubStore};

/// The entity: its state is the list of numbers appended, in the order they were applied.
pub fn log() -> EntityId {
    EntityId::new("Log", "order").unwrap()
}

pub fn registry() -> Registry {
    let mut reg = Registry::new();
    reg.entity("Log", |ctx: &mut EntityContext| {
        let mut seen: Vec<u64> = ctx.get_state_or_default()?;
        seen.push(ctx.input()?);
        ctx.set_state(&seen)?;
        Ok(())
    });
    reg
}

/// Request `n` of the sender execution `exec` (its predecessor: `prev`), as the sender's
/// outbox writes it (the message ID derived from the sender and `n`).
pub fn request(exec: &str, n: u64, prev: Option<u64>, now: Timestamp) -> Message {
    let sender = InstanceId::new("orch-order").unwrap();
    let execution = ExecutionId::new(exec).unwrap();
    let request = EntityRequest::Operation {
        id: format!("req-{n}"),
        op: "append".to_owned(),
        input: Payload::to_payload(&n, "n").unwrap(),
        caller: None,
        at: None,
    };
    Message {
        id: MessageId::derived(&sender, &execution, &format!("send:{n}")),
        target: log().instance_id().clone(),
        execution_id: None,
        sender: Some(Sender {
            instance_id: sender,
            execution_id: execution,
        }),
        episode: 1,
        enqueued_at: now,
        target_partition: Some(0),
        traceparent: None,
        order: Some(SendOrder { n, prev }),
        event: EventKind::EventRaised {
            name: ENTITY_REQUEST_EVENT.to_owned(),
            input: Payload::to_payload(&request, "request").unwrap(),
        },
    }
}

/// Puts `messages` on partition 0's control queue, in this order.
pub async fn put(store: &Arc<dyn TaskHubStore>, messages: &[Message]) {
    let batch = messages
        .iter()
        .map(|m| NewQueueMessage {
            body: encode_message(m),
            delay: Duration::ZERO,
        })
        .collect();
    store.enqueue(QueueName::Control(0), batch).await.unwrap();
}

pub async fn state(client: &TaskHubClient) -> Vec<u64> {
    client
        .read_entity_state::<Vec<u64>>(&log())
        .await
        .unwrap()
        .unwrap_or_default()
}

/// Waits until the worker's counters satisfy `done`.
pub async fn until_stats(worker: &WorkerHandle, done: impl Fn(&WorkerStats) -> bool) {
    tokio::time::timeout(Duration::from_secs(30), async {
        while !done(&worker.stats()) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("not reached: {:?}", worker.stats()));
}

pub fn settings() -> Settings {
    Settings {
        partition_count: 1,
        max_queue_polling_interval: Duration::from_millis(200),
        shutdown_timeout: Duration::from_secs(5),
        ..Settings::default()
    }
}

/// The scenario, on any store.
pub async fn out_of_order_and_twice(store: Arc<dyn TaskHubStore>) {
    let hub = TaskHub::open(store.clone(), settings()).await.unwrap();
    let worker = Worker::start(&hub, registry()).await.unwrap();
    let client = hub.client();
    let now = hub.clock().now();
    let chain = |range: std::ops::RangeInclusive<u64>| -> Vec<Message> {
        range
            .map(|n| request("exec-1", n, (n > 1).then(|| n - 1), now))
            .collect()
    };

    // 6..=10 first, newest first, one of them twice: none may run before 1..=5.
    let mut late: Vec<Message> = chain(6..=10).into_iter().rev().collect();
    late.push(late[2].clone());
    put(&store, &late).await;
    // They are consumed (one is a duplicate) and kept in the entity's record, not applied.
    until_stats(&worker, |s| s.discarded >= 1 && s.entity_batches >= 1).await;
    assert_eq!(
        state(&client).await,
        Vec::<u64>::new(),
        "applied before their predecessors"
    );

    // 3..=5, then 1..=2, then 1..=10 again (every one redelivered).
    put(&store, &chain(3..=5)).await;
    put(&store, &chain(1..=2)).await;
    put(&store, &chain(1..=10)).await;
    let want: Vec<u64> = (1..=10).collect();
    // Ten operations; eleven duplicates (one of the early ones, and the whole chain again).
    until_stats(&worker, |s| s.entity_operations >= 10 && s.discarded >= 11).await;
    assert_eq!(state(&client).await, want, "in send order, each once");
    worker.shutdown().await;
}
